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
