"""verl's filler rows (``tag["is_padding"]``: one ``pad...`` uid, zero reward, zero response mask, appended by
``verl/trainer/ppo/padding_utils.py`` to make the batch divisible) enter no statistic of this package: the real rows'
advantages and figures equal those of the batch without them, and the filler rows get zero advantages."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import verl
from rlvr_recipes.advantage.diagnostics import ACRTracker
from rlvr_recipes.trainer.extension import advantage_step, advantage_step_real_rows, padding_rows

from tests.helpers import algo, batch

#: 8 groups of 4: seven mixed, one all-zero (collapsed): AVSPO's batch ACR = 1/8
GROUPS = [[1, 0, 0, 0], [1, 1, 0, 0], [0, 1, 0, 1], [1, 1, 1, 0], [0, 0, 1, 0], [1, 0, 1, 0], [0, 1, 1, 1],
          [0, 0, 0, 0]]


def with_padding(groups, pads: int, extra_info=None):
    """The batch of ``groups`` followed by ``pads`` filler rows as verl builds them; ``(data, is_padding)``."""
    tlr, mask, uid = batch(groups)
    n = len(uid)
    tlr = torch.cat([tlr, torch.zeros(pads, tlr.shape[1])])
    mask = torch.cat([mask, torch.zeros(pads, mask.shape[1])])
    uid = np.concatenate([uid, np.array(["pad0123abcd"] * pads, dtype=object)])
    non_tensors = {"uid": uid}
    if extra_info is not None:
        non_tensors["extra_info"] = np.array(list(extra_info[:n]) + [extra_info[0]] * pads, dtype=object)
    data = verl.DataProto.from_dict(tensors={"token_level_rewards": tlr, "response_mask": mask}, non_tensors=non_tensors)
    tags = [{}] * n + [{"is_padding": True}] * pads
    return data, padding_rows(tags)


def _cfg(name: str, **options):
    cfg = algo(name, **options)
    cfg.adv_estimator = name
    return cfg


def test_avspo_batch_acr_is_not_moved_by_a_filler_row():
    data, pad = with_padding(GROUPS, 1)
    out, m = advantage_step_real_rows(data, pad, _cfg("avspo"), ACRTracker())
    assert m["avspo/acr"] == pytest.approx(1 / 8) and m["acr/acr"] == pytest.approx(1 / 8)
    assert m["training/padding_rows"] == 1.0
    assert torch.equal(out.batch["advantages"][-1], torch.zeros(3))
    naive, _ = with_padding(GROUPS, 1)
    _, m_naive = advantage_step(naive, _cfg("avspo"), ACRTracker())
    assert m_naive["avspo/acr"] == pytest.approx(2 / 9)  # what a filler row did before: a collapsed group of one


def test_agrae_omega_and_real_advantages_unchanged_by_filler_rows():
    plain, _ = with_padding(GROUPS, 0)
    plain, m_plain = advantage_step(plain, _cfg("agrae"), ACRTracker())
    data, pad = with_padding(GROUPS, 3)
    out, m = advantage_step_real_rows(data, pad, _cfg("agrae"), ACRTracker())
    assert m["agrae/omega"] == pytest.approx(m_plain["agrae/omega"]) == pytest.approx(14 / 32)  # 14 correct of 32
    assert torch.equal(out.batch["advantages"][:32], plain.batch["advantages"])
    assert torch.equal(out.batch["returns"][32:], torch.zeros(3, 3))
    naive, _ = with_padding(GROUPS, 3)
    _, m_naive = advantage_step(naive, _cfg("agrae"), ACRTracker())
    assert m_naive["agrae/omega"] == pytest.approx(14 / 35)  # what three filler rows did before


def test_aapo_never_looks_up_reference_rewards_for_filler_rows():
    """More filler rows than cached reference rewards of the prompt they copy (verl takes the first real row as the
    template, extra_info included): the real rows' draw works and the filler rows get no advantage."""
    infos = [{"index": 7, "ref_rewards": [1.0, 0.0, 0.0]}] * 3
    cfg = _cfg("aapo", group_token_norm=False)
    data, pad = with_padding([[1, 0, 0]], 4, extra_info=infos)
    out, _ = advantage_step_real_rows(data, pad, cfg, ACRTracker())
    assert torch.equal(out.batch["advantages"][3:], torch.zeros(4, 3))
    assert torch.isfinite(out.batch["advantages"]).all()
    naive, _ = with_padding([[1, 0, 0]], 4, extra_info=infos)
    with pytest.raises(ValueError, match="cached reference rewards"):
        advantage_step(naive, cfg, ACRTracker())


