"""What verl does to a batch on many ranks does not change this package's statistics, and bf16 inputs stay within a
stated tolerance of fp32.

verl 0.9.1's ``_balance_batch`` reorders the step's rows by verl's own ``get_seqlen_balanced_partitions`` (one
partition per data-parallel rank, equal sizes) before the advantage step (docs/statistics.md). Every statistic of
the advantage step is grouped by ``uid``, so the advantages of each row, the ACR figures, the estimators' own figures
and CW-GRPO's per-group weights must be the same whatever the order, for 2, 4 and 8 ranks.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import verl
from rlvr_recipes.advantage.diagnostics import ACRTracker
from rlvr_recipes.advantage.estimators import ESTIMATORS
from rlvr_recipes.trainer.extension import advantage_step
from verl.trainer.ppo.core_algos import get_adv_estimator_fn, get_policy_loss_fn
from verl.utils.seqlen_balancing import get_seqlen_balanced_partitions

from tests.helpers import algo

PROMPTS, G, L = 16, 8, 12


def step_batch(seed: int = 0):
    """A step's rollouts: 16 prompts x 8 responses, 0/1 rewards, ragged lengths, old log-probs, reference rewards."""
    g = torch.Generator().manual_seed(seed)
    bs = PROMPTS * G
    lengths = torch.randint(1, L + 1, (bs,), generator=g)
    mask = (torch.arange(L)[None] < lengths[:, None]).float()
    rewards = (torch.rand(bs, generator=g) < torch.linspace(0.05, 0.95, PROMPTS).repeat_interleave(G)).float()
    tlr = torch.zeros(bs, L)
    tlr[torch.arange(bs), lengths - 1] = rewards
    tensors = {"token_level_rewards": tlr, "response_mask": mask, "old_log_probs": -torch.rand(bs, L, generator=g) * 3,
               "ref_rewards": (torch.rand(bs, generator=g) < 0.5).float()}
    uid = np.array([f"p{i // G}" for i in range(bs)], dtype=object)
    return tensors, uid, lengths


def balanced_order(lengths: torch.Tensor, ranks: int) -> list[int]:
    """The row order verl's ``_balance_batch`` leaves (trainer_base.py: partitions by sequence length, concatenated)."""
    parts = get_seqlen_balanced_partitions(lengths.tolist(), k_partitions=ranks, equal_size=True)
    return [j for part in parts for j in part]


def run(name: str, tensors, uid, order=None, per_group_cw: bool = False):
    order = list(range(len(uid))) if order is None else order
    data = verl.DataProto.from_dict(tensors={k: v[order] for k, v in tensors.items()}, non_tensors={"uid": uid[order]})
    cfg = algo("cw_grpo", per_group=True) if per_group_cw else algo(name if name in ("aapo",) else None)
    cfg.adv_estimator = name
    data, metrics = advantage_step(data, cfg, ACRTracker())
    inverse = np.argsort(order)
    return data.batch["advantages"][inverse], metrics


@pytest.mark.parametrize("ranks", [2, 4, 8])
@pytest.mark.parametrize("name", ["grpo", *ESTIMATORS])
def test_balanced_order_gives_the_same_advantages_and_figures(name, ranks):
    tensors, uid, lengths = step_batch()
    order = balanced_order(lengths, ranks)
    assert order != list(range(len(uid)))  # the balancing really reorders
    plain, m_plain = run(name, tensors, uid)
    moved, m_moved = run(name, tensors, uid, order)
    torch.testing.assert_close(moved, plain, rtol=0, atol=1e-6)
    assert m_moved.keys() == m_plain.keys()
    for key in m_plain:
        # sums over the batch (e.g. acr/adv_neg_mass) are taken in another order: float32 rounding only
        assert m_moved[key] == pytest.approx(m_plain[key], rel=1e-5, abs=1e-6), key


@pytest.mark.parametrize("ranks", [2, 8])
def test_cw_grpo_per_group_weights_do_not_depend_on_the_order(ranks):
    tensors, uid, lengths = step_batch(1)
    plain, m_plain = run("grpo", tensors, uid, per_group_cw=True)
    moved, m_moved = run("grpo", tensors, uid, balanced_order(lengths, ranks), per_group_cw=True)
    torch.testing.assert_close(moved, plain, rtol=1e-5, atol=1e-5)  # the weights' sums run in another order
    assert m_moved["cw_grpo/weight_max"] == pytest.approx(m_plain["cw_grpo/weight_max"], abs=1e-6)


#: bf16 rewards and masks against fp32 (max abs difference of the advantages): 0/1 rewards are exact in bf16 and the
#: estimators take their group statistics in float32 (measured 0 on the CPU and on an H100, docs/gpu.md)
BF16_ADV_TOL = 1e-6
#: bf16 log-probs and advantages in a loss against fp32 (loss, gradient): bf16 keeps 8 bits of mantissa
BF16_LOSS_TOL = 5e-2


@pytest.mark.parametrize("name", ESTIMATORS)
def test_bf16_inputs_to_every_estimator(name):
    tensors, uid, _ = step_batch(2)
    fn = get_adv_estimator_fn(name)
    extra32 = {"ref_rewards": tensors["ref_rewards"]} if name == "aapo" else {}
    extra16 = {"ref_rewards": tensors["ref_rewards"].bfloat16()} if name == "aapo" else {}
    cfg = algo(None)
    a32, _ = fn(token_level_rewards=tensors["token_level_rewards"], response_mask=tensors["response_mask"], index=uid,
                config=cfg, **extra32)
    a16, _ = fn(token_level_rewards=tensors["token_level_rewards"].bfloat16(),
                response_mask=tensors["response_mask"].bfloat16(), index=uid, config=cfg, **extra16)
    assert torch.isfinite(a16.float()).all()
    assert (a16.float() - a32).abs().max().item() <= BF16_ADV_TOL


@pytest.mark.parametrize("name", ["vanilla", "cw_grpo", "aapo"])
def test_bf16_inputs_to_every_loss(name):
    from types import SimpleNamespace

    tensors, _, _ = step_batch(3)
    old, mask = tensors["old_log_probs"], tensors["response_mask"]
    adv = torch.randn(old.shape[0], 1, generator=torch.Generator().manual_seed(4)).expand_as(old).contiguous()
    cfg = SimpleNamespace(clip_ratio=0.2, clip_ratio_low=0.2, clip_ratio_high=0.28, clip_ratio_c=3.0,
                          global_batch_info={}, get=lambda k, d=None: {"clip_ratio_c": 3.0}.get(k, d))
    out = {}
    for dtype in (torch.float32, torch.bfloat16):
        lp = (old + 0.05 * torch.sin(old)).to(dtype).clone().requires_grad_(True)
        loss, _ = get_policy_loss_fn(name)(old.to(dtype), lp, adv.to(dtype), mask.to(dtype), "token-mean", cfg)
        loss.backward()
        out[dtype] = (loss.float().item(), lp.grad.float())
    assert abs(out[torch.bfloat16][0] - out[torch.float32][0]) <= BF16_LOSS_TOL
    assert (out[torch.bfloat16][1] - out[torch.float32][1]).abs().max().item() <= BF16_LOSS_TOL
