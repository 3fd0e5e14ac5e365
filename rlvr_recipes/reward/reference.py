"""AAPO's reference-reward cache: M reference responses per prompt scored by the training reward, stored with the
dataset as ``extra_info["ref_rewards"]`` (AAPO Eq. 5 pairs G of them with the G policy responses).

Written by ``python -m rlvr_recipes.launch.ref_rewards`` (and by :mod:`rlvr_recipes.tiny_task.build` for the embedded task); read by the trainer
extension (:func:`rlvr_recipes.trainer.extension.draw_ref_rewards`).
"""

from __future__ import annotations

import json
import math
from typing import Any, Callable, Optional, Sequence

import pandas as pd


def _score(fn: Callable[..., object], data_source: str, response: str, truth: str, extra: dict, kwargs: dict) -> float:
    out = fn(data_source=data_source, solution_str=response, ground_truth=truth, extra_info=extra, **kwargs)
    return float(out["score"] if isinstance(out, dict) else out)


def attach_ref_rewards(
    df: pd.DataFrame,
    responses: Sequence[Sequence[str]],
    reward_fn: Callable[..., object],
    reward_kwargs: Optional[dict] = None,
) -> pd.DataFrame:
    """Score ``responses[i]`` (M strings) for row i with ``reward_fn(..., **reward_kwargs)`` (as verl calls the
    training reward) and store them as ``extra_info["ref_rewards"]``."""
    if len(responses) != len(df):
        raise ValueError(f"{len(responses)} response lists for {len(df)} prompts")
    out = df.copy()
    infos = []
    for i, (info, source, rm, resp) in enumerate(zip(df["extra_info"], df["data_source"], df["reward_model"], responses)):
        info = dict(info) if isinstance(info, dict) else {"index": i}
        info.setdefault("index", i)
        info["ref_rewards"] = [_score(reward_fn, source, r, rm["ground_truth"], info, reward_kwargs or {}) for r in resp]
        infos.append(info)
        if (i + 1) % 100 == 0:
            print(f"[ref_rewards] scored {i + 1}/{len(df)} prompts", flush=True)
    out["extra_info"] = infos
    return out


#: The parquet key-value metadata entry holding the settings a cache was sampled and scored with.
SETTINGS_KEY = b"rlvr_ref_settings"


def reference_settings(config: Any) -> dict[str, Any]:
    """What a reference sample must share with the policy's rollouts, read from a composed training config: the reward
    (verl's ``reward.custom_reward_function`` path, name and ``reward_kwargs``), the length limit
    (``data.max_response_length``) and the sampling settings (``actor_rollout_ref.rollout`` temperature, top_p, top_k).

    AAPO pairs each policy response with a reference response scored by the same reward (002 Sec. 4, Eq. 5); a cache
    scored differently gives every correct policy sample a margin the reference never had a chance at.
    """
    from omegaconf import OmegaConf

    fn = config.reward.custom_reward_function
    rollout = config.actor_rollout_ref.rollout
    kwargs = fn.get("reward_kwargs", None)
    return {
        "reward_path": None if fn.get("path", None) is None else str(fn.path),
        "reward_name": str(fn.get("name", "compute_score")),
        "reward_kwargs": OmegaConf.to_container(kwargs, resolve=True) if kwargs is not None else {},
        "max_response_length": int(config.data.max_response_length),
        "temperature": float(rollout.temperature),
        "top_p": float(rollout.get("top_p", 1.0)),
        "top_k": int(rollout.get("top_k", -1)),
    }


def settings_reward(settings: dict[str, Any]) -> Callable[..., Any]:
    """The reward function a :func:`reference_settings` dict names (its ``reward_path``, a file or ``pkg://module``,
    and ``reward_name``), loaded as verl's trainer loads ``reward.custom_reward_function``; without a path, this
    package's math reward (``rlvr_recipes.reward.math_reward.compute_score``, the recipes' default in
    ``configs/base/rlvr.yaml``)."""
    if not settings["reward_path"]:
        from rlvr_recipes.reward.math_reward import compute_score

        return compute_score
    from verl.utils.import_utils import load_extern_object

    return load_extern_object(module_path=settings["reward_path"], object_name=settings["reward_name"])


