"""The toy softmax bandit of the two-stage paper (App. C.1, Algorithm 1), driven by any registered estimator.

Each of ``P`` independent "prompts" is a row of logits ``z`` over ``A`` actions with fixed true rewards ``r``. Each step
samples ``G`` actions per prompt from ``pi = softmax(z)``, asks the registered verl estimator for their advantages
(``get_adv_estimator_fn(name)`` with one token per response and the prompt as ``uid``), and takes the Algorithm 1
step: the gradient ``g[a_i] += (1 - pi[a_i]) A_i``, ``g[a_j] -= pi[a_j] A_i`` (``j != a_i``) is the gradient of
``sum_i A_i log pi(a_i)``, applied with Adam as ``z <- z + eta * Adam(g / G)``. With GRPO's ``A = r - mean`` (Dr.GRPO
base, as in Algorithm 1) this is the paper's toy; any other estimator of this package drops in unchanged.

Tracked per step: the optimal action's probability, the policy entropy, and ACR (rlvr_recipes.advantage.diagnostics).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
import torch
from omegaconf import OmegaConf

import verl  # noqa: F401  (registers this package's estimators)
from rlvr_recipes.advantage import state
from rlvr_recipes.advantage.diagnostics import batch_diagnostics
from verl.trainer.ppo.core_algos import get_adv_estimator_fn


@dataclass
class BanditSetting:
    """A toy setting. Defaults: the paper's scenario of Remark 3 with three actions: a low-reward action and an
    explored high-reward action hold most of the mass, the optimal action starts in the tail.

    Attributes:
        rewards: true reward of each action (in [0, 1]).
        init_probs: initial policy.
        group_size: G (2 in the paper's demonstration).
        lr: Adam learning rate eta (0.1 in the paper).
        steps: optimisation steps.
        prompts: independent copies per run (separate ``uid`` rows, so that ACR is a batch fraction).
        norm_adv_by_std: GRPO (True) or Algorithm 1's ``r - mean`` (False) base.
    """

    rewards: list = field(default_factory=lambda: [0.0, 0.7, 1.0])
    init_probs: list = field(default_factory=lambda: [0.50, 0.48, 0.02])
    group_size: int = 2
    lr: float = 0.1
    steps: int = 300
    prompts: int = 16
    norm_adv_by_std: bool = False


def _algo_config(estimator: str, setting: BanditSetting, options: Optional[dict]) -> Any:
    cfg: dict[str, Any] = {"adv_estimator": estimator, "norm_adv_by_std_in_grpo": setting.norm_adv_by_std}
    cfg.update(options or {})
    return OmegaConf.create(cfg)


def run_bandit(
    estimator: str, setting: BanditSetting, seed: int = 0, options: Optional[dict] = None
) -> dict[str, np.ndarray]:
    """Train ``setting.prompts`` bandits with ``estimator``; return per-step curves averaged over prompts.

    Args:
        estimator: a registered verl estimator name (``grpo``, ``grpo_n``, ``agrae``, ``avspo``, ``aapo`` ...).
        setting: the toy.
        seed: RNG seed of the action samples.
        options: extra ``algorithm`` config, e.g. ``{"agrae": {"alpha": 0.5}}``.

    Returns:
        ``{"p_opt": (steps,), "entropy": (steps,), "acr": (steps,), "reward": (steps,)}``.
    """
    state.reset()
    fn = get_adv_estimator_fn(estimator)
    config = _algo_config(estimator, setting, options)
    gen = torch.Generator().manual_seed(seed)
    rewards = torch.tensor(setting.rewards, dtype=torch.float32)
    opt = int(torch.argmax(rewards))
    P, G = setting.prompts, setting.group_size
    init_logits = torch.log(torch.tensor(setting.init_probs, dtype=torch.float32))
    init_probs = torch.softmax(init_logits, dim=-1)
    z = init_logits.repeat(P, 1).clone().requires_grad_(True)
    adam = torch.optim.Adam([z], lr=setting.lr)
    uid = np.repeat(np.arange(P), G)
    mask = torch.ones(P * G, 1)
    curves = {k: np.zeros(setting.steps) for k in ("p_opt", "entropy", "acr", "reward")}
    for t in range(setting.steps):
        logp = torch.log_softmax(z, dim=-1)  # (P, A)
        pi = logp.exp().detach()
        actions = torch.multinomial(pi, G, replacement=True, generator=gen)  # (P, G)
        r = rewards[actions].reshape(-1, 1)
        extra = {}
        if estimator == "aapo":  # reference = the frozen initial policy, sampled each step, paired by position
            ref_actions = torch.multinomial(init_probs.expand(P, -1), G, replacement=True, generator=gen)
            extra["ref_rewards"] = rewards[ref_actions].reshape(-1)
        adv, _ = fn(token_level_rewards=r, response_mask=mask, index=uid, config=config, **extra)
        adv = adv.reshape(P, G)
        chosen = logp.gather(1, actions)  # (P, G)
        loss = -(adv * chosen).sum() / G  # gradient = -(sum_i A_i grad log pi(a_i)) / G, Algorithm 1
        adam.zero_grad()
        loss.backward()
        adam.step()
        curves["p_opt"][t] = float(pi[:, opt].mean())
        curves["entropy"][t] = float(-(pi * pi.clamp_min(1e-12).log()).sum(-1).mean())
        curves["acr"][t] = batch_diagnostics(r.reshape(-1), uid)["acr/acr"]
        curves["reward"][t] = float(r.mean())
    return curves


def run_many(
    estimator: str, setting: BanditSetting, seeds: int = 5, options: Optional[dict] = None
) -> dict[str, np.ndarray]:
    """:func:`run_bandit` over ``seeds`` seeds: ``{name: (seeds, steps)}``."""
    runs = [run_bandit(estimator, setting, seed, options) for seed in range(seeds)]
    return {k: np.stack([r[k] for r in runs]) for k in runs[0]}
