"""Small builders shared by the tests."""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np
import torch
from omegaconf import OmegaConf


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