def write_cache(df: pd.DataFrame, path: str, settings: dict[str, Any], samples: int) -> None:
    """Write the cache ``df`` to parquet with ``settings`` (and M = ``samples``) in the file's metadata."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(df, preserve_index=False)
    meta = dict(table.schema.metadata or {})
    meta[SETTINGS_KEY] = json.dumps({**settings, "samples": int(samples)}, sort_keys=True).encode()
    pq.write_table(table.replace_schema_metadata(meta), path)


def read_cache_settings(path: str) -> Optional[dict[str, Any]]:
    """The settings :func:`write_cache` recorded in ``path``, or None when the file has none."""
    import pyarrow.parquet as pq

    meta = pq.read_schema(path).metadata or {}
    return json.loads(meta[SETTINGS_KEY]) if SETTINGS_KEY in meta else None


def check_cache_settings(path: str, run: dict[str, Any]) -> dict[str, Any]:
    """Refuse a cache whose reward, length limit or sampling differ from the training run's (``run``, from
    :func:`reference_settings`); returns the recorded settings.

    Raises:
        ValueError: naming the file, each differing setting with both values, and the command that rewrites it.
    """
    recorded = read_cache_settings(path)
    if recorded is None:
        raise ValueError(
            f"{path} holds reference rewards but no record of how they were sampled and scored; rewrite it with "
            f"`python -m rlvr_recipes.launch.ref_rewards --config-name <recipe> -- <the run's overrides>`"
        )
    diff = {k: (recorded.get(k), v) for k, v in run.items() if recorded.get(k) != v}
    if diff:
        lines = "; ".join(f"{k}: cache {a!r}, training run {b!r}" for k, (a, b) in sorted(diff.items()))
        raise ValueError(
            f"AAPO reference cache {path} was sampled or scored differently from this run ({lines}); rewrite it "
            f"with `python -m rlvr_recipes.launch.ref_rewards --config-name <recipe> -- <the run's overrides>`"
        )
    return recorded


def planned_epochs(config: Any, num_prompts: int) -> float:
    """Passes over ``num_prompts`` the run will make: ``trainer.total_epochs``, or fewer when
    ``trainer.total_training_steps`` steps of ``data.train_batch_size`` prompts end it first."""
    epochs = float(config.trainer.total_epochs)
    steps = config.trainer.get("total_training_steps", None)
    if steps is not None and num_prompts > 0:
        epochs = min(epochs, float(math.ceil(int(steps) * int(config.data.train_batch_size) / num_prompts)))
    return epochs


def check_training_run(config: Any, train_files: Sequence[str]) -> list[str]:
    """At the start of an AAPO run: every train file that carries cached reference rewards must have been written
    with this run's reward, length limit and sampling (:func:`check_cache_settings`, raises otherwise); returns the
    reuse warnings (:func:`reuse_warning`) for files whose M < G x epochs."""
    import pyarrow.parquet as pq

    run = reference_settings(config)
    warnings = []
    for path in train_files:
        recorded = read_cache_settings(path)
        if recorded is None:
            first = pd.read_parquet(path, columns=["extra_info"]).head(1) if "extra_info" in pq.read_schema(path).names else None
            if first is None or first.empty or not isinstance(first["extra_info"].iloc[0], dict) \
                    or "ref_rewards" not in first["extra_info"].iloc[0]:
                continue  # no cache in this file: the rewards come per response, or the run fails naming them
        recorded = check_cache_settings(path, run)
        message = reuse_warning(int(recorded["samples"]), int(config.actor_rollout_ref.rollout.n),
                                planned_epochs(config, pq.read_metadata(path).num_rows))
        if message:
            warnings.append(f"{path}: {message}")
    return warnings


def reuse_warning(samples: int, group_size: int, epochs: float) -> Optional[str]:
    """A warning when M cached samples per prompt cannot give G fresh ones in each of ``epochs`` passes, else None.

    With ``M >= G x epochs`` no prompt's reference sample is drawn twice over the run, so the cache is the paper's
    per-step sampling of the frozen reference in distribution (002 Sec. 4), at a fraction of its cost (Table 4).
    """
    need = int(math.ceil(group_size * epochs))
    if samples >= need:
        return None
    return (f"the reference cache holds M={samples} samples per prompt but the run draws G={group_size} per prompt in "
            f"each of {epochs:g} epochs ({need}): reference samples will be reused; sample M >= {need}")
