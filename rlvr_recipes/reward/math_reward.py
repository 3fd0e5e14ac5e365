"""Verifiable math reward for verl: accuracy, format, cosine-scaled accuracy and their weighted sum.

Use it from verl's stock command line (keys of verl 0.9.1's ``ppo_trainer.yaml``)::

    reward.custom_reward_function.path=pkg://rlvr_recipes.reward.math_reward     # or the path of this file
    reward.custom_reward_function.name=compute_score
    +reward.custom_reward_function.reward_kwargs.recipe=aapo_1p5b   # optional, see RECIPES

verl calls ``compute_score(data_source=..., solution_str=..., ground_truth=..., extra_info=...)`` with the
``reward_kwargs`` merged in, from a thread pool; the returned dict's ``score`` is the reward and every other key is
logged (``acc`` and each component, for every sample).

Components (each a function of the response and, for the accuracy ones, of its correctness):

==========================  =======================================================================================
``accuracy``                1 if the extracted answer (:mod:`rlvr_recipes.reward.extract`) equals the ground truth
                            (:mod:`rlvr_recipes.reward.equivalence`), else 0 (000 App. A.3; 001 App. C.2; 002 App. C.1)
``format_think_answer``     ``<think>..</think><answer>..</answer>`` (003 App. B-C)
``format_think_delimiter``  exactly one ``\\n</think>\\n`` (002 App. C.1)
``format_boxed``            a complete ``\\boxed{}`` final answer
``cosine_scaled_accuracy``  :func:`cosine_scaled_accuracy` (002 App. C.1, Eq. 9-10)
==========================  =======================================================================================
"""

from __future__ import annotations

import logging
import math
import os
import sys
from typing import Any, Callable, Mapping, Optional

try:  # loaded by file path from a checkout that is not installed: make the package importable
    import rlvr_recipes.reward.extract  # noqa: F401
except ImportError:  # pragma: no cover
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import numpy as np

from rlvr_recipes.reward import formats
from rlvr_recipes.reward.equivalence import DEFAULT_TIMEOUT_S, is_equivalent
from rlvr_recipes.reward.extract import extract_answer

logger = logging.getLogger(__name__)

#: Cosine-scaled accuracy defaults: 002 App. C.1 gives the form but not the values; these are the defaults of the
#: open-source reward it follows (open-r1's ``get_cosine_scaled_reward``; length in characters, L = 1000).
COSINE_DEFAULTS: dict[str, float] = {
    "min_value_correct": 0.5,
    "max_value_correct": 1.0,
    "min_value_wrong": -1.0,
    "max_value_wrong": -0.5,
    "max_len": 1000.0,
}


def cosine_scaled_accuracy(
    correct: Any,
    length: Any,
    max_len: float = COSINE_DEFAULTS["max_len"],
    min_value_correct: float = COSINE_DEFAULTS["min_value_correct"],
    max_value_correct: float = COSINE_DEFAULTS["max_value_correct"],
    min_value_wrong: float = COSINE_DEFAULTS["min_value_wrong"],
    max_value_wrong: float = COSINE_DEFAULTS["max_value_wrong"],
) -> Any:
    """Cosine-scaled accuracy (AAPO, 002 App. C.1, Eq. 9-10), scalar or vectorised over numpy arrays.

    ``R_correct(l) = a_min^c + (a_max^c - a_min^c) (1 + cos(pi l/L)) / 2``: shorter correct answers earn more.
    ``R_wrong(l)   = a_max^w + (a_min^w - a_max^w) (1 + cos(pi l/L)) / 2``: longer wrong answers lose less.
    ``l/L`` is clipped to [0, 1] (the equation's domain; an unclipped cosine would rise again past L).
    """
    if max_len <= 0:
        raise ValueError(f"cosine max_len must be > 0, got {max_len}")
    progress = np.clip(np.asarray(length, dtype=np.float64) / float(max_len), 0.0, 1.0)
    half = 0.5 * (1.0 + np.cos(np.pi * progress))
    good = min_value_correct + (max_value_correct - min_value_correct) * half
    bad = max_value_wrong + (min_value_wrong - max_value_wrong) * half
    out = np.where(np.asarray(correct, dtype=bool), good, bad)
    return float(out) if out.ndim == 0 else out


