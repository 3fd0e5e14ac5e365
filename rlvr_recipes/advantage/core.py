"""Shared, vectorised group statistics: the one place every estimator of this package computes per-``uid`` figures.

A batch holds N prompt groups (rows sharing one ``uid``); group ``j`` has ``G_j`` responses with scalar outcome
rewards. Everything here is a segment reduction over a dense group index (``index_add_``), with no Python loop over
samples, so that it costs the same as verl's ``grpo_vectorized`` and equals verl's ``grpo`` to float tolerance.

Shapes: ``bs`` responses, ``N`` groups, ``L`` response tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
import torch

#: ACR's collapse threshold on the population std of a group's rewards (ACR paper, Def. 3.1 / Eq. 4).
COLLAPSE_TAU = 1e-6
#: GRPO's epsilon in ``(r - mean) / (std + eps)``, as verl.
GRPO_EPS = 1e-6


def group_index(index: Any, device: torch.device | str | None = None) -> tuple[torch.Tensor, int]:
    """Map arbitrary group labels (verl's ``uid`` object array, ints, a tensor) to dense ids ``0..N-1``.

    Args:
        index: ``(bs,)`` labels.
        device: device of the returned tensor.

    Returns:
        ``(gidx, N)``: ``gidx`` is a ``(bs,)`` long tensor, ``N`` the number of distinct groups.
    """
    if isinstance(index, torch.Tensor):
        uniq, inverse = torch.unique(index.reshape(-1), return_inverse=True)
        return inverse.to(device=device or index.device, dtype=torch.long), int(uniq.numel())
    arr = np.asarray(index)
    if arr.ndim != 1:
        arr = arr.reshape(-1)
    if arr.dtype == object:
        # uids are Python strings (or mixed objects); string keys sort without comparing mixed types.
        arr = arr.astype(str)
    _, inverse = np.unique(arr, return_inverse=True)
    inverse = inverse.reshape(-1)
    num_groups = int(inverse.max()) + 1 if inverse.size else 0
    return torch.as_tensor(inverse, dtype=torch.long, device=device), num_groups


def segment_sum(values: torch.Tensor, gidx: torch.Tensor, num_groups: int) -> torch.Tensor:
    """Sum ``values`` ``(bs,)`` into ``(N,)`` buckets given by ``gidx`` ``(bs,)``."""
    out = torch.zeros(num_groups, dtype=values.dtype, device=values.device)
    return out.index_add_(0, gidx, values)


def segment_max(values: torch.Tensor, gidx: torch.Tensor, num_groups: int) -> torch.Tensor:
    """Per-group maximum of ``values`` ``(bs,)``, shape ``(N,)``."""
    out = torch.full((num_groups,), -torch.inf, dtype=values.dtype, device=values.device)
    return out.scatter_reduce(0, gidx, values, reduce="amax", include_self=True)


def segment_min(values: torch.Tensor, gidx: torch.Tensor, num_groups: int) -> torch.Tensor:
    """Per-group minimum of ``values`` ``(bs,)``, shape ``(N,)``."""
    out = torch.full((num_groups,), torch.inf, dtype=values.dtype, device=values.device)
    return out.scatter_reduce(0, gidx, values, reduce="amin", include_self=True)


@dataclass(frozen=True)
class GroupStats:
    """Per-group statistics of one batch of scalar scores.

    Attributes:
        gidx: ``(bs,)`` dense group id of each response.
        num_groups: ``N``.
        count: ``(N,)`` responses per group, ``G_j``.
        mean: ``(N,)`` group mean.
        std: ``(N,)`` group std with the requested ``ddof`` (verl's GRPO uses the unbiased ``ddof=1``); 0 for
            groups too small for that ddof.
        std_pop: ``(N,)`` population std (``ddof=0``), the quantity ACR thresholds (ACR paper Eq. 4).
    """

    gidx: torch.Tensor
    num_groups: int
    count: torch.Tensor
    mean: torch.Tensor
    std: torch.Tensor
    std_pop: torch.Tensor

    def per_sample(self, group_values: torch.Tensor) -> torch.Tensor:
        """Broadcast a ``(N,)`` per-group tensor back to ``(bs,)``."""
        return group_values[self.gidx]

    @property
    def collapsed(self) -> torch.Tensor:
        """``(N,)`` bool: groups whose population std is below ACR's tau (size-1 groups included)."""
        return self.std_pop < COLLAPSE_TAU


def group_stats(scores: torch.Tensor, index: Any, ddof: int = 1) -> GroupStats:
    """Vectorised per-group count, mean and std of ``scores``.

    Shifted two-pass variance, so all-equal groups give exactly 0 rather than a rounding residue.

    Args:
        scores: ``(bs,)`` scalar reward per response.
        index: ``(bs,)`` group labels (``uid``) or an already dense ``(bs,)`` long tensor with ``num_groups`` known
            by the caller; anything :func:`group_index` accepts.
        ddof: delta degrees of freedom of ``std`` (1 = unbiased, verl's GRPO convention; 0 = population).

    Returns:
        :class:`GroupStats`.
    """
    if ddof not in (0, 1):
        raise ValueError(f"ddof must be 0 or 1, got {ddof!r}")
    gidx, num_groups = group_index(index, device=scores.device)
    if gidx.numel() != scores.numel():
        raise ValueError(f"index has {gidx.numel()} entries but there are {scores.numel()} scores")
    count = segment_sum(torch.ones_like(scores), gidx, num_groups)
    # Shift by any member of the group before averaging: an all-equal group then has exactly zero deviations, so
    # its std is exactly 0 (not a rounding residue) and its mean is exactly the shared value.
    shift = torch.zeros(num_groups, dtype=scores.dtype, device=scores.device).index_put_((gidx,), scores)
    shifted = scores - shift[gidx]
    offset = segment_sum(shifted, gidx, num_groups) / count.clamp_min(1.0)
    mean = shift + offset
    centred = shifted - offset[gidx]
    sq = segment_sum(centred * centred, gidx, num_groups)
    std_pop = torch.sqrt(sq / count.clamp_min(1.0))
    if ddof == 0:
        std = std_pop
    else:
        std = torch.where(count > 1, torch.sqrt(sq / (count - 1.0).clamp_min(1.0)), torch.zeros_like(sq))
    return GroupStats(gidx=gidx, num_groups=num_groups, count=count, mean=mean, std=std, std_pop=std_pop)


def outcome_scores(token_level_rewards: torch.Tensor) -> torch.Tensor:
    """Scalar outcome reward per response from verl's token-level rewards.

    Args:
        token_level_rewards: ``(bs, L)``; verl puts the outcome reward on the last valid token.

    Returns:
        ``(bs,)`` float tensor (at least float32).

    Raises:
        ValueError: naming the first sample whose reward is NaN or infinite; a silent NaN advantage would poison
            the whole update.
    """
    scores = token_level_rewards.sum(dim=-1)
    if not scores.is_floating_point() or scores.dtype in (torch.float16, torch.bfloat16):
        scores = scores.float()
    check_finite(scores, "reward")
    return scores


def check_finite(values: torch.Tensor, what: str) -> None:
    """Raise ``ValueError`` naming the first sample of ``values`` ``(bs,)`` that is NaN or infinite."""
    bad = ~torch.isfinite(values)
    if bool(bad.any()):
        i = int(torch.nonzero(bad)[0, 0])
        raise ValueError(
            f"non-finite {what} for sample {i} (value {values[i].item()}); {int(bad.sum())} of {values.numel()} "
            f"samples are NaN/Inf. Fix the reward function rather than letting a NaN advantage reach the update."
        )


def base_advantage(
    scores: torch.Tensor,
    stats: GroupStats,
    norm_by_std: bool = True,
    epsilon: float = GRPO_EPS,
) -> torch.Tensor:
    """Group-relative base advantage ``Â``: GRPO ``(r - mean) / (std + eps)`` or Dr.GRPO ``r - mean``.

    Groups of size 1 get 0 (their own mean is the reward: nothing is relative), and count as collapsed.

    Args:
        scores: ``(bs,)`` rewards.
        stats: :func:`group_stats` of ``scores``.
        norm_by_std: GRPO (True) or Dr.GRPO (False), verl's ``algorithm.norm_adv_by_std_in_grpo``.
        epsilon: GRPO's epsilon.

    Returns:
        ``(bs,)`` advantages.
    """
    centred = scores - stats.per_sample(stats.mean)
    if norm_by_std:
        centred = centred / (stats.per_sample(stats.std) + epsilon)
    return torch.where(stats.per_sample(stats.count) > 1, centred, torch.zeros_like(centred))


def to_token_level(advantages: torch.Tensor, response_mask: torch.Tensor) -> torch.Tensor:
    """Broadcast ``(bs,)`` sequence advantages to ``(bs, L)`` over the response mask."""
    return advantages.unsqueeze(-1) * response_mask.to(advantages.dtype)


def rescale_rewards(scores: torch.Tensor, reward_range: tuple[float, float], key: str) -> torch.Tensor:
    """Map rewards from ``[r_lo, r_hi]`` to ``[0, 1]`` (A-GRAE's success rate; AVSPO's fixed ceiling).

    Raises:
        ValueError: when a reward lies outside the range (an error, never a silent clamp), naming ``key``.
    """
    lo, hi = float(reward_range[0]), float(reward_range[1])
    tol = 1e-6 * max(1.0, hi - lo)
    outside = (scores < lo - tol) | (scores > hi + tol)
    if bool(outside.any()):
        i = int(torch.nonzero(outside)[0, 0])
        raise ValueError(
            f"reward {scores[i].item()} of sample {i} lies outside {key}=[{lo}, {hi}]; set {key} to the range of "
            f"your reward function"
        )
    return ((scores - lo) / (hi - lo)).clamp(0.0, 1.0)


def group_token_counts(response_mask: torch.Tensor, stats: GroupStats) -> torch.Tensor:
    """``(N,)`` total valid response tokens per group (AAPO Eq. 4's denominator)."""
    return segment_sum(response_mask.sum(dim=-1).to(torch.float32), stats.gidx, stats.num_groups)


def masked_group_mean(
    values: torch.Tensor, mask: torch.Tensor, row_gidx: Optional[torch.Tensor], num_groups: int
) -> torch.Tensor:
    """Mean of token-level ``values`` ``(bs, L)`` over the valid tokens of each row group.

    Args:
        values: ``(bs, L)``.
        mask: ``(bs, L)`` valid-token mask.
        row_gidx: ``(bs,)`` dense group id per row, or None for one group spanning the batch.
        num_groups: N (1 when ``row_gidx`` is None).

    Returns:
        ``(N,)`` means (0 for a group with no valid token).
    """
    mask = mask.to(values.dtype)
    row_sum = (values * mask).sum(dim=-1)
    row_cnt = mask.sum(dim=-1)
    if row_gidx is None:
        return (row_sum.sum() / row_cnt.sum().clamp_min(1.0)).reshape(1)
    return segment_sum(row_sum, row_gidx, num_groups) / segment_sum(row_cnt, row_gidx, num_groups).clamp_min(1.0)
