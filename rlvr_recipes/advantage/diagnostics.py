"""Advantage-collapse diagnostics as plain functions of (rewards, index, advantages).

- ACR, the advantage collapse rate (ACR paper, Def. 3.1, Eq. 4/11): fraction of groups whose reward population std
  is below tau = 1e-6.
- Effective ACR: fraction of groups whose *final* advantages are all |A| < 1e-6 (what AVSPO's Table 1 reduces).
- Zero-advantage fraction of responses (AAPO paper, Fig. 1-2); all-correct / all-wrong group fractions.
- Positive/negative advantage mass ratio, ``sum A+ / sum |A-|`` (A-GRAE paper, Eq. 5: 1 for symmetric GRPO).
- ACR volatility (std of ACR over a sliding 25-step window, ACR paper Sec. 3.4.2) and ACR_100 (mean over the first
  100 steps, Eq. 7), kept by :class:`ACRTracker`.

All per-batch figures are vectorised group reductions from :mod:`rlvr_recipes.advantage.core`.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Optional

import torch

from rlvr_recipes.advantage.core import COLLAPSE_TAU, group_stats, segment_max, segment_min, segment_sum

ZERO_ADV_TOL = 1e-6


def advantage_collapse_rate(scores: torch.Tensor, index: Any, tau: float = COLLAPSE_TAU) -> float:
    """ACR (ACR paper Eq. 4): ``(1/N) sum_j 1[std_pop(R_j) < tau]`` over the N groups of the batch.

    Args:
        scores: ``(bs,)`` rewards.
        index: ``(bs,)`` group labels (``uid``).
        tau: collapse threshold.
    """
    stats = group_stats(scores, index, ddof=0)
    return float((stats.std_pop < tau).float().mean()) if stats.num_groups else 0.0


def batch_diagnostics(
    scores: torch.Tensor,
    index: Any,
    advantages: Optional[torch.Tensor] = None,
    response_mask: Optional[torch.Tensor] = None,
    reward_range: tuple[float, float] = (0.0, 1.0),
    tau: float = COLLAPSE_TAU,
    prefix: str = "acr/",
) -> dict[str, float]:
    """All per-batch collapse figures.

    Args:
        scores: ``(bs,)`` raw outcome rewards.
        index: ``(bs,)`` group labels.
        advantages: final advantages, ``(bs,)`` or token-level ``(bs, L)`` (then reduced to the per-response value
            of largest magnitude over valid tokens, which is the response's scalar advantage for outcome
            estimators); None skips the advantage figures.
        response_mask: ``(bs, L)``, needed with token-level advantages.
        reward_range: ``[r_lo, r_hi]``; a group is all-correct when every reward is ``>= r_hi``, all-wrong when every
            reward is ``<= r_lo`` (binary rewards: all 1 / all 0).
        tau: ACR threshold.
        prefix: metric-name prefix.

    Returns:
        ``{prefix + name: value}`` with names ``acr``, ``all_correct_frac``, ``all_wrong_frac``,
        ``reward_mean`` and, with advantages, ``effective_acr``, ``zero_adv_frac``, ``pos_neg_mass_ratio``,
        ``adv_pos_mass``, ``adv_neg_mass``.
    """
    scores = scores.reshape(-1).float()
    stats = group_stats(scores, index, ddof=0)
    n = max(stats.num_groups, 1)
    lo, hi = reward_range
    tol = 1e-6 * max(1.0, hi - lo)
    gmin = segment_min(scores, stats.gidx, stats.num_groups)
    gmax = segment_max(scores, stats.gidx, stats.num_groups)
    out = {
        "acr": float((stats.std_pop < tau).float().sum()) / n,
        "all_correct_frac": float((gmin >= hi - tol).float().sum()) / n,
        "all_wrong_frac": float((gmax <= lo + tol).float().sum()) / n,
        "reward_mean": float(scores.mean()) if scores.numel() else 0.0,
    }
    if advantages is not None:
        adv = sequence_advantages(advantages, response_mask)
        zero = (adv.abs() < ZERO_ADV_TOL).float()
        nonzero_per_group = segment_sum(1.0 - zero, stats.gidx, stats.num_groups)
        pos = float(adv.clamp_min(0).sum())
        neg = float((-adv).clamp_min(0).sum())
        out.update(
            {
                "effective_acr": float((nonzero_per_group == 0).float().sum()) / n,
                "zero_adv_frac": float(zero.mean()) if zero.numel() else 0.0,
                "adv_pos_mass": pos,
                "adv_neg_mass": neg,
                "pos_neg_mass_ratio": pos / neg if neg > 0 else (float("inf") if pos > 0 else 1.0),
            }
        )
    return {prefix + k: v for k, v in out.items()}


def rollout_acr(post_filter_acr: float, kept_groups: int, filtered_groups: int) -> float:
    """ACR of the rollouts before DAPO's group filtering, from the post-filter ACR and the number of filtered groups.

    DAPO's dynamic sampling drops every group whose filter metric (``acc``) is the same for all responses, so each
    filtered group is a collapsed group of the rollouts: ``(ACR_post * N_kept + F) / (N_kept + F)``. Without
    filtering (``F = 0``) it equals the post-filter ACR.

    Args:
        post_filter_acr: ACR of the kept batch.
        kept_groups: ``N_kept``, groups in the kept batch.
        filtered_groups: ``F``, groups dropped by the filter while this batch was assembled.
    """
    total = kept_groups + filtered_groups
    return (post_filter_acr * kept_groups + filtered_groups) / total if total else 0.0


def sequence_advantages(advantages: torch.Tensor, response_mask: Optional[torch.Tensor] = None) -> torch.Tensor:
    """``(bs,)`` per-response advantage from ``(bs,)`` or token-level ``(bs, L)`` advantages.

    For token-level input, the value of largest magnitude over the valid tokens (outcome estimators broadcast one
    scalar per response; for token-varying advantages this is the response's extreme token).
    """
    if advantages.dim() == 1:
        return advantages.float()
    adv = advantages.float()
    if response_mask is not None:
        adv = adv * response_mask.to(adv.dtype)
    idx = adv.abs().argmax(dim=-1, keepdim=True)
    return adv.gather(-1, idx).squeeze(-1)


class ACRTracker:
    """Running ACR figures across steps: volatility over a sliding window and ACR_100.

    Args:
        window: sliding window for volatility (25 steps, ACR paper Sec. 3.4.2).
        early_steps: steps averaged for ACR_100 (Eq. 7).
    """

    def __init__(self, window: int = 25, early_steps: int = 100):
        self.window = deque(maxlen=window)
        self.early_steps = early_steps
        self.early_sum = 0.0
        self.early_n = 0

    def update(self, acr: float) -> dict[str, float]:
        """Record this step's ACR; return ``acr/volatility`` (population std over the window) and ``acr/acr_100``
        (mean over the first ``early_steps`` steps seen so far)."""
        self.window.append(float(acr))
        if self.early_n < self.early_steps:
            self.early_sum += float(acr)
            self.early_n += 1
        w = torch.tensor(list(self.window), dtype=torch.float64)
        vol = float(w.std(unbiased=False)) if w.numel() > 1 else 0.0
        return {"acr/volatility": vol, "acr/acr_100": self.early_sum / max(self.early_n, 1)}

    def state_dict(self) -> dict[str, Any]:
        return {
            "window": list(self.window),
            "maxlen": self.window.maxlen,
            "early_steps": self.early_steps,
            "early_sum": self.early_sum,
            "early_n": self.early_n,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.window = deque(state["window"], maxlen=state["maxlen"])
        self.early_steps = state["early_steps"]
        self.early_sum = state["early_sum"]
        self.early_n = state["early_n"]
