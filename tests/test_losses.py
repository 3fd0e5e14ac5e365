"""CW-GRPO's covariance weights and loss, against hand values (CW-GRPO paper, Sec. 2.3)."""

import math
from types import SimpleNamespace

import pytest
import torch

import verl  # noqa: F401
from rlvr_recipes.advantage.losses import covariance_weights
from verl.trainer.ppo.core_algos import POLICY_LOSS_REGISTRY, compute_policy_loss_vanilla, get_policy_loss_fn

LOG_PROB = torch.tensor([[-1.0, -2.0], [-3.0, -4.0]])
ADV = torch.tensor([[1.0, 1.0], [-1.0, -1.0]])
MASK = torch.ones(2, 2)


def actor_config():
    return SimpleNamespace(
        clip_ratio=0.2, clip_ratio_low=0.2, clip_ratio_high=0.28, clip_ratio_c=3.0, global_batch_info={},
        get=lambda key, default=None: {"clip_ratio_c": 3.0}.get(key, default),
    )


def test_losses_registered():
    assert {"cw_grpo", "aapo"} <= set(POLICY_LOSS_REGISTRY)


def test_weights_by_hand():
    # mean log pi = -2.5, mean A = 0 -> c = [1.5, 0.5, 0.5, 1.5]; population std of c = 0.5
    # w = exp(-c^2 / (2 * 0.25)) = exp(-4.5), exp(-0.5); w~ = w * 4 / sum(w)
    w, fig = covariance_weights(LOG_PROB, ADV, MASK)
    a, b = math.exp(-4.5), math.exp(-0.5)
    norm = 4 / (2 * a + 2 * b)
    assert w.flatten().tolist() == pytest.approx([a * norm, b * norm, b * norm, a * norm], rel=1e-5)
    assert w[0, 0].item() == pytest.approx(0.0359720, rel=1e-4)
    assert fig["cw_grpo/weight_mean"] == pytest.approx(1.0)
    assert fig["cw_grpo/sigma_mean"] == pytest.approx(0.5)
    assert fig["cw_grpo/downweighted_frac"] == pytest.approx(0.5)


def test_padding_is_ignored_and_zero_weighted():
    lp = torch.cat([LOG_PROB, torch.full((2, 1), -50.0)], dim=1)
    adv = torch.cat([ADV, torch.full((2, 1), 9.0)], dim=1)
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0]])
    w, _ = covariance_weights(lp, adv, mask)
    ref, _ = covariance_weights(LOG_PROB, ADV, MASK)
    torch.testing.assert_close(w[:, :2], ref)
    assert w[:, 2].tolist() == [0.0, 0.0]


def test_zero_sigma_gives_unit_weights():
    w, _ = covariance_weights(LOG_PROB, torch.ones(2, 2), MASK)  # all advantages equal: c = 0, sigma = 0
    assert w.tolist() == [[1.0, 1.0], [1.0, 1.0]]


def test_per_group_statistics_equal_separate_batches():
    lp = torch.cat([LOG_PROB, LOG_PROB * 3 + 1])
    adv = torch.cat([ADV, ADV * 0.5])
    mask = torch.ones(4, 2)
    w, _ = covariance_weights(lp, adv, mask, row_gidx=torch.tensor([0, 0, 1, 1]), num_groups=2)
    w0, _ = covariance_weights(lp[:2], adv[:2], mask[:2])
    w1, _ = covariance_weights(lp[2:], adv[2:], mask[2:])
    torch.testing.assert_close(w, torch.cat([w0, w1]))


def test_weights_carry_no_gradient():
    lp = LOG_PROB.clone().requires_grad_(True)
    w, _ = covariance_weights(lp, ADV, MASK)
    assert not w.requires_grad


def test_cw_grpo_loss_is_vanilla_with_weighted_advantages():
    old = LOG_PROB - 0.1
    lp = LOG_PROB.clone().requires_grad_(True)
    loss, metrics = get_policy_loss_fn("cw_grpo")(old, lp, ADV, MASK, "token-mean", actor_config())
    w, _ = covariance_weights(LOG_PROB, ADV, MASK)
    ref, _ = compute_policy_loss_vanilla(old, LOG_PROB, ADV * w, MASK, "token-mean", actor_config())
    assert loss.item() == pytest.approx(ref.item(), rel=1e-6)
    assert "cw_grpo/micro_batch_mean/weight_max" in metrics and "actor/pg_clipfrac" in metrics
    assert not any(k.startswith("cw_grpo/weight") for k in metrics)  # verl averages them: named as means
    loss.backward()
    assert torch.isfinite(lp.grad).all()