def test_no_padding_is_the_plain_step():
    data, pad = with_padding(GROUPS, 0)
    assert not pad.any()
    out, m = advantage_step_real_rows(data, pad, algo(None), ACRTracker())
    assert "training/padding_rows" not in m and m["acr/acr"] == pytest.approx(1 / 8)


def multi_turn_batch():
    """Rows keyed ``{uid}_{session}_{index}`` as verl's agent loop keys them. p0: session 0 has two outputs (reward 1,
    then the final one 0), session 1 one output (0). p1: two sessions of one output (1, 0). p2: session 0 has two
    outputs (0, then the final one 1), session 1 one output (0)."""
    keys = ["p0_0_0", "p0_0_1", "p0_1_0", "p1_0_0", "p1_1_0", "p2_0_0", "p2_0_1", "p2_1_0"]
    rewards = [1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0]
    tlr = torch.zeros(8, 3)
    tlr[:, -1] = torch.tensor(rewards)
    mask = torch.ones(8, 3)
    mask[5, 2] = 0.0  # an earlier turn of another length
    uid = np.array([k.split("_")[0] for k in keys], dtype=object)
    data = verl.DataProto.from_dict(tensors={"token_level_rewards": tlr, "response_mask": mask},
                                    non_tensors={"uid": uid})
    return data, keys


def test_a_multi_turn_session_counts_once_as_verls_grpo_does():
    from verl.trainer.ppo.v1.utils import compute_advantage_for_multi_trajectories

    data, keys = multi_turn_batch()
    out, m = advantage_step_real_rows(data, np.zeros(8, dtype=bool), algo(None), ACRTracker(), batch_keys=keys)
    ref, _ = multi_turn_batch()
    ref = compute_advantage_for_multi_trajectories(ref, batch_keys=keys, adv_estimator="grpo", num_repeat=1,
                                                   norm_adv_by_std_in_grpo=True, config=algo(None))
    torch.testing.assert_close(out.batch["advantages"], ref.batch["advantages"])
    # by hand: final outputs p0 = [0, 0] (collapsed), p1 = [1, 0], p2 = [1, 0]: ACR 1/3. p2's earlier turn takes its
    # session's final advantage (1 - 0.5) / std([1, 0]) = 0.5 / 0.7071 on its own two tokens
    assert m["acr/acr"] == pytest.approx(1 / 3) and m["training/earlier_turn_rows"] == 2.0
    assert out.batch["advantages"][5].tolist() == pytest.approx([0.7071, 0.7071, 0.0], abs=1e-4)


def test_every_estimator_counts_a_multi_turn_session_once():
    data, keys = multi_turn_batch()
    _, m = advantage_step_real_rows(data, np.zeros(8, dtype=bool), _cfg("avspo"), ACRTracker(), batch_keys=keys)
    assert m["avspo/acr"] == pytest.approx(1 / 3)  # sessions: p0 collapsed, p1 and p2 mixed
    naive, _ = multi_turn_batch()
    _, m_naive = advantage_step(naive, _cfg("avspo"), ACRTracker())
    assert m_naive["avspo/acr"] == pytest.approx(0.0)  # rows: p0 [1, 0, 0] looked mixed
