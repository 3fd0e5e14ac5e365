"""Bad data stops the run with a message naming the file, row or sample, never a silent 0 or a NaN advantage.

Two places:

- :func:`check_dataset` / :func:`check_data_config`, before anything starts (``rlvr_recipes.launch.cpu_run.preflight`` in the
  driver before Ray starts; the trainer extension's constructor for the stock ``main_ppo``): every train/val parquet
  file exists, reads, has the columns verl's data loader and reward loop use (``data.prompt_key``,
  ``data.reward_fn_key``, ``reward_model`` with ``ground_truth``), and no row has a missing or empty ground truth.
- :func:`check_reward_value` in every reward worker of a run of this package's recipes (each score a reward function
  returns, before verl turns it into a tensor: verl 0.9.1 leaves a ``None`` sample without a score, a string fails
  that sample's group, which is then padded out, and NaN reaches the advantages): the value is logged with the sample
  and replaced by NaN; and :func:`check_rewards` in the trainer extension's advantage step, which stops the run on
  any non-finite score, naming the samples: data source, row index, ``uid``. Other verl runs in the same environment
  are left alone (:func:`reward_check_applies`).

And :func:`check_reward_dependencies`: a reward worker of this package's math reward stops at start when
``math-verify`` is missing (every answer that needs a symbolic check would otherwise be graded 0, with no error).
"""

from __future__ import annotations

from collections import Counter
import importlib.util
import math
import numbers
import os
import sys
from typing import Any, Optional, Sequence

import numpy as np
import torch

#: rows named in full in a message; the rest are counted
SHOWN = 5


class DataError(ValueError):
    """A dataset or reward value that cannot be trained on; the message names the file/row or the sample."""


def _rows(rows: np.ndarray) -> str:
    shown = ", ".join(str(int(r)) for r in rows[:SHOWN])
    return shown + (f" and {len(rows) - SHOWN} more" if len(rows) > SHOWN else "")


def is_remote(path: str) -> bool:
    """Whether ``path`` names a remote file verl fetches itself (``hdfs://...``: verl.utils.fs.copy_to_local), which
    this process cannot read before verl does."""
    scheme, sep, _ = str(path).partition("://")
    return bool(sep) and scheme.lower() != "file" and scheme.isalnum()


