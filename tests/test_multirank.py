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
        tensors={"token_level_rewards": tlr, "response_mask": mask, "attention_mask": mask.clone(), "old_log_probs": old},
        non_tensors={"uid": uid, "row": np.arange(n)},
    )


def config(name: str, extra: dict):
    cfg = algo(name)
    for key, value in extra.items():
        cfg[key] = value
    return cfg


def single_rank(name: str, extra: dict):
    out, metrics = advantage_step(make_batch(), config(name, extra), ACRTracker())
    return out.batch["advantages"], metrics


def _rank(rank: int, port: int, name: str, extra: dict, folder: str, results) -> None:
    from verl.utils.seqlen_balancing import get_seqlen_balanced_partitions, rearrange_micro_batches

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    try:
        data = make_batch()
        perm = torch.randperm(len(data), generator=torch.Generator().manual_seed(7))
        data = data.select_idxs(perm)  # the rows arrive in a shuffled order
        seqlen = data.batch["response_mask"].sum(-1).tolist()
        parts = get_seqlen_balanced_partitions(seqlen, k_partitions=WORLD, equal_size=True)  # trainer.balance_batch
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
        micro, _ = rearrange_micro_batches(local.batch, max_token_len=2 * LENGTH, dp_group=dist.group.WORLD)
        adv = torch.zeros(len(GROUPS) * 4, LENGTH)
        for mb in micro:
            idx = torch.as_tensor([int(local.non_tensor_batch["row"][j]) for j in _positions(local, mb)])
            adv[idx] = mb["advantages"]
        dist.all_reduce(adv)  # every row's advantage from the rank that held it, back in the original order
        if rank == 0:
            save_state(folder, tracker, global_step=1)
        results[rank] = (adv, {k: float(v) for k, v in metrics.items()}, len(micro))
    finally:
        dist.destroy_process_group()


def _positions(local, mb) -> list[int]:
    """Rows of ``local`` that a micro-batch holds (matched on the old log-probs, unique per row here)."""
    old = local.batch["old_log_probs"]
    return [int((old == row).all(-1).nonzero()[0]) for row in mb["old_log_probs"]]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("name,extra", CASES, ids=[c[0] for c in CASES])
def test_two_ranks_equal_one_rank(name, extra, tmp_path):
    expected, metrics = single_rank(name, extra)
    ctx = mp.get_context("spawn")
    manager = ctx.Manager()
    results = manager.dict()
    port = _free_port()
    procs = [ctx.Process(target=_rank, args=(r, port, name, extra, str(tmp_path), results)) for r in range(WORLD)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0, f"rank process exited with {p.exitcode}"
    for rank in range(WORLD):
        adv, got, n_micro = results[rank]
        assert n_micro >= 2  # the dynamic split really made several micro-batches
        torch.testing.assert_close(adv, expected, rtol=0, atol=1e-6)
        for key in ("acr/acr", "acr/effective_acr", "avspo/acr", "agrae/omega", "cw_grpo/weight_mean",
                    "cw_grpo/weight_min", "cw_grpo/weight_max"):
            if key in metrics:
                assert got[key] == pytest.approx(metrics[key], abs=1e-6), key
    assert metrics["acr/acr"] == pytest.approx(2 / 6)
    # resume on one rank from the state the two-rank run saved: the next step matches an uninterrupted run
    restored = ACRTracker()
    load_state(str(tmp_path), restored, global_step=1)
    straight = ACRTracker()
    advantage_step(make_batch(), config(name, extra), straight)
    _, m_restored = advantage_step(make_batch(1), config(name, extra), restored)
    _, m_straight = advantage_step(make_batch(1), config(name, extra), straight)
    assert m_restored == pytest.approx(m_straight)