#: Weighted reward recipes (``reward_kwargs.recipe``): component -> weight.
RECIPES: dict[str, dict[str, float]] = {
    # binary accuracy: ACR/AVSPO (000 App. A.3), A-GRAE (001 App. C.2), two-stage (004), AAPO 7B and Llama (002 C.2)
    "accuracy": {"accuracy": 1.0},
    # CW-GRPO: accuracy plus format (003 App. C; the paper gives no weights, 1:1 here)
    "cw_grpo": {"accuracy": 1.0, "format_think_answer": 1.0},
    # AAPO, DeepSeek-R1-Distill-Qwen-1.5B on Open-RS: format 1, cosine-scaled accuracy 2 (002 App. C.2)
    "aapo_1p5b": {"format_think_delimiter": 1.0, "cosine_scaled_accuracy": 2.0},
}

COMPONENTS: tuple[str, ...] = (
    "accuracy",
    "format_think_answer",
    "format_think_delimiter",
    "format_boxed",
    "cosine_scaled_accuracy",
)

#: Keyword arguments verl itself may pass to a reward function (accepted and ignored).
_VERL_KWARGS = frozenset(
    {"reward_router_address", "reward_model_tokenizer", "sandbox_fusion_url", "concurrent_semaphore", "memory_limit_mb"}
)
_OPTIONS = frozenset({"recipe", "weights", "boxed_only", "timeout_s", "think_opened"}
                     | {f"cosine_{k}" for k in COSINE_DEFAULTS})


def resolve_weights(recipe: str = "accuracy", weights: Optional[Mapping[str, float]] = None) -> dict[str, float]:
    """The component weights of ``recipe``, or ``weights`` when given; unknown names raise ``ValueError``."""
    if weights:
        resolved = {str(k): float(v) for k, v in dict(weights).items()}
    elif recipe in RECIPES:
        resolved = dict(RECIPES[recipe])
    else:
        raise ValueError(f"reward_kwargs.recipe={recipe!r} is unknown; known: {sorted(RECIPES)}")
    unknown = sorted(set(resolved) - set(COMPONENTS))
    if unknown:
        raise ValueError(f"reward_kwargs.weights has unknown component(s) {unknown}; known: {list(COMPONENTS)}")
    bad = [k for k, v in resolved.items() if not math.isfinite(v)]
    if bad:
        raise ValueError(f"reward_kwargs.weights must be finite numbers; {bad} are not")
    return resolved


def is_correct(
    response: str, ground_truth: Any, boxed_only: bool = False, timeout_s: float = DEFAULT_TIMEOUT_S
) -> bool:
    """Whether the final answer of ``response`` equals ``ground_truth`` (never raises)."""
    return is_equivalent(extract_answer(response, boxed_only=boxed_only), ground_truth, timeout_s=timeout_s)


def score_components(
    response: str,
    ground_truth: Any,
    boxed_only: bool = False,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    cosine: Optional[Mapping[str, float]] = None,
    think_opened: bool = False,
) -> dict[str, float]:
    """Every component of :data:`COMPONENTS` for one response (never raises: failures score 0). ``think_opened``:
    the prompt ends in ``<think>`` written by the chat template (:func:`rlvr_recipes.reward.formats.think_answer`)."""
    cos_kwargs = {**COSINE_DEFAULTS, **(cosine or {})}
    text = response if isinstance(response, str) else ""
    correct = is_correct(text, ground_truth, boxed_only, timeout_s)
    checks: dict[str, Callable[[], float]] = {
        "accuracy": lambda: float(correct),
        "format_think_answer": lambda: formats.think_answer(text, think_opened),
        "format_think_delimiter": lambda: formats.think_delimiter(text),
        "format_boxed": lambda: formats.boxed(text),
        "cosine_scaled_accuracy": lambda: cosine_scaled_accuracy(correct, len(text), **cos_kwargs),
    }
    out = {}
    for name, check in checks.items():
        try:
            out[name] = float(check())
        except Exception:  # noqa: BLE001 - a reward worker must not die on one response
            logger.debug("reward component %s failed", name, exc_info=True)
            out[name] = 0.0
    return out