def check_dataset(path: str, key: str = "data.train_files", prompt_key: str = "prompt",
                  source_key: str = "data_source") -> Optional[int]:
    """Check one verl parquet file; returns its number of rows (None for a remote ``hdfs://`` path, left to verl).

    Reads only the needed columns (pyarrow), vectorised over rows: a ground truth that is null, an empty or blank
    string, or an empty list is an error naming the file, the column ``reward_model.ground_truth`` and the rows
    (0-based, as pandas and verl's dataset number them).

    Raises:
        DataError: naming ``key``, the file and what is wrong.
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    if is_remote(path):
        return None  # hdfs:// and other remote paths: verl copies them to the node (verl.utils.fs.copy_to_local)
    if not os.path.exists(path):
        raise DataError(f"{key}: {path} does not exist")
    try:
        schema = pq.read_schema(path)
    except (OSError, pa.ArrowException) as exc:
        raise DataError(f"{key}: {path} is not a readable parquet file ({exc})") from exc
    missing = [c for c in (prompt_key, source_key, "reward_model") if c not in schema.names]
    if missing:
        raise DataError(
            f"{key}: {path} has no column {', '.join(map(repr, missing))} (columns: {', '.join(schema.names)}); "
            f"verl's data loader and reward loop read {prompt_key!r} (data.prompt_key), {source_key!r} "
            f"(data.reward_fn_key) and 'reward_model' with 'ground_truth' (python -m rlvr_recipes.launch.data writes them)"
        )
    rm_type = schema.field("reward_model").type
    if not pa.types.is_struct(rm_type) or rm_type.get_field_index("ground_truth") < 0:
        raise DataError(f"{key}: {path}: column 'reward_model' has no field 'ground_truth' (type {rm_type})")
    table = pq.read_table(path, columns=["reward_model"])
    truth = pc.struct_field(table.column("reward_model"), "ground_truth")
    empty = pc.is_null(truth)
    if pa.types.is_string(truth.type) or pa.types.is_large_string(truth.type):
        empty = pc.or_kleene(empty, pc.equal(pc.utf8_trim_whitespace(truth), "")).fill_null(True)
    elif pa.types.is_list(truth.type) or pa.types.is_large_list(truth.type):
        empty = pc.or_kleene(empty, pc.equal(pc.list_value_length(truth), 0)).fill_null(True)
    empty = pc.or_kleene(pc.is_null(table.column("reward_model")), empty).fill_null(True)
    bad = np.flatnonzero(empty.to_numpy(zero_copy_only=False))
    if bad.size:
        raise DataError(
            f"{key}: {path}: row {_rows(bad)} ({bad.size} of {table.num_rows}) has a missing or empty "
            f"reward_model.ground_truth; fix or drop these rows"
        )
    return table.num_rows


def check_data_config(config: Any) -> None:
    """:func:`check_dataset` on every file of ``data.train_files`` and ``data.val_files`` of a verl config."""
    from omegaconf import OmegaConf

    prompt_key = OmegaConf.select(config, "data.prompt_key", default="prompt") or "prompt"
    source_key = OmegaConf.select(config, "data.reward_fn_key", default="data_source") or "data_source"
    for key in ("data.train_files", "data.val_files"):
        value = OmegaConf.select(config, key)
        if value is None:
            continue
        for path in value if isinstance(value, (list, tuple)) or OmegaConf.is_list(value) else [value]:
            check_dataset(str(path), key, prompt_key, source_key)


def describe_sample(data_source: Any = None, extra_info: Any = None, uid: Any = None) -> str:
    """``data source 'x', row 12 (extra_info.index), uid 'u'``: what identifies a sample in a message."""
    data_source, uid = (x.item() if isinstance(x, np.generic) else x for x in (data_source, uid))
    parts = []
    if data_source is not None:
        parts.append(f"data source {data_source!r}")
    index = extra_info.get("index") if isinstance(extra_info, dict) else None
    if index is not None:
        parts.append(f"row {index} (extra_info.index)")
    if uid is not None:
        parts.append(f"uid {uid!r}")
    return ", ".join(parts) or "a sample"


def check_reward_value(score: Any, data_source: Any = None, extra_info: Any = None) -> float:
    """The reward ``score`` of one sample as a float, or :class:`DataError` naming the sample and the value.

    A real number (``bool``, numpy scalars and one-element tensors or arrays included: verl's DAPO reward manager
    adds its overlong penalty as a 0-dim tensor) that is finite passes; ``None``, strings, containers and NaN/inf do
    not: a reward function that cannot grade a response must return 0 itself, not leave it to chance.
    """
    given = score
    if isinstance(score, torch.Tensor) and score.numel() == 1 and not score.is_complex():
        score = score.item()
    elif isinstance(score, np.ndarray) and score.size == 1 and np.isrealobj(score):
        score = score.item()
    ok = isinstance(score, (numbers.Real, np.number)) and not isinstance(score, (str, bytes))
    if ok:
        value = float(score)
        if math.isfinite(value):
            return value
    shown = repr(given)
    shown = shown if len(shown) <= 200 else shown[:200] + "..."
    raise DataError(
        f"the reward function returned {shown} ({type(given).__name__}) for "
        f"{describe_sample(data_source, extra_info)}; "
        "a reward must be a finite number (return 0.0 for an answer that cannot be graded)"
    )


def check_rewards(scores: torch.Tensor, uid: Sequence[Any], data_source: Optional[Sequence[Any]] = None,
                  extra_info: Optional[Sequence[Any]] = None) -> None:
    """Every sequence-level score of the batch is finite, else :class:`DataError` naming the samples.

    Args:
        scores: ``(bs,)`` summed token-level scores.
        uid: ``(bs,)`` group labels; ``data_source`` and ``extra_info`` ``(bs,)`` when the batch has them.
    """
    bad = torch.nonzero(~torch.isfinite(scores)).flatten().tolist()
    if not bad:
        return

    def at(values: Optional[Sequence[Any]], i: int) -> Any:
        return None if values is None else values[i]

    labels = [f"{describe_sample(at(data_source, i), at(extra_info, i), uid[i])}: {float(scores[i])}" for i in bad]
    counts = Counter(labels)  # the responses of one prompt share data source, row and uid
    unique = list(counts)
    described = [label + (f" (x{counts[label]})" if counts[label] > 1 else "") for label in unique[:SHOWN]]
    more = f" and {len(unique) - SHOWN} more" if len(unique) > SHOWN else ""
    raise DataError(
        f"non-finite reward for {len(bad)} of {len(scores)} samples ({'; '.join(described)}{more}); the advantages "
        "would be NaN. The reward workers' '[rlvr] ERROR' lines name the value the reward function returned"
    )


#: the key of a verl config that marks a run of this package's trainer extension (set by the extension, which turns
#: ``trainer.v1.trainer_mode`` from ``rlvr`` into ``sync`` for the rest of verl)
EXTENSION_MARK = "trainer.v1.rlvr_extension"
#: where this package's math reward lives, as a recipe names it (module or file path)
MATH_REWARD = ("rlvr_recipes.reward.math_reward", "rlvr_recipes/reward/math_reward.py")


def reward_check_applies(config: Any) -> bool:
    """Whether the reward-value check runs for ``config``'s reward workers: runs of this package's trainer extension
    only (``trainer.v1.trainer_mode=rlvr``, the extension's mark, or a recipe of this package: ``algorithm.diagnostics``
    is declared by rlvr_recipes/configs/base/rlvr.yaml alone), where :func:`check_rewards` turns the NaN into an error.
    Any other verl run in the environment keeps verl's own handling."""
    from omegaconf import OmegaConf

    mode = OmegaConf.select(config, "trainer.v1.trainer_mode", default=None)
    if mode is None or mode == "rlvr":  # None: not a verl trainer config (no trainer section); checked as before
        return True
    if OmegaConf.select(config, EXTENSION_MARK, default=False):
        return True
    return OmegaConf.select(config, "algorithm.diagnostics", default=None) is not None


