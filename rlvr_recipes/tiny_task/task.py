"""The embedded task: integer addition ``"47+8="`` -> ``"55"`` (its problems and prompt; :mod:`rlvr_recipes.tiny_task.build` writes
them as verl parquet, :mod:`rlvr_recipes.tiny_task.warmstart` trains on them)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Optional

#: Steps between the checks of the addition warm start's stopping rule
#: (:func:`rlvr_recipes.tiny_task.warmstart.warm_start`). Every 100 steps overshot the target by up to one sharp rise
#: of the curve: the same seed stopped at 400 steps (held-out greedy 0.56) on one CPU and at 500 (0.79) on another,
#: whose floating-point reductions differ. Every 10 steps stops within a few points of the target.
WARM_START_EVAL_EVERY = 10


@dataclass(frozen=True)
class TaskSpec:
    """The addition task ``a+b=``: ``a`` of 1..``digits`` digits, ``b`` of 1..``digits_b`` digits (default: as
    ``a``), ``train_size`` and ``test_size`` distinct problems."""

    digits: int = 2
    digits_b: Optional[int] = 1
    train_size: int = 900
    test_size: int = 100
    seed: int = 0


def addition_problems(spec: TaskSpec) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Distinct ``(a, b)`` pairs for train and test (disjoint), operands uniform in digit count then in value."""
    rng = random.Random(spec.seed)
    digits_b = spec.digits if spec.digits_b is None else spec.digits_b
    total = spec.train_size + spec.test_size
    if total > 10**spec.digits * 10**digits_b:
        raise ValueError(
            f"task: {total} distinct problems requested but only {10**spec.digits * 10**digits_b} exist for "
            f"{spec.digits}- and {digits_b}-digit operands"
        )

    def operand(digits: int) -> int:
        d = rng.randint(1, digits)
        return rng.randrange(0 if d == 1 else 10 ** (d - 1), 10**d)

    seen: set[tuple[int, int]] = set()
    pairs: list[tuple[int, int]] = []
    while len(pairs) < total:
        p = (operand(spec.digits), operand(digits_b))
        if p not in seen:
            seen.add(p)
            pairs.append(p)
    return pairs[: spec.train_size], pairs[spec.train_size :]


def prompt_text(a: int, b: int) -> str:
    """The rendered prompt of one problem."""
    return f"{a}+{b}="