class MissingGroundTruth(ValueError):
    """A dataset row without a usable ground truth: a silent 0 would train the policy on a wrong label."""


def _missing(ground_truth: Any) -> bool:
    if ground_truth is None:
        return True
    if isinstance(ground_truth, float) and math.isnan(ground_truth):  # a missing parquet cell read by pandas
        return True
    if isinstance(ground_truth, str):
        return not ground_truth.strip()
    if isinstance(ground_truth, (list, tuple)) or type(ground_truth).__name__ == "ndarray":
        return all(_missing(g) for g in ground_truth)
    return False


def check_ground_truth(ground_truth: Any, data_source: Any = None, extra_info: Optional[dict] = None) -> None:
    """Raise :class:`MissingGroundTruth` naming the sample when ``ground_truth`` is missing or empty."""
    if not _missing(ground_truth):
        return
    info = extra_info if isinstance(extra_info, dict) else {}
    where = ", ".join(f"{k}={info[k]!r}" for k in ("split", "index") if k in info) or "no index in extra_info"
    raise MissingGroundTruth(
        f"ground truth is missing or empty ({ground_truth!r}) for the sample of data_source={data_source!r} ({where}); "
        "fix the dataset row (reward_model.ground_truth) instead of scoring it 0"
    )


def compute_score(
    data_source: Any = None,
    solution_str: str = "",
    ground_truth: Any = None,
    extra_info: Optional[dict] = None,
    **kwargs: Any,
) -> dict[str, float]:
    """verl custom reward function (``reward.custom_reward_function``).

    Options (``reward.custom_reward_function.reward_kwargs``): ``recipe`` (a key of :data:`RECIPES`, default
    ``accuracy``), ``weights`` (component -> weight, replaces the recipe), ``boxed_only`` (only boxed answers
    count), ``timeout_s`` (hard limit on one symbolic comparison, default 3), ``cosine_max_len``,
    ``cosine_min_value_correct``, ``cosine_max_value_correct``, ``cosine_min_value_wrong``,
    ``cosine_max_value_wrong`` (:func:`cosine_scaled_accuracy`), ``think_opened`` (the chat template opens
    ``<think>`` in the prompt: the format check reads the response as if it began with it). An unknown option raises ``ValueError``, and a
    missing or empty ground truth raises :class:`MissingGroundTruth` naming the sample (verl's reward loop then stops
    the run); no response ever does.

    Returns:
        ``{"score": sum_k w_k * component_k, "acc": accuracy, <every component>: value}``.
    """
    unknown = sorted(set(kwargs) - _OPTIONS - _VERL_KWARGS)
    if unknown:
        raise ValueError(f"unknown reward_kwargs {unknown}; known: {sorted(_OPTIONS)}")
    weights = resolve_weights(kwargs.get("recipe", "accuracy"), kwargs.get("weights"))
    check_ground_truth(ground_truth, data_source, extra_info)
    cosine = {k[len("cosine_") :]: float(v) for k, v in kwargs.items() if k.startswith("cosine_")}
    if cosine.get("max_len", 1.0) <= 0:
        raise ValueError(f"reward_kwargs.cosine_max_len must be > 0, got {cosine['max_len']}")
    components = score_components(
        solution_str,
        ground_truth,
        boxed_only=bool(kwargs.get("boxed_only", False)),
        timeout_s=float(kwargs.get("timeout_s", DEFAULT_TIMEOUT_S)),
        cosine=cosine,
        think_opened=bool(kwargs.get("think_opened", False)),
    )
    score = sum(w * components[name] for name, w in weights.items())
    return {"score": float(score), "acc": components["accuracy"], **components}
