"""The shared group-statistics core against hand values and against verl's own GRPO."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import verl  # noqa: F401
from rlvr_recipes.advantage.core import base_advantage, group_index, group_stats, outcome_scores, rescale_rewards
from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage, compute_grpo_vectorized_outcome_advantage

from tests.helpers import batch


def test_group_stats_by_hand():
    scores = torch.tensor([1.0, 0.0, 0.0, 0.0, 2.0, 4.0])
    uid = np.array(["b", "b", "b", "b", "a", "a"], dtype=object)
    s = group_stats(scores, uid, ddof=1)
    # dense ids follow sorted labels: "a" -> 0, "b" -> 1
    assert s.gidx.tolist() == [1, 1, 1, 1, 0, 0]
    assert s.count.tolist() == [2.0, 4.0]
    assert s.mean.tolist() == pytest.approx([3.0, 0.25])
    # b: squared deviations 0.5625 + 3 * 0.0625 = 0.75; unbiased var 0.25, population var 0.1875
    assert s.std.tolist() == pytest.approx([2.0**0.5, 0.5])
    assert s.std_pop.tolist() == pytest.approx([1.0, 0.1875**0.5])
    assert s.collapsed.tolist() == [False, False]


def test_all_equal_group_has_exactly_zero_std():
    s = group_stats(torch.full((8,), 0.1), np.array(["x"] * 8, dtype=object))
    assert s.std.item() == 0.0 and s.std_pop.item() == 0.0 and s.collapsed.item()


def test_singleton_group_gets_zero_advantage_and_counts_collapsed():
    scores = torch.tensor([0.7, 1.0, 0.0])
    s = group_stats(scores, np.array(["solo", "g", "g"], dtype=object))
    adv = base_advantage(scores, s)
    assert adv[0].item() == 0.0
    assert s.collapsed[s.gidx[0]].item()
    # verl's loop gives a singleton its raw reward / (1 + eps) instead; our core deliberately differs there
    tlr, mask, _ = batch([[0.7]])
    verl_adv, _ = compute_grpo_outcome_advantage(tlr, mask, np.array(["solo"], dtype=object))
    assert verl_adv[0, 0].item() == pytest.approx(0.7, rel=1e-5)


def test_group_index_accepts_tensors_ints_and_strings():
    assert group_index(torch.tensor([5, 5, 2]))[0].tolist() == [1, 1, 0]
    assert group_index(np.array([7, 3, 7]))[0].tolist() == [1, 0, 1]
    gidx, n = group_index(np.array(["u1", "u0", "u1"], dtype=object))
    assert gidx.tolist() == [1, 0, 1] and n == 2


def test_non_finite_reward_names_the_sample():
    tlr = torch.zeros(4, 2)
    tlr[2, 1] = float("nan")
    with pytest.raises(ValueError, match="sample 2"):
        outcome_scores(tlr)
    tlr[2, 1] = float("inf")
    with pytest.raises(ValueError, match="sample 2"):
        outcome_scores(tlr)


def test_rescale_rejects_out_of_range_rewards():
    assert rescale_rewards(torch.tensor([-1.0, 0.0, 1.0]), (-1.0, 1.0), "k").tolist() == [0.0, 0.5, 1.0]
    with pytest.raises(ValueError, match="algorithm.agrae.reward_range"):
        rescale_rewards(torch.tensor([1.5]), (0.0, 1.0), "algorithm.agrae.reward_range")


groups_strategy = st.lists(
    st.lists(st.floats(-5, 5, allow_nan=False, width=32), min_size=2, max_size=9), min_size=1, max_size=12
)


@settings(max_examples=60, deadline=None)
@given(groups=groups_strategy, norm=st.booleans())
def test_base_advantage_equals_verl_grpo(groups, norm):
    """Groups of size >= 2: identical to verl's loop GRPO and its vectorised GRPO (unbiased std)."""
    tlr, mask, uid = batch(groups)
    scores = outcome_scores(tlr)
    ours = base_advantage(scores, group_stats(scores, uid, ddof=1), norm_by_std=norm)
    loop, _ = compute_grpo_outcome_advantage(tlr, mask, uid, norm_adv_by_std_in_grpo=norm)
    vec, _ = compute_grpo_vectorized_outcome_advantage(tlr, mask, uid, norm_adv_by_std_in_grpo=norm)
    # all-equal groups: std is 0 here but verl's one-pass formula can leave ~1e-4 of rounding residue, so compare
    # the absolute difference relative to the reward scale divided by (std + eps) only where std is not tiny.
    s = group_stats(scores, uid, ddof=1)
    ok = (s.std[s.gidx] > 1e-3) | (not norm)
    torch.testing.assert_close(ours[ok], loop[:, 0][ok], rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(ours[ok], vec[:, 0][ok], rtol=1e-4, atol=1e-4)


@settings(max_examples=60, deadline=None)
@given(groups=groups_strategy)
def test_group_stats_match_torch_per_group(groups):
    tlr, _, uid = batch(groups)
    scores = outcome_scores(tlr)
    s0 = group_stats(scores, uid, ddof=0)
    s1 = group_stats(scores, uid, ddof=1)
    for j, g in enumerate(groups):
        t = torch.tensor(g, dtype=torch.float32)
        gid = s0.gidx[j if j == 0 else sum(len(x) for x in groups[:j])]
        assert s0.count[gid].item() == len(g)
        assert s0.mean[gid].item() == pytest.approx(t.mean().item(), abs=1e-5)
        assert s0.std_pop[gid].item() == pytest.approx(t.std(unbiased=False).item(), abs=1e-4)
        assert s1.std[gid].item() == pytest.approx(t.std(unbiased=True).item(), abs=1e-4)
