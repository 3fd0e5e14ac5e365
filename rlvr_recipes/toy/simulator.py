"""A prompt-population simulator: binary rewards from per-prompt success rates, group size G, difficulty drift.

Checks the ACR paper's trends without an LLM: for binary rewards a group of G responses to a prompt solved with
probability p collapses (all correct or all wrong) with probability ``p^G + (1-p)^G``, so the expected ACR of a
batch is the mean of that over its prompts, and it falls as G grows. Each estimator's *effective* ACR (groups whose
final advantages are all zero) is measured through the registered verl functions.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import torch
from omegaconf import OmegaConf

import verl  # noqa: F401
from rlvr_recipes.advantage import state
from rlvr_recipes.advantage.diagnostics import batch_diagnostics
from verl.trainer.ppo.core_algos import get_adv_estimator_fn


def expected_acr(p: np.ndarray, group_size: int) -> float:
    """Closed-form expected ACR of a batch with per-prompt success rates ``p`` (N,): ``mean(p^G + (1-p)^G)``."""
    p = np.asarray(p, dtype=np.float64)
    return float(np.mean(p**group_size + (1.0 - p) ** group_size))


def sample_rewards(p: np.ndarray, group_size: int, rng: np.random.Generator) -> tuple[torch.Tensor, np.ndarray]:
    """Binary rewards ``(N*G,)`` and uids for prompts with success rates ``p`` (N,)."""
    r = (rng.random((len(p), group_size)) < np.asarray(p)[:, None]).astype(np.float32)
    return torch.from_numpy(r.reshape(-1)), np.repeat(np.arange(len(p)), group_size)


def population(n: int, step: int, drift: float, rng: np.random.Generator, a: float = 0.6, b: float = 0.6) -> np.ndarray:
    """Success rates of ``n`` prompts at ``step``: Beta(a, b) draws shifted towards 1 by ``drift`` per step on the
    logit scale (the policy improving, so more groups become all-correct)."""
    p = rng.beta(a, b, size=n).clip(1e-6, 1 - 1e-6)
    logit = np.log(p / (1 - p)) + drift * step
    return 1.0 / (1.0 + np.exp(-logit))


def effective_acr(
    estimator: str, p: np.ndarray, group_size: int, rng: np.random.Generator, options: Optional[dict] = None,
    steps: int = 1,
) -> tuple[float, float]:
    """``(ACR, effective ACR)`` averaged over ``steps`` batches drawn from ``p``, advantages from ``estimator``."""
    state.reset()
    cfg = OmegaConf.create({"adv_estimator": estimator, "norm_adv_by_std_in_grpo": True, **(options or {})})
    fn = get_adv_estimator_fn(estimator)
    acr, eff = [], []
    for _ in range(steps):
        r, uid = sample_rewards(p, group_size, rng)
        extra: dict[str, Any] = {}
        if estimator == "aapo":
            extra["ref_rewards"] = sample_rewards(p, group_size, rng)[0]
        adv, _ = fn(token_level_rewards=r.unsqueeze(-1), response_mask=torch.ones(len(r), 1), index=uid, config=cfg,
                    **extra)
        d = batch_diagnostics(r, uid, adv[:, 0])
        acr.append(d["acr/acr"])
        eff.append(d["acr/effective_acr"])
    return float(np.mean(acr)), float(np.mean(eff))


def theorem2_weights(p: np.ndarray, group_size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A-GRAE paper Theorem 2 / Eq. 10 on sampled groups: per group ``sum_i |Â_i|`` with GRPO's advantage over the
    population std (ddof = 0), beside ``2 G sqrt(p̂ (1 - p̂))``, ``p̂`` the group's sampled success rate.

    Returns:
        ``(measured, closed_form)``, each ``(N,)``; equal up to GRPO's epsilon for binary rewards (collapsed groups:
        both 0).
    """
    from rlvr_recipes.advantage.core import base_advantage, group_stats, segment_sum

    r, uid = sample_rewards(p, group_size, rng)
    r = r.double()
    stats = group_stats(r, uid, ddof=0)
    adv = base_advantage(r, stats, norm_by_std=True)
    measured = segment_sum(adv.abs(), stats.gidx, stats.num_groups).numpy()
    p_hat = stats.mean.numpy()
    return measured, 2.0 * group_size * np.sqrt(p_hat * (1.0 - p_hat))
