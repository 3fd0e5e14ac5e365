"""Small builders shared by the tests."""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

import numpy as np
import torch
from omegaconf import OmegaConf


# The named variants on the group [1, 0, 0, 0] (p = 1/4), worked out by hand from GRPO's advantages
# [1.5, -0.5, -0.5, -0.5]: A-GRAE's Table 1 controls (paper 001, beta = 10, gamma = 0.5) and GRPO-N's positive-only
# control (paper 004). tests/test_estimators.py checks them on the estimators, tests/test_trainer_step.py through
# the trainer's advantage step by name.
VARIANTS_ON_1000: dict[str, list[float]] = {
    "agrae_pos_dominant": [15.0, -0.5, -0.5, -0.5],  # beta * A_pos
    "agrae_neg_dominant": [0.15, -0.5, -0.5, -0.5],  # A_pos / beta
    "agrae_hard_focused": [0.5 * 1.5 / 0.5, -0.5, -0.5, -0.5],  # gamma * A / sqrt(p)
    "agrae_easy_focused": [0.5 * 1.5 / math.sqrt(0.75)] + [-0.25 / math.sqrt(0.75)] * 3,  # gamma * A / sqrt(1 - p)
    "grpo_pos_only": [1.5, 0.0, 0.0, 0.0],  # the negative advantages dropped
}


def batch(groups: Sequence[Sequence[float]], length: int = 3) -> tuple[torch.Tensor, torch.Tensor, np.ndarray]:
    """verl-style inputs for groups of scalar rewards: token rewards on the last token, full masks, uid strings."""
    rewards = [r for g in groups for r in g]
    bs = len(rewards)
    tlr = torch.zeros(bs, length)
    tlr[:, -1] = torch.tensor(rewards, dtype=torch.float32)
    mask = torch.ones(bs, length)
    uid = np.array([f"q{j}" for j, g in enumerate(groups) for _ in g], dtype=object)
    return tlr, mask, uid


def algo(section: Optional[str] = None, norm_adv_by_std_in_grpo: bool = True, **options: Any):
    """An ``algorithm`` DictConfig as the trainer passes it, with options under ``algorithm.<section>``."""
    cfg: dict[str, Any] = {"adv_estimator": section or "grpo", "norm_adv_by_std_in_grpo": norm_adv_by_std_in_grpo}
    if section is not None:
        cfg[section] = options
    return OmegaConf.create(cfg)


def run(name: str, groups, config=None, **kwargs) -> torch.Tensor:
    """Call the registered estimator ``name`` and return the per-response advantage (first token)."""
    import verl  # noqa: F401  (plugin registration)
    from verl.trainer.ppo.core_algos import get_adv_estimator_fn

    tlr, mask, uid = batch(groups)
    adv, ret = get_adv_estimator_fn(name)(
        token_level_rewards=tlr, response_mask=mask, index=uid, config=config, **kwargs
    )
    assert adv.shape == tlr.shape and torch.equal(adv, ret)
    assert torch.equal(adv[:, 0], adv[:, -1])
    return adv[:, 0]
