"""Two data-parallel ranks (gloo on the CPU, spawned here) with verl's sequence-length balancing, a shuffled row order
and verl's dynamic micro-batches: the advantages, ACR figures and per-group CW-GRPO weights every rank ends up with
equal the single-rank computation on the same batch, and estimator state saved by the two-rank run restores into a
one-rank run with the same next step as an uninterrupted run."""

from __future__ import annotations

import os
import socket

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import verl
from rlvr_recipes.advantage.diagnostics import ACRTracker
from rlvr_recipes.trainer.extension import advantage_step, load_state, save_state

from tests.helpers import algo

#: 6 groups of 4: four mixed, one all-correct, one all-wrong (ACR 2/6)
GROUPS = [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 1], [0, 1, 0, 1], [0, 0, 0, 0], [1, 1, 1, 0]]
LENGTH = 8
WORLD = 2
CASES = [("grpo", {"cw_grpo": {"per_group": True}}), ("avspo", {}), ("agrae", {})]


def make_batch(seed: int = 0) -> "verl.DataProto":
    """The step's batch: varied response lengths, reward on each response's last valid token, old log-probs."""
    g = torch.Generator().manual_seed(seed)
    rewards = [r for grp in GROUPS for r in grp]
    n = len(rewards)
    lengths = torch.randint(2, LENGTH + 1, (n,), generator=g)
    mask = (torch.arange(LENGTH)[None, :] < lengths[:, None]).float()
    tlr = torch.zeros(n, LENGTH)
    tlr[torch.arange(n), lengths - 1] = torch.tensor(rewards, dtype=torch.float32)
    uid = np.array([f"q{j}" for j, grp in enumerate(GROUPS) for _ in grp], dtype=object)
    old = -torch.rand(n, LENGTH, generator=g) * 2
    return verl.DataProto.from_dict(
        tensors={"token_level_rewards": tlr, "response_mask": mask, "attention_mask": mask.long(),
                 "input_ids": torch.zeros(n, LENGTH, dtype=torch.long), "old_log_probs": old},
        non_tensors={"uid": uid, "row": np.arange(n)},
    )


def config(name: str, extra: dict):
    cfg = algo(name)
    for key, value in extra.items():
        cfg[key] = value
    return cfg


def _rank(rank: int, port: int, folder: str, results) -> None:
    from verl.utils.seqlen_balancing import get_seqlen_balanced_partitions, rearrange_micro_batches

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    out = {}
    try:
        for name, extra in CASES:
            data = make_batch()
            perm = torch.randperm(len(data), generator=torch.Generator().manual_seed(7))
            data = data.select_idxs(perm)  # the rows arrive in a shuffled order
            seqlen = data.batch["response_mask"].sum(-1).long().tolist()
            parts = get_seqlen_balanced_partitions(seqlen, k_partitions=WORLD, equal_size=True)  # balance_batch
            mine = data.select_idxs(torch.tensor(sorted(parts[rank])))
            # the advantage step sees the whole step's batch, gathered from the ranks in rank order
            gathered: list = [None] * WORLD
            dist.all_gather_object(gathered, mine)
            whole = verl.DataProto.concat(gathered)
            tracker = ACRTracker()
            whole, metrics = advantage_step(whole, config(name, extra), tracker)
            # each rank takes back its rows and splits them into dynamic micro-batches (use_dynamic_bsz)
            rows = set(mine.non_tensor_batch["row"].tolist())
            keep = [i for i, r in enumerate(whole.non_tensor_batch["row"].tolist()) if r in rows]
            local = whole.select_idxs(torch.tensor(keep))
            # (dp_group=None: verl syncs the micro-batch count on the accelerator device, absent here)
            micro, idx_lists = rearrange_micro_batches(local.batch, max_token_len=2 * LENGTH, dp_group=None)
            adv = torch.zeros(len(whole), LENGTH)
            for mb, idx in zip(micro, idx_lists):
                rows_of_mb = np.asarray(local.non_tensor_batch["row"][list(idx)], dtype=np.int64)
                adv[torch.as_tensor(rows_of_mb)] = mb["advantages"]
            dist.all_reduce(adv)  # every row's advantage from the rank that held it, in the original order
            if rank == 0:
                save_state(os.path.join(folder, name), tracker, global_step=1)
            out[name] = (adv, {k: float(v) for k, v in metrics.items()}, len(micro))
        results[rank] = out
    finally:
        dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory):
    """One spawned pair of gloo ranks runs every case (spawning costs most of the time)."""
    folder = tmp_path_factory.mktemp("state")
    ctx = mp.get_context("spawn")
    manager = ctx.Manager()
    results = manager.dict()
    port = _free_port()
    procs = [ctx.Process(target=_rank, args=(r, port, str(folder), results)) for r in range(WORLD)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(180)
        assert p.exitcode == 0, f"rank process exited with {p.exitcode}"
    out = {rank: results[rank] for rank in range(WORLD)}
    manager.shutdown()
    return out, folder


@pytest.mark.parametrize("name,extra", CASES, ids=[c[0] for c in CASES])
def test_two_ranks_equal_one_rank(name, extra, two_ranks):
    ranks, folder = two_ranks
    expected_data, metrics = advantage_step(make_batch(), config(name, extra), ACRTracker())
    expected = expected_data.batch["advantages"]
    for rank in range(WORLD):
        adv, got, n_micro = ranks[rank][name]
        assert n_micro >= 2  # the dynamic split really made several micro-batches
        torch.testing.assert_close(adv, expected, rtol=0, atol=1e-6)
        for key in ("acr/acr", "acr/effective_acr", "avspo/acr", "agrae/omega", "cw_grpo/weight_mean",
                    "cw_grpo/weight_min", "cw_grpo/weight_max"):
            if key in metrics:
                assert got[key] == pytest.approx(metrics[key], abs=1e-6), key
    assert metrics["acr/acr"] == pytest.approx(2 / 6)
    if name == "grpo":
        assert metrics["cw_grpo/weight_min"] < metrics["cw_grpo/weight_max"]  # the weights are not all one
    # resume on one rank from the state the two-rank run saved: the next step matches an uninterrupted run
    restored = ACRTracker()
    load_state(str(folder / name), restored, global_step=1)
    straight = ACRTracker()
    advantage_step(make_batch(), config(name, extra), straight)
    _, m_restored = advantage_step(make_batch(1), config(name, extra), restored)
    _, m_straight = advantage_step(make_batch(1), config(name, extra), straight)
    assert m_restored == pytest.approx(m_straight)