def uses_math_reward(config: Any) -> bool:
    """Whether ``config``'s custom reward function is this package's math reward."""
    from omegaconf import OmegaConf

    path = str(OmegaConf.select(config, "reward.custom_reward_function.path", default="") or "")
    return any(name in path.replace("pkg://", "").replace("file://", "") for name in MATH_REWARD)


def check_reward_dependencies(config: Any) -> None:
    """This package's math reward needs ``math-verify`` for every answer that is not a plain number: without it those
    would all be graded 0. Raises :class:`ImportError` saying what to install; a no-op for any other reward."""
    if uses_math_reward(config) and importlib.util.find_spec("math_verify") is None:
        raise ImportError(
            "math-verify is not installed in this environment, and the reward "
            f"({config.reward.custom_reward_function.path}) grades every answer that needs a symbolic check with it "
            "(all would score 0): `pip install math-verify` (or `pip install rlvr-recipes`) on every node"
        )


def install_reward_check() -> None:
    """Make verl's reward workers check each score with :func:`check_reward_value` (idempotent), for the runs
    :func:`reward_check_applies` selects, and stop at start without ``math-verify`` (:func:`check_reward_dependencies`).

    Wraps ``RewardLoopWorker.compute_score`` (verl 0.9.1: every reward manager and custom reward function goes
    through it, one sample per call) in every process that imports verl through this package's plugin, so the Ray
    reward workers get it too. A bad score is logged there, naming the sample and the value, and replaced by NaN,
    which the trainer extension's advantage step turns into an error that stops the run (:func:`check_rewards`).
    Raising in the worker would not: verl's v1 agent loop catches the error, marks the prompt's group as failed and
    trains on without it (failed groups are padded, ``ReplayBuffer``). ``RewardLoopWorker.__init__`` is wrapped too:
    a worker whose reward needs ``math-verify`` fails at its creation, before the first step, when it is missing.
    """
    from verl.experimental.reward_loop.reward_loop import RewardLoopWorker

    original = RewardLoopWorker.compute_score
    if getattr(original, "_rlvr_checked", False):
        return
    original_init = RewardLoopWorker.__init__

    def __init__(self, config, *args, **kwargs):
        check_reward_dependencies(config)
        original_init(self, config, *args, **kwargs)

    async def compute_score(self, data):
        result = await original(self, data)
        applies = getattr(self, "_rlvr_reward_check", None)
        if applies is None:
            applies = self._rlvr_reward_check = reward_check_applies(self.config)
        if not applies:
            return result
        score = result.get("reward_score")
        tail = data.non_tensor_batch
        try:
            result["reward_score"] = check_reward_value(
                score,
                tail["data_source"][-1] if "data_source" in tail else None,
                tail["extra_info"][-1] if "extra_info" in tail else None,
            )
        except DataError as exc:
            print(f"[rlvr] ERROR: {exc}", file=sys.stderr, flush=True)
            result["reward_score"] = float("nan")
            extra = result.get("reward_extra_info") or {}
            for key, value in list(extra.items()):  # verl copies a plain score into reward_extra_info["acc"]
                if value is score:
                    extra[key] = float("nan")
        return result

    compute_score._rlvr_checked = True  # type: ignore[attr-defined]
    compute_score.__doc__ = original.__doc__
    __init__.__doc__ = original_init.__doc__
    RewardLoopWorker.compute_score = compute_score
    RewardLoopWorker.__init__ = __init__
