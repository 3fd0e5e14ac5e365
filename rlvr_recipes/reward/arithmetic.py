"""Exact-match reward for integer arithmetic answers (the embedded default task, :mod:`rlvr_recipes.tiny_task.build`).

Use it as verl's custom reward function::

    reward.custom_reward_function.path=pkg://rlvr_recipes.reward.arithmetic     # or the path of this file
    reward.custom_reward_function.name=compute_score

The answer is the first integer of the response (leading whitespace allowed, an optional minus sign); the reward is
1.0 when it equals the ground truth and 0.0 otherwise, including a response with no integer. Anything after the
first integer is ignored: the end-of-sequence token stops a well-formed answer, and the response length is capped
by ``data.max_response_length``.
"""

from __future__ import annotations

import re
from typing import Any, Optional

_FIRST_INTEGER = re.compile(r"\s*(-?\d+)")


def extract_integer(solution_str: str) -> Optional[int]:
    """The integer the response starts with (after whitespace), or None."""
    match = _FIRST_INTEGER.match(solution_str)
    return int(match.group(1)) if match else None


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Optional[dict] = None,
    **kwargs: Any,
) -> float:
    """1.0 if the response's leading integer equals ``ground_truth`` (an int or its decimal string), else 0.0.

    ``data_source``, ``extra_info`` and any ``reward_kwargs`` are accepted for verl's calling convention and unused.
    A ``ground_truth`` that is not an integer is an error naming the value, not a silent 0.
    """
    try:
        target = int(str(ground_truth).strip())
    except ValueError:
        raise ValueError(
            f"rlvr_recipes.reward.arithmetic: ground_truth must be an integer, got {ground_truth!r} (data_source={data_source!r})"
        ) from None
    return 1.0 if extract_integer(solution_str) == target else 0.0
