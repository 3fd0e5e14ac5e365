"""Policy losses registered with verl (``actor_rollout_ref.actor.policy_loss.loss_mode=<name>``).

- ``cw_grpo``: CW-GRPO, the clipped surrogate with Gaussian covariance weights on the advantages (CW-GRPO paper,
  Sec. 2.3). Inside a verl actor micro-batch the group ids are not at hand, so this loss takes the statistics over
  the micro-batch, as verl's ``clip_cov`` does. The paper's per-group form is available by folding
  :func:`covariance_weights` (with ``uid`` and old log-probs) into the advantages before the update, which this
  package's trainer extension does (``algorithm.cw_grpo.per_group=True``) together with the plain ``vanilla`` loss.
- ``aapo``: AAPO's loss (AAPO paper, Eq. 4): ``-log pi * A*`` with no ratio and no clipping. This is verl's ``gpg``
  loss; with ``loss_agg_mode=token-mean`` and the ``aapo`` estimator's ``group_token_norm`` it equals Eq. 4's
  per-group token normalisation exactly.

Shapes: ``(bs, L)`` token tensors.
"""

from __future__ import annotations

import logging
from typing import Any, Optional

import torch
from verl.trainer.ppo.core_algos import (
    compute_policy_loss_gpg,
    compute_policy_loss_vanilla,
    register_policy_loss,
)

from rlvr_recipes.advantage.core import masked_group_mean

logger = logging.getLogger(__name__)


