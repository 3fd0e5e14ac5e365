"""Collapse diagnostics against hand counts (ACR paper Def. 3.1, Eq. 4; AAPO Fig. 1-2; A-GRAE Eq. 5)."""

import numpy as np
import pytest
import torch

from rlvr_recipes.advantage.core import base_advantage, group_stats
from rlvr_recipes.advantage.diagnostics import ACRTracker, advantage_collapse_rate, batch_diagnostics

# groups: all-correct, all-wrong, mixed, singleton
SCORES = torch.tensor([1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.5])
UID = np.array(["a", "a", "b", "b", "c", "c", "d"], dtype=object)


def test_acr_counts_collapsed_groups_including_singletons():
    assert advantage_collapse_rate(SCORES, UID) == pytest.approx(3 / 4)
    assert advantage_collapse_rate(torch.tensor([0.0, 1e-7, 1.0, 0.0]), np.array([0, 0, 1, 1])) == 0.5


def test_batch_diagnostics_by_hand():
    adv = base_advantage(SCORES, group_stats(SCORES, UID))
    d = batch_diagnostics(SCORES, UID, adv)
    assert d["acr/acr"] == pytest.approx(0.75)
    assert d["acr/all_correct_frac"] == pytest.approx(0.25)
    assert d["acr/all_wrong_frac"] == pytest.approx(0.25)
    assert d["acr/effective_acr"] == pytest.approx(0.75)
    assert d["acr/zero_adv_frac"] == pytest.approx(5 / 7)
    assert d["acr/pos_neg_mass_ratio"] == pytest.approx(1.0)  # Eq. 5: GRPO is symmetric
    assert d["acr/reward_mean"] == pytest.approx(3.5 / 7)


def test_token_level_advantages_and_asymmetric_mass():
    adv = torch.tensor([0.0, 0.0, 0.0, 0.0, 2.0, -0.5, 0.0])
    mask = torch.ones(7, 3)
    mask[4, 2] = 0
    token = adv.unsqueeze(-1) * mask
    d = batch_diagnostics(SCORES, UID, token, mask)
    assert d["acr/pos_neg_mass_ratio"] == pytest.approx(4.0)
    assert d["acr/effective_acr"] == pytest.approx(0.75)


def test_no_advantages_means_no_advantage_figures():
    d = batch_diagnostics(SCORES, UID)
    assert "acr/effective_acr" not in d and d["acr/acr"] == pytest.approx(0.75)


def test_tracker_volatility_and_acr100():
    t = ACRTracker(window=3, early_steps=2)
    t.update(0.5)
    t.update(0.7)
    out = t.update(0.9)
    assert out["acr/volatility"] == pytest.approx(np.std([0.5, 0.7, 0.9]))
    assert out["acr/acr_100"] == pytest.approx(0.6)
    out = t.update(0.1)  # window slides to 0.7, 0.9, 0.1
    assert out["acr/volatility"] == pytest.approx(np.std([0.7, 0.9, 0.1]))
    s = ACRTracker()
    s.load_state_dict(t.state_dict())
    assert s.update(0.3) == t.update(0.3)
