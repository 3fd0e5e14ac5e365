"""verl v1 trainer extension: diagnostics every step, context for estimators, per-group CW-GRPO, state on resume.

Select it with one key, ``trainer.v1.trainer_mode=rlvr`` (the recipe configs can set it). It is verl's synchronous
v1 trainer (``PPOTrainerSync``) with a different advantage step and checkpoint hooks:

- every step, for every estimator (verl's built-ins included), logs :func:`advantage.diagnostics.batch_diagnostics`
  (``acr/acr``, ``acr/effective_acr``, ``acr/zero_adv_frac`` ...), the ACR tracker's ``acr/volatility`` and
  ``acr/acr_100``, and the estimator's own figures (``avspo/tau_adapt`` ...), into verl's metrics (console, wandb,
  tensorboard, file);
- hands AAPO its paired ``ref_rewards`` (a per-response field of the batch) which verl's ``compute_advantage`` would
  drop;
- with ``algorithm.cw_grpo.per_group=true``, folds CW-GRPO's Gaussian covariance weights, computed per ``uid`` group
  from the old log-probs (the paper's form), into the token-level advantages; the actor then uses ``loss_mode=vanilla``;
- saves the estimator state (AVSPO's threshold and previous reward) and the ACR tracker as ``rlvr_state.json`` in each
  ``global_step_N`` checkpoint folder, and restores it on resume.

Why a registered trainer rather than a wrapper ``main``: verl chooses the trainer class inside its TaskRunner (a Ray
actor) by ``trainer.v1.trainer_mode``; registration through this package's ``verl.plugins`` entry point happens in
that process too, so the stock ``python -m verl.trainer.main_ppo`` keeps working and no second entry point is needed.

The logic is in :func:`advantage_step`, a pure function of a ``DataProto`` so that it is testable without Ray.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
import torch

from advantage import state
from advantage.core import group_index
from advantage.diagnostics import ACRTracker, batch_diagnostics
from advantage.losses import covariance_weights
from advantage.options import check_range, config_get, read_options, require

STATE_FILE = "rlvr_state.json"
TRAINER_NAME = "rlvr"


@dataclass
class CWGRPOOptions:
    """``algorithm.cw_grpo.*``: ``per_group`` folds per-group covariance weights into the advantages (paper form)."""

    per_group: bool = False

    def validate(self, section: str) -> None:
        require(isinstance(self.per_group, bool), section, "per_group", self.per_group, "true or false")


@dataclass
class DiagnosticsOptions:
    """``algorithm.diagnostics.*``: ``reward_range`` for the all-correct / all-wrong fractions."""

    reward_range: list = field(default_factory=lambda: [0.0, 1.0])

    def validate(self, section: str) -> None:
        self.reward_range = list(check_range(section, "reward_range", self.reward_range))


def advantage_step(
    data: Any,
    algo_config: Any,
    tracker: ACRTracker,
    num_repeat: int = 1,
    step: int = 0,
    batch_keys: Optional[list] = None,
) -> tuple[Any, dict[str, float]]:
    """Compute advantages for ``data`` and the figures to log.

    Args:
        data: a verl ``DataProto`` with ``token_level_rewards``, ``response_mask`` (``batch``) and ``uid``
            (``non_tensor_batch``); ``ref_rewards`` ``(bs,)`` (batch or non-tensor) for AAPO; ``old_log_probs`` for
            per-group CW-GRPO.
        algo_config: the ``algorithm`` config.
        tracker: the run's :class:`ACRTracker` (updated).
        num_repeat: ``rollout.n``, passed through to verl.
        step: the training step (seeds AAPO's draws from cached reference rewards).
        batch_keys: the TransferQueue keys of the rows (``{uid}_{session}_{index}``); when given, the advantages
            come from verl's ``compute_advantage_for_multi_trajectories`` exactly as in the stock v1 trainer
            (GRPO over each session's final turn), otherwise from ``compute_advantage``.

    Returns:
        ``(data, metrics)``: ``data.batch["advantages"]`` / ``["returns"]`` set.
    """
    from verl.trainer.ppo.core_algos import get_adv_estimator_fn
    from verl.trainer.ppo.ray_trainer import compute_advantage

    estimator = config_get(algo_config, "adv_estimator", "grpo")
    estimator = getattr(estimator, "value", estimator)
    uid = data.non_tensor_batch["uid"]
    mask = data.batch["response_mask"]
    if estimator == "aapo":
        ref = data.batch["ref_rewards"] if "ref_rewards" in data.batch.keys() else data.non_tensor_batch.get("ref_rewards")
        if ref is None and "extra_info" in data.non_tensor_batch:
            ref = draw_ref_rewards(data.non_tensor_batch["extra_info"], uid, step=step)
        if ref is None:
            raise ValueError(
                "adv_estimator=aapo needs each response's paired reference reward in the batch field 'ref_rewards'; "
                "prepare the data with `python -m launch.ref_rewards` (docs/trainer.md)"
            )
        adv, ret = get_adv_estimator_fn("aapo")(
            token_level_rewards=data.batch["token_level_rewards"],
            response_mask=mask,
            index=uid,
            config=algo_config,
            ref_rewards=torch.as_tensor(np.asarray(ref, dtype=np.float32)),
        )
        data.batch["advantages"], data.batch["returns"] = adv, ret
    elif batch_keys is not None:
        from verl.trainer.ppo.v1.utils import compute_advantage_for_multi_trajectories

        data = compute_advantage_for_multi_trajectories(
            data,
            batch_keys=batch_keys,
            adv_estimator=config_get(algo_config, "adv_estimator", "grpo"),
            gamma=float(config_get(algo_config, "gamma", 1.0)),
            lam=float(config_get(algo_config, "lam", 1.0)),
            num_repeat=num_repeat,
            norm_adv_by_std_in_grpo=bool(config_get(algo_config, "norm_adv_by_std_in_grpo", True)),
            config=algo_config,
        )
    else:
        data = compute_advantage(
            data,
            adv_estimator=estimator,
            num_repeat=num_repeat,
            norm_adv_by_std_in_grpo=bool(config_get(algo_config, "norm_adv_by_std_in_grpo", True)),
            config=algo_config,
        )
    metrics: dict[str, float] = {}
    if read_options(CWGRPOOptions, algo_config, "cw_grpo").per_group:
        if "old_log_probs" not in data.batch.keys():
            raise ValueError("algorithm.cw_grpo.per_group=true needs old_log_probs in the batch")
        gidx, n = group_index(uid, device=mask.device)
        weights, figures = covariance_weights(data.batch["old_log_probs"], data.batch["advantages"], mask, gidx, n)
        data.batch["advantages"] = data.batch["advantages"] * weights
        data.batch["returns"] = data.batch["advantages"]
        metrics.update(figures)
    diag = read_options(DiagnosticsOptions, algo_config, "diagnostics")
    scores = data.batch["token_level_rewards"].sum(dim=-1)
    metrics.update(batch_diagnostics(scores, uid, data.batch["advantages"], mask, tuple(diag.reward_range)))
    metrics.update(tracker.update(metrics["acr/acr"]))
    metrics.update(state.pop_metrics())
    return data, metrics


def draw_ref_rewards(extra_info: Any, uid: Any, step: int, seed: int = 0) -> Optional[np.ndarray]:
    """Paired reference rewards drawn from each prompt's cache (``extra_info["ref_rewards"]``, M per prompt, written
    by ``python -m launch.ref_rewards``).

    The G responses of a prompt get G distinct cached rewards: a random permutation of the cache per prompt, drawn
    for the whole batch at once from ``(seed, step)`` so that a run is reproducible. Returns None when the rows carry
    no cache.

    Args:
        extra_info: ``(bs,)`` per-response dicts with ``ref_rewards`` (list).
        uid: ``(bs,)`` group labels.
        step: training step (fresh draws each step).
    """
    infos = list(extra_info)
    if not infos or not all(isinstance(e, dict) and "ref_rewards" in e for e in infos):
        return None
    gidx, n = group_index(uid)
    gidx = gidx.numpy()
    order = np.argsort(gidx, kind="stable")
    first = np.searchsorted(gidx[order], np.arange(n))  # position in `order` of each group's first response
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order)) - first[gidx[order]]  # position of each response within its group
    caches = [np.asarray(infos[i]["ref_rewards"], dtype=np.float32) for i in order[first]]
    sizes = np.array([c.size for c in caches])
    counts = np.bincount(gidx, minlength=n)
    short = np.nonzero(sizes < counts)[0]
    if short.size:
        g = int(short[0])
        raise ValueError(
            f"prompt {infos[order[first[g]]].get('index', g)} has {sizes[g]} cached reference rewards but {counts[g]} "
            f"responses; sample at least rollout.n with python -m launch.ref_rewards --samples"
        )
    table = np.full((n, int(sizes.max())), np.nan, dtype=np.float32)
    for g, c in enumerate(caches):  # building the (N, M) table: one row per prompt group
        table[g, : c.size] = c
    keys = np.random.default_rng([seed, step]).random(table.shape)
    keys[np.isnan(table)] = np.inf  # padding sorts last, never drawn
    perm = np.argsort(keys, axis=1)
    return table[gidx, perm[gidx, rank]]


def save_state(folder: str, tracker: ACRTracker) -> str:
    """Write the estimator state and the tracker to ``folder/rlvr_state.json``; returns the path."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, STATE_FILE)
    with open(path, "w") as f:
        json.dump({"estimators": state.state_dict(), "acr_tracker": tracker.state_dict()}, f, indent=1)
    return path


def load_state(folder: str, tracker: ACRTracker) -> bool:
    """Restore what :func:`save_state` wrote; False (and nothing changed) when the folder has no state file."""
    path = os.path.join(folder, STATE_FILE)
    if not os.path.exists(path):
        return False
    with open(path) as f:
        saved = json.load(f)
    state.load_state_dict(saved["estimators"])
    tracker.load_state_dict(saved["acr_tracker"])
    return True


def register() -> None:
    """Register :class:`RLVRTrainer` under ``trainer.v1.trainer_mode=rlvr`` (idempotent)."""
    from verl.trainer.ppo.v1.trainer_base import TRAINER_REGISTRY

    if TRAINER_NAME in TRAINER_REGISTRY:
        return
    from verl.trainer.ppo.v1 import trainer_base
    from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync

    class RLVRTrainer(PPOTrainerSync):
        """verl's sync v1 trainer with this package's advantage step and state checkpointing."""

        def __init__(self, config, *args, **kwargs):
            from omegaconf import open_dict

            # The name "rlvr" only selects this class; everything else in verl must see the sync trainer mode
            # (its replay buffer and per-mode settings are chosen by that name).
            with open_dict(config):
                config.trainer.v1.trainer_mode = "sync"
            self.acr_tracker = ACRTracker()
            super().__init__(config, *args, **kwargs)

        def _compute_advantage(self, batch, metrics: dict):
            tq = trainer_base.tq
            from tensordict import TensorDict
            from verl import DataProto

            # verl's own field list (trainer_base._compute_advantage) plus AAPO's per-response reference rewards
            fields = ["uid", "response_mask", "rm_scores", "rollout_log_probs", "old_log_probs", "ref_log_prob",
                      "values"]
            if self.config.algorithm.adv_estimator == "aapo":
                # a per-response field, or the prompt's cache: verl's agent loop stores every dataset column of
                # the prompt (extra_info included) with each response; absent fields are skipped by kv_batch_get
                fields += ["ref_rewards", "extra_info"]
            data = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id, select_fields=fields)
            response_mask = data["response_mask"]
            data = DataProto(batch=data.to_padded_tensor())
            data.batch["token_level_scores"] = data.batch["rm_scores"]
            data.non_tensor_batch["uid"] = np.array(data.batch.pop("uid").tolist(), dtype=object)
            if "extra_info" in data.batch.keys():
                data.non_tensor_batch["extra_info"] = np.array(data.batch.pop("extra_info").tolist(), dtype=object)
            if self.config.algorithm.use_kl_in_reward:
                data, kl_metrics = trainer_base.apply_kl_penalty(
                    data, kl_ctrl=self.kl_ctrl_in_reward, kl_penalty=self.config.algorithm.kl_penalty
                )
                metrics.update(kl_metrics)
            else:
                data.batch["token_level_rewards"] = data.batch["token_level_scores"]
            rollout_corr = self.config.algorithm.get("rollout_correction", None)
            rollout_correction = (
                rollout_corr is not None
                and "rollout_log_probs" in data.batch.keys()
                and not rollout_corr.get("bypass_mode", False)
            )
            if rollout_correction:
                data, is_metrics = trainer_base.compute_rollout_correction_and_add_to_batch(data, rollout_corr)
                metrics.update(is_metrics)
            data, step_metrics = advantage_step(
                data,
                self.config.algorithm,
                self.acr_tracker,
                self.config.actor_rollout_ref.rollout.n,
                self.global_steps,
                batch_keys=list(batch.keys),
            )
            metrics.update(step_metrics)
            out = ["advantages", "returns"] + (["token_level_rewards"] if self.config.algorithm.use_kl_in_reward else [])
            if rollout_correction:
                out += ["response_mask"] + (["rollout_is_weights"] if "rollout_is_weights" in data.batch.keys() else [])
            output = TensorDict(
                {f: trainer_base.response_to_nested(data.batch[f], response_mask) for f in out}, batch_size=len(batch)
            )
            return tq.kv_batch_put(keys=batch.keys, partition_id=batch.partition_id, fields=output)

        def _save_checkpoint(self):
            super()._save_checkpoint()
            folder = os.path.join(self.config.trainer.default_local_dir, f"global_step_{self.global_steps}")
            save_state(folder, self.acr_tracker)

        def _load_checkpoint(self):
            result = super()._load_checkpoint()
            if self.global_steps:  # verl resumed from global_step_N: the same folder _save_checkpoint wrote
                if self.config.trainer.resume_mode == "resume_path":
                    folder = self.config.trainer.resume_from_path
                else:
                    folder = os.path.join(self.config.trainer.default_local_dir, f"global_step_{self.global_steps}")
                if not load_state(folder, self.acr_tracker):
                    print(f"[rlvr] no {STATE_FILE} in {folder}: estimator state starts fresh", flush=True)
            return result

    trainer_base.register_trainer(TRAINER_NAME)(RLVRTrainer)