def covariance_weights(
    log_prob: torch.Tensor,
    advantages: torch.Tensor,
    response_mask: torch.Tensor,
    row_gidx: Optional[torch.Tensor] = None,
    num_groups: int = 1,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Normalised Gaussian covariance weights ``w~`` (CW-GRPO paper, Sec. 2.3).

    Per group (or over the whole batch when ``row_gidx`` is None), over its valid tokens:

    - ``c_it = (log pi(o_it) - mean log pi) * (Â_i - mean Â)`` (means over the group's valid tokens);
    - ``sigma = std(c)`` (population std over the valid tokens); ``w_it = exp(-c_it^2 / (2 sigma^2))``, and
      ``w = 1`` where ``sigma = 0``;
    - ``w~_it = w_it * N / sum w`` with ``N`` the group's valid-token count, so that the mean weight is 1.

    Weights are detached (no gradient flows through them).

    Args:
        log_prob: ``(bs, L)`` token log-probs.
        advantages: ``(bs, L)`` token-level advantages (``Â_i`` broadcast over the response).
        response_mask: ``(bs, L)``.
        row_gidx: ``(bs,)`` dense group id per response, or None for one group.
        num_groups: number of groups (ignored when ``row_gidx`` is None).

    Returns:
        ``(w~ (bs, L), figures)``; ``w~`` is 0 on padding. Figures: ``cw_grpo/weight_min``, ``weight_max``,
        ``weight_mean``, ``downweighted_frac`` (``w~ < 0.5``), ``sigma_mean``.
    """
    with torch.no_grad():
        mask = response_mask.to(torch.float32)
        lp = log_prob.detach().float()
        adv = advantages.detach().float()
        if row_gidx is None:
            groups = 1
            row = torch.zeros(lp.shape[0], dtype=torch.long, device=lp.device)
        else:
            groups = num_groups
            row = row_gidx.to(device=lp.device, dtype=torch.long)
        mean_lp = masked_group_mean(lp, mask, row, groups)[row].unsqueeze(-1)
        mean_adv = masked_group_mean(adv, mask, row, groups)[row].unsqueeze(-1)
        cov = (lp - mean_lp) * (adv - mean_adv) * mask
        mean_cov = masked_group_mean(cov, mask, row, groups)
        var = masked_group_mean((cov - mean_cov[row].unsqueeze(-1)) ** 2, mask, row, groups)
        sigma = torch.sqrt(var)
        sig = sigma[row].unsqueeze(-1)
        w = torch.where(sig > 0, torch.exp(-(cov**2) / (2.0 * sig.clamp_min(1e-30) ** 2)), torch.ones_like(cov))
        w = w * mask
        w_sum = masked_group_mean(w, mask, row, groups)  # = sum w / N per group
        w_tilde = torch.where(w_sum[row].unsqueeze(-1) > 0, w / w_sum[row].unsqueeze(-1).clamp_min(1e-30), mask)
        w_tilde = w_tilde * mask
        valid = mask > 0
        vals = w_tilde[valid]
        figures = {
            "cw_grpo/weight_min": float(vals.min()) if vals.numel() else 1.0,
            "cw_grpo/weight_max": float(vals.max()) if vals.numel() else 1.0,
            "cw_grpo/weight_mean": float(vals.mean()) if vals.numel() else 1.0,
            "cw_grpo/downweighted_frac": float((vals < 0.5).float().mean()) if vals.numel() else 0.0,
            "cw_grpo/sigma_mean": float(sigma.mean()) if sigma.numel() else 0.0,
        }
    return w_tilde.to(advantages.dtype), figures


@register_policy_loss("cw_grpo")
def compute_policy_loss_cw_grpo(
    old_log_prob: torch.Tensor,
    log_prob: torch.Tensor,
    advantages: torch.Tensor,
    response_mask: torch.Tensor,
    loss_agg_mode: str = "token-mean",
    config: Optional[Any] = None,
    rollout_is_weights: Optional[torch.Tensor] = None,
) -> tuple[torch.Tensor, dict[str, Any]]:
    """CW-GRPO loss: verl's clipped surrogate (``vanilla``) with ``w~_it * Â_i`` in place of ``Â_i``.

    Scope: the covariance statistics are taken over the rows of one rank's micro-batch (``ppo_micro_batch_size_per_gpu``
    rows, or a dynamic token budget), not over the paper's group (Sec. 2.3). The recipe's per-group form is the
    trainer extension's (``algorithm.cw_grpo.per_group=True``, module docstring); this loss is the fallback. Its
    figures are logged as ``cw_grpo/micro_batch_mean/*``: verl averages them over micro-batches and ranks, so
    ``weight_min``/``weight_max`` there are means of per-micro-batch extremes. No hyperparameters beyond the usual
    clip ranges from ``config``.

    Args:
        old_log_prob: ``(bs, L)``.
        log_prob: ``(bs, L)`` current log-probs (used detached for the weights).
        advantages: ``(bs, L)``.
        response_mask: ``(bs, L)``.
        loss_agg_mode: verl's aggregation mode.
        config: the actor config (clip ratios, global batch info).
        rollout_is_weights: optional rollout-correction weights, applied as in ``vanilla``.

    Returns:
        ``(loss, metrics)``: vanilla's metrics plus the weight figures of :func:`covariance_weights`.
    """
    weights, figures = covariance_weights(log_prob, advantages, response_mask)
    # verl 0.9.1 averages every policy-loss figure over micro-batches and ranks (workers/utils/losses.py wraps them
    # as Metric(aggregation=MEAN)): the logged min and max are means of per-micro-batch extremes, named as such.
    figures = {k.replace("cw_grpo/", "cw_grpo/micro_batch_mean/"): v for k, v in figures.items()}
    loss, metrics = compute_policy_loss_vanilla(
        old_log_prob=old_log_prob,
        log_prob=log_prob,
        advantages=advantages * weights,
        response_mask=response_mask,
        loss_agg_mode=loss_agg_mode,
        config=config,
        rollout_is_weights=rollout_is_weights,
    )
    metrics.update(figures)
    return loss, metrics


_warned_agg = False


@register_policy_loss("aapo")
def compute_policy_loss_aapo(
    old_log_prob: torch.Tensor,
    log_prob: torch.Tensor,
    advantages: torch.Tensor,
    response_mask: torch.Tensor,
    loss_agg_mode: str = "token-mean",
    config: Optional[Any] = None,
    rollout_is_weights: Optional[torch.Tensor] = None,
) -> tuple[torch.Tensor, dict[str, Any]]:
    """AAPO's cross-entropy loss (AAPO paper, Eq. 4): ``-log pi(o_it) * A*_i``, no ratio, no clipping.

    Identical to verl's ``gpg`` loss, which it calls; registered under its own name so that a recipe says what it
    runs. Eq. 4 divides each group's token sum by the group's token count: use ``loss_agg_mode=token-mean`` with
    the ``aapo`` estimator's ``group_token_norm`` (default on) for that exact normalisation.
    """
    global _warned_agg
    if loss_agg_mode != "token-mean" and not _warned_agg:
        logger.warning(
            "policy_loss.loss_mode=aapo with loss_agg_mode=%s: AAPO's Eq. 4 normalisation needs token-mean",
            loss_agg_mode,
        )
        _warned_agg = True
    return compute_policy_loss_gpg(
        old_log_prob=old_log_prob,
        log_prob=log_prob,
        advantages=advantages,
        response_mask=response_mask,
        loss_agg_mode=loss_agg_mode,
        config=config,
        rollout_is_weights=rollout_is_weights,
    )


LOSSES = ("cw_grpo", "aapo")
