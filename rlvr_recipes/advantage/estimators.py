"""The papers' advantage estimators, registered with verl (``algorithm.adv_estimator=<name>``).

Every estimator here is a group *base* (GRPO ``(r - mean)/(std + eps)``, or Dr.GRPO ``r - mean`` when
``algorithm.norm_adv_by_std_in_grpo=False``) followed by one paper's *modifier*, computed on the ``(bs,)`` outcome
rewards with the shared vectorised statistics of :mod:`rlvr_recipes.advantage.core`, then broadcast over the response mask.
DAPO and GSPO use the GRPO base with their own loss/sampling settings, so each modifier composes with them too.

Registered names (options under ``algorithm.<section>.*``):

==========================  ===========  ====================================================================
name                        section      method
==========================  ===========  ====================================================================
``agrae``                   ``agrae``    A-GRAE, sample + group level (A-GRAE paper, Eq. 11-13)
``agrae_pos_dominant``      ``agrae``    Table 1 control: positive advantages x beta
``agrae_neg_dominant``      ``agrae``    Table 1 control: positive advantages / beta
``agrae_hard_focused``      ``agrae``    Table 1 control: gamma * Â / sqrt(p)
``agrae_easy_focused``      ``agrae``    Table 1 control: gamma * Â / sqrt(1-p)
``avspo``                   ``avspo``    ACR-triggered virtual reward samples (ACR paper, Sec. 4, Alg. 1)
``aapo``                    ``aapo``     advantage margin against paired reference rewards (AAPO, Eq. 5)
``grpo_n``                  ``grpo_n``   only relative negative advantages (two-stage paper, App. B.5)
``grpo_pos_only``           ``grpo_n``   only positive advantages (baseline)
``w_reinforce``             ``w_reinforce``  W-REINFORCE: +lambda for correct, -1 for wrong (baseline)
==========================  ===========  ====================================================================

Each ``compute_*`` function has verl's estimator signature
``(token_level_rewards (bs, L), response_mask (bs, L), index (bs,), config) -> (advantages, returns)``, both
``(bs, L)``. The pure ``(bs,)`` cores (``agrae_advantage`` etc.) are public too, for the toy bandit and tests.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
import torch
from verl.trainer.ppo.core_algos import register_adv_est

from rlvr_recipes.advantage import state
from rlvr_recipes.advantage.core import (
    COLLAPSE_TAU,
    GRPO_EPS,
    GroupStats,
    base_advantage,
    check_finite,
    group_stats,
    group_token_counts,
    outcome_scores,
    rescale_rewards,
    segment_max,
    segment_sum,
    to_token_level,
)
from rlvr_recipes.advantage.options import check_range, norm_adv_by_std, read_options, require

# ----------------------------------------------------------------------------------------------------------------
# shared machinery
# ----------------------------------------------------------------------------------------------------------------


def _prepare(
    token_level_rewards: torch.Tensor, index: Any, ddof: int
) -> tuple[torch.Tensor, GroupStats]:
    if index is None:
        raise ValueError("this estimator is group-relative and needs the batch's `uid` index; none was passed")
    scores = outcome_scores(token_level_rewards)
    return scores, group_stats(scores, index, ddof=ddof)


def _finish(advantages: torch.Tensor, response_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    token_adv = to_token_level(advantages, response_mask)
    return token_adv, token_adv


# ----------------------------------------------------------------------------------------------------------------
# A-GRAE (A-GRAE paper, Sec. 5.1, Eq. 11-13; control variants of Table 1)
# ----------------------------------------------------------------------------------------------------------------

AGRAE_VARIANTS = ("agrae", "pos_dominant", "neg_dominant", "hard_focused", "easy_focused")


@dataclass
class AGRAEOptions:
    """``algorithm.agrae.*``.

    Attributes:
        variant: ``agrae`` (the method) or a Table 1 control variant.
        sample_level: apply the sample-level difficulty focus (Eq. 12); ablation Table 5.
        group_level: apply the group-level suppression of positive advantages (Eq. 13); ablation Table 5.
        alpha: Eq. 13's scale, ``0 < alpha <= 1``; 1.0 for math, 0.5 for the multimodal sets (App. D).
        beta: Table 1's positive/negative-dominant factor (10).
        gamma: Table 1's hard/easy-focused normaliser (0.5).
        reward_range: ``[r_lo, r_hi]`` mapped to ``[0, 1]`` for ``p`` and ``omega``; rewards outside are an error.
            Unused when ``success_key`` is set.
        success_key: the reward function's per-response success field (``reward_extra_info[key]``, e.g. ``acc``)
            from which ``p`` and ``omega`` are taken instead of from the reward: the paper's ``p`` is a success rate
            (Theorem 2), and a shaped reward (DAPO's overlong penalty, format terms) is not one. ``null``: the
            rescaled reward. Read by the trainer extension (``trainer.v1.trainer_mode=rlvr``).
        ddof: std convention of the GRPO base (1 = verl's unbiased; the paper's identities hold for 0).
        epsilon: GRPO's epsilon.
    """

    variant: str = "agrae"
    sample_level: bool = True
    group_level: bool = True
    alpha: float = 1.0
    beta: float = 10.0
    gamma: float = 0.5
    reward_range: list = field(default_factory=lambda: [0.0, 1.0])
    success_key: Optional[str] = None
    ddof: int = 1
    epsilon: float = GRPO_EPS

    def validate(self, section: str) -> None:
        require(self.success_key is None or (isinstance(self.success_key, str) and self.success_key), section,
                "success_key", self.success_key, "null or a reward_extra_info key such as acc")
        require(self.variant in AGRAE_VARIANTS, section, "variant", self.variant, f"one of {AGRAE_VARIANTS}")
        require(0.0 < self.alpha <= 1.0, section, "alpha", self.alpha, "0 < alpha <= 1 (Eq. 13)")
        require(self.beta > 0, section, "beta", self.beta, "beta > 0")
        require(self.gamma > 0, section, "gamma", self.gamma, "gamma > 0")
        require(self.ddof in (0, 1), section, "ddof", self.ddof, "0 or 1")
        require(self.epsilon >= 0, section, "epsilon", self.epsilon, ">= 0")
        self.reward_range = list(check_range(section, "reward_range", self.reward_range))


def agrae_advantage(
    scores: torch.Tensor,
    stats: GroupStats,
    base: torch.Tensor,
    opts: AGRAEOptions,
    success: Optional[torch.Tensor] = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """A-GRAE on ``(bs,)`` rewards and base advantages ``Â``.

    ``p`` and ``omega`` are success rates: from ``success`` ``(bs,)`` in ``[0, 1]`` (each response's accuracy) when
    given, else from the rewards rescaled by ``opts.reward_range``. The base ``Â`` stays that of the reward.

    - ``omega = mean of all B rescaled rewards of the batch`` (Eq. 11); ``p`` = the group's success rate (mean of
      its rescaled rewards, Theorem 2).
    - Sample level (Eq. 12): ``A_i = Â_i * (omega / (2 sqrt(p)) + (1 - omega) / (2 sqrt(1 - p)))`` for ``0 < p < 1``,
      unchanged when ``p`` is 0 or 1.
    - Group level (Eq. 13): ``A*_i = A_i * min(1, omega / alpha)`` if ``A_i > 0``, else ``A_i``.
    - Controls (Table 1): pos-dominant ``A_pos * beta``; neg-dominant ``A_pos / beta``; hard-focused
      ``gamma * Â / sqrt(p)``; easy-focused ``gamma * Â / sqrt(1 - p)`` (unchanged at p in {0, 1}).

    Returns:
        ``(advantages (bs,), figures)`` with ``agrae/omega`` and ``agrae/pos_scale`` (the group-level factor).
    """
    if success is None:
        unit = rescale_rewards(scores, tuple(opts.reward_range), "algorithm.agrae.reward_range")
    else:
        unit = rescale_rewards(success.to(scores), (0.0, 1.0), f"algorithm.agrae.success_key={opts.success_key}")
    omega = unit.mean() if unit.numel() else unit.new_zeros(())
    p = stats.per_sample(segment_sum(unit, stats.gidx, stats.num_groups) / stats.count.clamp_min(1.0))
    interior = (p > 0.0) & (p < 1.0)
    sqrt_p = torch.sqrt(torch.where(interior, p, torch.ones_like(p)))
    sqrt_q = torch.sqrt(torch.where(interior, 1.0 - p, torch.ones_like(p)))
    one = torch.ones_like(base)
    figures: dict[str, float] = {"agrae/omega": float(omega)}

    if opts.variant == "pos_dominant":
        return torch.where(base > 0, base * opts.beta, base), figures
    if opts.variant == "neg_dominant":
        return torch.where(base > 0, base / opts.beta, base), figures
    if opts.variant == "hard_focused":
        return torch.where(interior, opts.gamma * base / sqrt_p, base), figures
    if opts.variant == "easy_focused":
        return torch.where(interior, opts.gamma * base / sqrt_q, base), figures

    adv = base
    if opts.sample_level:
        weight = omega / (2.0 * sqrt_p) + (1.0 - omega) / (2.0 * sqrt_q)
        adv = adv * torch.where(interior, weight, one)
    if opts.group_level:
        pos_scale = torch.clamp(omega / opts.alpha, max=1.0)
        adv = torch.where(adv > 0, adv * pos_scale, adv)
        figures["agrae/pos_scale"] = float(pos_scale)
    return adv, figures


def _agrae(
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    index: Any,
    config: Any,
    variant: Optional[str],
    success: Optional[Any] = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    opts = read_options(AGRAEOptions, config, "agrae")
    if variant is not None:
        opts.variant = variant
    scores, stats = _prepare(token_level_rewards, index, opts.ddof)
    base = base_advantage(scores, stats, norm_adv_by_std(config), opts.epsilon)
    if success is None and opts.success_key is not None:
        raise ValueError(
            f"algorithm.agrae.success_key={opts.success_key!r} but no per-response success was passed: run with "
            f"trainer.v1.trainer_mode=rlvr (the trainer extension reads reward_extra_info[{opts.success_key!r}])"
        )
    if success is not None:
        success = torch.as_tensor(np.asarray(success, dtype=np.float32)).to(scores.device)
        check_finite(success, "algorithm.agrae.success_key")
    adv, figures = agrae_advantage(scores, stats, base, opts, success)
    state.LAST_METRICS.update(figures)
    return _finish(adv, response_mask)


@register_adv_est("agrae")
def compute_agrae_advantage(
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    index: Optional[np.ndarray] = None,
    config: Optional[Any] = None,
    success: Optional[Any] = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """A-GRAE: asymmetric group-relative advantages (A-GRAE paper, Sec. 5.1, Eq. 11-13).

    Base GRPO, or Dr.GRPO with ``algorithm.norm_adv_by_std_in_grpo=False``; both levels switchable and the Table 1
    variants selectable through ``algorithm.agrae.*`` (:class:`AGRAEOptions`). See :func:`agrae_advantage`.

    Args:
        token_level_rewards: ``(bs, L)``.
        response_mask: ``(bs, L)``.
        index: ``(bs,)`` group ids (``uid``).
        config: ``algorithm`` config.
        success: ``(bs,)`` per-response success in ``[0, 1]`` (``algorithm.agrae.success_key``), for ``p``/``omega``.

    Returns:
        ``(advantages, returns)``, both ``(bs, L)``.
    """
    return _agrae(token_level_rewards, response_mask, index, config, None, success)


def _register_agrae_variant(variant: str, doc: str) -> Any:
    """Register ``agrae_<variant>``: A-GRAE with ``algorithm.agrae.variant`` fixed (other options still apply)."""

    def compute(
        token_level_rewards: torch.Tensor,
        response_mask: torch.Tensor,
        index: Optional[np.ndarray] = None,
        config: Optional[Any] = None,
        success: Optional[Any] = None,
        **kwargs: Any,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        return _agrae(token_level_rewards, response_mask, index, config, variant, success)

    compute.__name__ = compute.__qualname__ = f"compute_agrae_{variant}_advantage"
    compute.__doc__ = doc + "\n\nSame signature and returns as :func:`compute_agrae_advantage`."
    return register_adv_est(f"agrae_{variant}")(compute)


compute_agrae_pos_dominant_advantage = _register_agrae_variant(
    "pos_dominant", "A-GRAE Table 1, positive-dominant control: ``A*_pos = beta * A_pos`` (``algorithm.agrae.beta``)."
)
compute_agrae_neg_dominant_advantage = _register_agrae_variant(
    "neg_dominant", "A-GRAE Table 1, negative-dominant control: ``A*_pos = A_pos / beta``."
)
compute_agrae_hard_focused_advantage = _register_agrae_variant(
    "hard_focused", "A-GRAE Table 1, hard-focused control: ``A* = gamma * Â / sqrt(p)`` for ``0 < p < 1``."
)
compute_agrae_easy_focused_advantage = _register_agrae_variant(
    "easy_focused", "A-GRAE Table 1, easy-focused control: ``A* = gamma * Â / sqrt(1 - p)`` for ``0 < p < 1``."
)


# ----------------------------------------------------------------------------------------------------------------
# AVSPO (ACR paper, Sec. 4, Eq. 8-14, Alg. 1, App. A.2, ablations App. C)
# ----------------------------------------------------------------------------------------------------------------

AVSPO_VIRTUAL_REWARDS = ("stratified", "uniform", "half")


@dataclass
class AVSPOOptions:
    """``algorithm.avspo.*``.

    Attributes:
        tau: collapse threshold on a group's population reward std (Eq. 4, 1e-6).
        tau_init: initial adaptive threshold ``tau_adapt`` (0.5).
        tau_bounds: ``[low, high]`` clip of ``tau_adapt`` ([0.1, 0.9], App. A.2).
        eta: threshold learning rate (0.01, Eq. 12).
        alpha: sensitivity of K (0.5, Eq. 9).
        virtual_rewards: ``stratified`` (Eq. 10), or the App. C.1 ablations ``uniform`` (U[0, r_max]) and ``half``
            (0.5 * r_max).
        reward_ceiling: None takes ``r_max`` = the group's max reward (paper); a number fixes the ceiling, so that
            all-zero groups get non-zero virtual rewards too.
        fixed_k: App. C.4 ablation: use this K instead of Eq. 9.
        fixed_threshold: App. C.3 ablation: a fixed threshold instead of the adaptive one.
        ddof: std convention of the base and of the augmented std (1 = verl's unbiased).
        epsilon: GRPO's epsilon.
        seed: seed of the ``uniform`` ablation's draws (combined with the step).
    """

    tau: float = COLLAPSE_TAU
    tau_init: float = 0.5
    tau_bounds: list = field(default_factory=lambda: [0.1, 0.9])
    eta: float = 0.01
    alpha: float = 0.5
    virtual_rewards: str = "stratified"
    reward_ceiling: Optional[float] = None
    fixed_k: Optional[int] = None
    fixed_threshold: Optional[float] = None
    ddof: int = 1
    epsilon: float = GRPO_EPS
    seed: int = 0

    def validate(self, section: str) -> None:
        require(self.tau > 0, section, "tau", self.tau, "tau > 0")
        lo, hi = check_range(section, "tau_bounds", self.tau_bounds)
        require(0.0 <= lo and hi <= 1.0, section, "tau_bounds", self.tau_bounds, "bounds within [0, 1]")
        self.tau_bounds = [lo, hi]
        require(lo <= self.tau_init <= hi, section, "tau_init", self.tau_init, f"within tau_bounds [{lo}, {hi}]")
        require(self.eta >= 0, section, "eta", self.eta, "eta >= 0")
        require(self.alpha > 0, section, "alpha", self.alpha, "alpha > 0 (Eq. 9)")
        require(
            self.virtual_rewards in AVSPO_VIRTUAL_REWARDS,
            section,
            "virtual_rewards",
            self.virtual_rewards,
            f"one of {AVSPO_VIRTUAL_REWARDS}",
        )
        if self.fixed_k is not None:
            require(int(self.fixed_k) >= 1, section, "fixed_k", self.fixed_k, "fixed_k >= 1")
        if self.fixed_threshold is not None:
            require(
                0.0 <= self.fixed_threshold <= 1.0, section, "fixed_threshold", self.fixed_threshold, "in [0, 1]"
            )
        require(self.ddof in (0, 1), section, "ddof", self.ddof, "0 or 1")


def avspo_num_virtual(group_size: torch.Tensor, acr: float, opts: AVSPOOptions) -> torch.Tensor:
    """K per group (Eq. 9): ``max(1, min(G, ceil(G * ACR^alpha)))``, or ``fixed_k``.

    Args:
        group_size: ``(N,)`` float group sizes G_j.
    """
    if opts.fixed_k is not None:
        return torch.full_like(group_size, float(opts.fixed_k))
    k = torch.ceil(group_size * (acr**opts.alpha) - 1e-9)
    return torch.clamp(torch.minimum(k, group_size), min=1.0)


def avspo_virtual_rewards(
    r_max: torch.Tensor, k: torch.Tensor, opts: AVSPOOptions, generator: Optional[torch.Generator] = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Virtual rewards for ``M`` collapsed groups, padded to ``K_max``.

    Stratified (Eq. 10): ``r_v_k = r_max * (1 - (k-1)/K)`` for ``k = 1..K``; ablations ``uniform`` draws
    ``U[0, r_max]``, ``half`` gives ``0.5 * r_max``.

    Args:
        r_max: ``(M,)`` ceiling per collapsed group.
        k: ``(M,)`` K per group.

    Returns:
        ``(values (M, K_max), valid (M, K_max) bool)``.
    """
    k_max = int(k.max()) if k.numel() else 0
    pos = torch.arange(k_max, dtype=r_max.dtype, device=r_max.device).unsqueeze(0)  # k - 1
    valid = pos < k.unsqueeze(1)
    if opts.virtual_rewards == "stratified":
        values = r_max.unsqueeze(1) * (1.0 - pos / k.unsqueeze(1))
    elif opts.virtual_rewards == "uniform":
        u = torch.rand((r_max.numel(), k_max), generator=generator, dtype=r_max.dtype).to(r_max.device)
        values = r_max.unsqueeze(1) * u
    else:  # half
        values = 0.5 * r_max.unsqueeze(1).expand(-1, k_max)
    return values * valid, valid


def avspo_advantage(
    scores: torch.Tensor,
    stats: GroupStats,
    base: torch.Tensor,
    opts: AVSPOOptions,
    avspo_state: state.AVSPOState,
    norm_by_std: bool = True,
) -> tuple[torch.Tensor, dict[str, float]]:
    """AVSPO on ``(bs,)`` rewards (ACR paper, Alg. 1), updating ``avspo_state`` in place.

    1. ``ACR_t`` on raw rewards (Eq. 11).
    2. If ``ACR_t > tau_adapt`` (or the fixed threshold), every group with ``std_pop(R_j) < tau`` gets K virtual
       rewards (Eq. 9-10, 13).
    3. The G real samples' advantages use mean and std of the ``G + K`` augmented set (Eq. 14); other groups keep
       the base advantage, so with no trigger AVSPO equals its base exactly.
    4. ``tau_adapt += eta * sign(J_t - J_{t-1}) * (ACR_t - tau_adapt)``, clipped to ``tau_bounds`` (Eq. 12); J is the
       batch mean reward, ``sign(0) = 0`` and the first step makes no change.

    Returns:
        ``(advantages (bs,), figures)``: ``avspo/tau_adapt`` (the threshold used this step), ``avspo/triggered``,
        ``avspo/k`` (mean K over augmented groups, 0 if none), ``avspo/augmented_frac``, ``avspo/acr``.
    """
    collapsed = stats.std_pop < opts.tau
    n = max(stats.num_groups, 1)
    acr = float(collapsed.float().sum()) / n
    threshold = opts.fixed_threshold if opts.fixed_threshold is not None else avspo_state.tau_adapt
    triggered = acr > threshold
    adv = base
    mean_k = 0.0
    augmented = collapsed if triggered else torch.zeros_like(collapsed)
    if triggered and bool(augmented.any()):
        groups = torch.nonzero(augmented).squeeze(1)
        if opts.reward_ceiling is None:
            r_max = segment_max(scores, stats.gidx, stats.num_groups)[groups]
        else:
            r_max = torch.full((groups.numel(),), float(opts.reward_ceiling), dtype=scores.dtype, device=scores.device)
        size = stats.count[groups]
        k = avspo_num_virtual(size, acr, opts)
        generator = torch.Generator().manual_seed(int(opts.seed) * 1_000_003 + avspo_state.step)
        v, valid = avspo_virtual_rewards(r_max, k, opts, generator)
        # augmented mean/std over G + K (two-pass over real and virtual values)
        total = size + k
        mean_aug = (stats.mean[groups] * size + v.sum(dim=1)) / total
        mean_full = stats.mean.clone()
        mean_full[groups] = mean_aug
        dev_real = scores - mean_full[stats.gidx]
        sq_real = segment_sum(dev_real * dev_real, stats.gidx, stats.num_groups)[groups]
        sq_virt = (((v - mean_aug.unsqueeze(1)) ** 2) * valid).sum(dim=1)
        var_aug = (sq_real + sq_virt) / (total - opts.ddof).clamp_min(1.0)
        std_full = torch.zeros_like(stats.mean)
        std_full[groups] = torch.sqrt(var_aug)
        aug_adv = dev_real / (std_full[stats.gidx] + opts.epsilon) if norm_by_std else dev_real
        adv = torch.where(augmented[stats.gidx], aug_adv, base)
        mean_k = float(k.mean())

    figures = {
        "avspo/acr": acr,
        "avspo/tau_adapt": float(threshold),
        "avspo/triggered": float(triggered),
        "avspo/k": mean_k,
        "avspo/augmented_frac": float(augmented.float().sum()) / n,
    }

    # Eq. 12: adapt the threshold for the next step
    mean_reward = float(scores.mean()) if scores.numel() else 0.0
    if opts.fixed_threshold is None and avspo_state.prev_mean_reward is not None:
        delta = mean_reward - avspo_state.prev_mean_reward
        sign = (delta > 0) - (delta < 0)
        lo, hi = opts.tau_bounds
        updated = avspo_state.tau_adapt + opts.eta * sign * (acr - avspo_state.tau_adapt)
        avspo_state.tau_adapt = float(min(max(updated, lo), hi))
    avspo_state.prev_mean_reward = mean_reward
    avspo_state.step += 1
    return adv, figures


@register_adv_est("avspo")
def compute_avspo_advantage(
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    index: Optional[np.ndarray] = None,
    config: Optional[Any] = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """AVSPO: adaptive virtual sample policy optimisation (ACR paper, Sec. 4, Alg. 1, Eq. 8-14).

    Stateful across calls: ``tau_adapt`` and ``J_{t-1}`` live in :mod:`rlvr_recipes.advantage.state` under ``"avspo"`` (saved and
    restored with checkpoints by the trainer extension). Options ``algorithm.avspo.*`` (:class:`AVSPOOptions`).
    See :func:`avspo_advantage`.

    Returns:
        ``(advantages, returns)``, both ``(bs, L)``.
    """
    opts = read_options(AVSPOOptions, config, "avspo")
    scores, stats = _prepare(token_level_rewards, index, opts.ddof)
    norm = norm_adv_by_std(config)
    base = base_advantage(scores, stats, norm, opts.epsilon)
    avspo_state = state.get_state("avspo", lambda: state.AVSPOState(tau_adapt=opts.tau_init))
    adv, figures = avspo_advantage(scores, stats, base, opts, avspo_state, norm)
    state.LAST_METRICS.update(figures)
    return _finish(adv, response_mask)


# ----------------------------------------------------------------------------------------------------------------
# AAPO (AAPO paper, Sec. 4, Eq. 4-6, Alg. 1)
# ----------------------------------------------------------------------------------------------------------------


@dataclass
class AAPOOptions:
    """``algorithm.aapo.*``.

    Attributes:
        delta_low: lower clip of the advantage margin (-0.2, Sec. 6).
        delta_high: upper clip (0.28).
        group_token_norm: fold Eq. 4's per-group token normalisation ``1 / sum_i |o_i|`` into the token-level
            advantages, so that verl's ``token-mean`` aggregation of the ``aapo``/``gpg`` loss equals Eq. 4 exactly
            (the mean over groups of each group's token-normalised sum). Off: plain token-mean over the batch.
        ddof: std convention of the base.
        epsilon: GRPO's epsilon.
    """

    delta_low: float = -0.2
    delta_high: float = 0.28
    group_token_norm: bool = True
    ddof: int = 1
    epsilon: float = GRPO_EPS

    def validate(self, section: str) -> None:
        require(
            self.delta_low <= self.delta_high,
            section,
            "delta_low",
            self.delta_low,
            f"delta_low must not exceed delta_high={self.delta_high}",
        )
        require(self.ddof in (0, 1), section, "ddof", self.ddof, "0 or 1")


def aapo_advantage(
    scores: torch.Tensor, ref_rewards: torch.Tensor, base: torch.Tensor, opts: AAPOOptions
) -> tuple[torch.Tensor, dict[str, float]]:
    """AAPO (Eq. 5): ``A*_i = Â_i + clip(r_i - r_ref_i, delta_low, delta_high)``, policy sample i paired with
    reference sample i of the same prompt.

    Returns:
        ``(advantages (bs,), figures)``: ``aapo/margin_mean`` (raw margin), ``aapo/margin_clip_frac`` (fraction of
        samples whose margin was clipped).
    """
    margin = scores - ref_rewards
    clipped = margin.clamp(opts.delta_low, opts.delta_high)
    figures = {
        "aapo/margin_mean": float(margin.mean()) if margin.numel() else 0.0,
        "aapo/margin_clip_frac": float((clipped != margin).float().mean()) if margin.numel() else 0.0,
    }
    return base + clipped, figures


@register_adv_est("aapo")
def compute_aapo_advantage(
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    index: Optional[np.ndarray] = None,
    config: Optional[Any] = None,
    ref_rewards: Optional[torch.Tensor] = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """AAPO: advantage margin against reference-model samples (AAPO paper, Eq. 5).

    Args:
        token_level_rewards: ``(bs, L)``.
        response_mask: ``(bs, L)``.
        index: ``(bs,)`` group ids.
        config: ``algorithm`` config; options ``algorithm.aapo.*`` (:class:`AAPOOptions`).
        ref_rewards: ``(bs,)`` reward of the reference-model response paired with each policy response. The stock
            verl trainer does not pass it: use this package's trainer extension (which reads them from the
            dataset's cached reference rewards or samples them), or call the function directly.

    Returns:
        ``(advantages, returns)``, both ``(bs, L)``; with ``group_token_norm`` the token-level advantages carry Eq.
        4's per-group token normaliser (see :class:`AAPOOptions`).
    """
    opts = read_options(AAPOOptions, config, "aapo")
    if ref_rewards is None:
        raise ValueError(
            "adv_estimator=aapo needs `ref_rewards` (bs,): the rewards of reference-model responses paired with the "
            "policy responses. Run with this package's trainer extension (trainer.v1.trainer_mode=rlvr, every "
            "recipe's default) and data carrying cached reference rewards (python -m rlvr_recipes.launch.ref_rewards ...), or pass ref_rewards."
        )
    scores, stats = _prepare(token_level_rewards, index, opts.ddof)
    ref = torch.as_tensor(ref_rewards, dtype=scores.dtype, device=scores.device).reshape(-1)
    if ref.numel() != scores.numel():
        raise ValueError(f"ref_rewards has {ref.numel()} entries but the batch has {scores.numel()} responses")
    check_finite(ref, "reference reward")
    base = base_advantage(scores, stats, norm_adv_by_std(config), opts.epsilon)
    adv, figures = aapo_advantage(scores, ref, base, opts)
    state.LAST_METRICS.update(figures)
    if opts.group_token_norm and response_mask.numel():
        # scale each response's scalar before broadcasting: one pass over the tokens, not two
        tokens_per_group = group_token_counts(response_mask, stats)
        factor = tokens_per_group.sum() / (stats.num_groups * tokens_per_group.clamp_min(1.0))
        adv = adv * factor[stats.gidx].to(adv.dtype)
    return _finish(adv, response_mask)


# ----------------------------------------------------------------------------------------------------------------
# Relative negative / positive gradients and W-REINFORCE (two-stage paper, Sec. 4, App. B.5)
# ----------------------------------------------------------------------------------------------------------------


@dataclass
class SignOptions:
    """``algorithm.grpo_n.*`` (shared by ``grpo_n`` and ``grpo_pos_only``)."""

    ddof: int = 1
    epsilon: float = GRPO_EPS

    def validate(self, section: str) -> None:
        require(self.ddof in (0, 1), section, "ddof", self.ddof, "0 or 1")


def negative_only(advantages: torch.Tensor) -> torch.Tensor:
    """GRPO-N / GSPO-N modifier (App. B.5): ``A' = A if A < 0 else 0``."""
    return advantages.clamp(max=0.0)


def positive_only(advantages: torch.Tensor) -> torch.Tensor:
    """Positive-only baseline: ``A' = A if A > 0 else 0``."""
    return advantages.clamp(min=0.0)


@register_adv_est("grpo_n")
def compute_grpo_n_advantage(
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    index: Optional[np.ndarray] = None,
    config: Optional[Any] = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """GRPO-N: only relative negative advantages (two-stage paper, Sec. 4, App. B.5).

    ``A'_i = min(Â_i, 0)`` on the GRPO (or Dr.GRPO) base. With ``actor_rollout_ref.actor.policy_loss.loss_mode=gspo``
    this is GSPO-N.
    """
    opts = read_options(SignOptions, config, "grpo_n")
    scores, stats = _prepare(token_level_rewards, index, opts.ddof)
    return _finish(negative_only(base_advantage(scores, stats, norm_adv_by_std(config), opts.epsilon)), response_mask)


@register_adv_est("grpo_pos_only")
def compute_grpo_pos_only_advantage(
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    index: Optional[np.ndarray] = None,
    config: Optional[Any] = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Positive-only baseline: ``A'_i = max(Â_i, 0)`` (the counterpart of GRPO-N, two-stage paper Sec. 4)."""
    opts = read_options(SignOptions, config, "grpo_n")
    scores, stats = _prepare(token_level_rewards, index, opts.ddof)
    return _finish(positive_only(base_advantage(scores, stats, norm_adv_by_std(config), opts.epsilon)), response_mask)


@dataclass
class WReinforceOptions:
    """``algorithm.w_reinforce.*``.

    Attributes:
        lam: weight of positive samples (0.1).
        reward_range: ``[r_lo, r_hi]``; a reward maps to ``s = 2 * (r - r_lo)/(r_hi - r_lo) - 1`` in ``[-1, 1]``.
    """

    lam: float = 0.1
    reward_range: list = field(default_factory=lambda: [0.0, 1.0])

    def validate(self, section: str) -> None:
        require(self.lam >= 0, section, "lam", self.lam, "lam >= 0")
        self.reward_range = list(check_range(section, "reward_range", self.reward_range))


@register_adv_est("w_reinforce")
def compute_w_reinforce_advantage(
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    index: Optional[np.ndarray] = None,
    config: Optional[Any] = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """W-REINFORCE baseline: REINFORCE on ``s = ±1`` rewards with positive samples weighted by ``lam``.

    ``A_i = lam * s_i`` if ``s_i > 0`` else ``s_i``, with ``s`` the reward mapped to ``[-1, 1]``; binary rewards give
    ``+lam`` for correct and ``-1`` for wrong responses. Not group-relative (``index`` is unused).
    """
    opts = read_options(WReinforceOptions, config, "w_reinforce")
    scores = outcome_scores(token_level_rewards)
    s = 2.0 * rescale_rewards(scores, tuple(opts.reward_range), "algorithm.w_reinforce.reward_range") - 1.0
    return _finish(torch.where(s > 0, opts.lam * s, s), response_mask)


#: Every estimator name this package registers.
ESTIMATORS = (
    "agrae",
    "agrae_pos_dominant",
    "agrae_neg_dominant",
    "agrae_hard_focused",
    "agrae_easy_focused",
    "avspo",
    "aapo",
    "grpo_n",
    "grpo_pos_only",
    "w_reinforce",
)

__all__ = [name for name in list(globals()) if name.startswith("compute_")] + [
    "ESTIMATORS",
    "AGRAEOptions",
    "AVSPOOptions",
    "AAPOOptions",
    "WReinforceOptions",
    "agrae_advantage",
    "avspo_advantage",
    "aapo_advantage",
    "negative_only",
    "positive_only",
]
