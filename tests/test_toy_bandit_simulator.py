"""The toy bandit's qualitative results (two-stage paper, App. C.1) and the simulator's ACR closed form."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr_recipes.toy.bandit import BanditSetting, run_many
from rlvr_recipes.toy.simulator import effective_acr, expected_acr, population, sample_rewards, theorem2_weights

SETTING = BanditSetting(steps=200)


@pytest.fixture(scope="module")
def grpo():
    return run_many("grpo", SETTING, seeds=3)


def test_grpo_two_stages(grpo):
    """Exploitation: the optimal action stays near its start while the explored actions move; exploration: it rises."""
    p = grpo["p_opt"].mean(0)
    start = SETTING.init_probs[2]
    assert abs(p[:40].mean() - start) < 0.02  # flat first stage
    assert p[40] < 0.06
    assert p[-1] > 0.3 and p[-1] > 10 * start  # then it rises
    assert grpo["entropy"].mean(0)[40] < 0.5 * grpo["entropy"].mean(0)[0]  # mass concentrated meanwhile


def test_grpo_n_keeps_entropy_higher_than_grpo(grpo):
    neg = run_many("grpo_n", SETTING, seeds=3)
    assert neg["entropy"].mean(0)[10:60].mean() > grpo["entropy"].mean(0)[10:60].mean() + 0.03
    assert neg["p_opt"].mean(0)[-1] > grpo["p_opt"].mean(0)[-1]


def test_positive_dominant_slows_exploration(grpo):
    pos = run_many("agrae_pos_dominant", SETTING, seeds=3)
    assert pos["p_opt"].mean(0)[-1] < grpo["p_opt"].mean(0)[-1]


def test_every_method_runs_through_the_registered_functions():
    short = BanditSetting(steps=5, prompts=4)
    for name in ("agrae", "avspo", "aapo", "grpo_n", "w_reinforce"):
        c = run_many(name, short, seeds=1)
        assert all(np.isfinite(v).all() for v in c.values())


@pytest.mark.parametrize("group_size", [2, 4, 8, 16])
def test_simulated_acr_matches_closed_form(group_size):
    rng = np.random.default_rng(group_size)
    p = population(2000, 0, 0.0, rng)
    batches = 5
    acr, _ = effective_acr("grpo", p, group_size, rng, steps=batches)
    q = np.asarray(p) ** group_size + (1 - np.asarray(p)) ** group_size
    # ACR is a mean of N * batches independent Bernoulli(q_j): 4.5 standard errors
    se = math.sqrt(float((q * (1 - q)).sum()) * batches) / (len(p) * batches)
    assert abs(acr - expected_acr(p, group_size)) < 4.5 * se


def test_acr_falls_as_group_size_grows():
    p = population(500, 0, 0.0, np.random.default_rng(0))
    values = [expected_acr(p, g) for g in (2, 4, 8, 16, 32)]
    assert all(a > b for a, b in zip(values, values[1:]))


def test_closed_form_by_hand():
    assert expected_acr(np.array([0.5, 1.0, 0.0]), 2) == pytest.approx((0.5 + 1 + 1) / 3)
    r, uid = sample_rewards(np.array([1.0, 0.0]), 3, np.random.default_rng(0))
    assert r.tolist() == [1, 1, 1, 0, 0, 0] and uid.tolist() == [0, 0, 0, 1, 1, 1]


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 32), st.integers(0, 2**31 - 1))
def test_theorem2_weight_identity(group_size, seed):
    """A-GRAE paper Eq. 10: sum_i |Â_i| = 2 G sqrt(p(1-p)) per group (population std, binary rewards)."""
    rng = np.random.default_rng(seed)
    p = rng.random(64)
    measured, closed = theorem2_weights(p, group_size, rng)
    # GRPO's epsilon 1e-6 in the denominator: relative error below 1e-6 / std_pop, std_pop >= sqrt(G-1)/G
    assert np.allclose(measured, closed, rtol=1e-6 * group_size / math.sqrt(group_size - 1) + 1e-12, atol=1e-9)


def test_theorem2_by_hand():
    # p = 1 and p = 0 give all-correct and all-wrong groups: Â = 0, and 2 G sqrt(p̂(1 - p̂)) = 0
    measured, closed = theorem2_weights(np.array([1.0, 0.0]), 2, np.random.default_rng(0))
    assert measured.tolist() == [0.0, 0.0] and closed.tolist() == [0.0, 0.0]
