"""Countdown problems for the CPU lab: "reach TARGET with NUMBERS using + - * / and parentheses, each at most once".

Unlike the addition task, a problem has many correct answers (different orders, operations and subsets of the
numbers), and its difficulty has a knob: how many numbers are given. :func:`solutions` enumerates every answer up to
commutativity, so each problem records how many it has; :func:`make_problems` draws problems whose target is reached.
Answers are scored by :mod:`rlvr_recipes.reward.countdown`, which never evaluates text.

:class:`CountdownSpec` is the CPU lab's task (docs/lab.md): a mixture of easy problems (the target is the sum of the
numbers) and problems whose target is the value of a random expression, with 3 or 4 numbers;
:func:`countdown_problems` splits it into disjoint training and held-out problems, and :func:`prompt_text` renders
one prompt (``"3,7,9>19:"``). :mod:`rlvr_recipes.tiny_task.build` writes them as verl parquet.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from fractions import Fraction
from typing import Optional

Item = tuple[Fraction, str]


def _canonical(a: str, op: str, b: str) -> str:
    if op in "+*" and b < a:  # commutative: one spelling
        a, b = b, a
    return f"({a} {op} {b})"


def _combine(a: Item, b: Item) -> list[Item]:
    (va, ea), (vb, eb) = a, b
    out = [(va + vb, _canonical(ea, "+", eb)), (va * vb, _canonical(ea, "*", eb)),
           (va - vb, f"({ea} - {eb})"), (vb - va, f"({eb} - {ea})")]
    if vb != 0:
        out.append((va / vb, f"({ea} / {eb})"))
    if va != 0:
        out.append((vb / va, f"({eb} / {ea})"))
    return out


def solutions(numbers: list[int], target: int, limit: int = 10_000) -> set[str]:
    """Every expression (fully parenthesised, commutative operands in one order) over a sub-multiset of ``numbers``,
    each used at most once, whose value is ``target``; at most ``limit`` of them."""
    found: set[str] = set()
    goal = Fraction(target)
    seen: set[tuple[str, ...]] = set()

    def search(items: list[Item]) -> None:
        key = tuple(sorted(e for _, e in items))
        if key in seen or len(found) >= limit:
            return
        seen.add(key)
        for value, expr in items:
            if value == goal:
                found.add(expr[1:-1] if expr.startswith("(") else expr)
        for i in range(len(items)):
            for j in range(i + 1, len(items)):
                rest = [items[k] for k in range(len(items)) if k not in (i, j)]
                for combined in _combine(items[i], items[j]):
                    search(rest + [combined])

    search([(Fraction(n), str(n)) for n in numbers])
    return found


def make_problems(count: int, seed: int = 0, sizes: tuple[int, ...] = (3, 4), max_number: int = 12,
                  max_target: int = 60, min_solutions: int = 2, sum_fraction: float = 0.0,
                  limit: int = 10_000) -> list[dict]:
    """``count`` problems: ``{"numbers", "target", "ground_truth" ("T|a,b,..."), "kind" ("sum" or "expression"),
    "solutions" (how many, at most ``limit``), "answers" (those answers, sorted)}``.

    Numbers are drawn from 1..``max_number``, ``sizes`` giving how many (the difficulty knob). With probability
    ``sum_fraction`` the target is the sum of all the numbers (an easy problem: one rule solves every such problem);
    otherwise it is the value of a random expression over them. The target must be an integer in 2..``max_target``;
    a problem is kept when it has at least ``min_solutions`` answers."""
    rng = random.Random(seed)
    problems: list[dict] = []
    while len(problems) < count:
        numbers = [rng.randint(1, max_number) for _ in range(rng.choice(sizes))]
        easy = sum_fraction > 0 and rng.random() < sum_fraction
        target = sum(numbers) if easy else _random_value(numbers, rng)
        if target is None or not 2 <= target <= max_target:
            continue
        found = solutions(numbers, target, limit=limit)
        if len(found) < min_solutions:
            continue
        problems.append({"numbers": numbers, "target": target, "kind": "sum" if easy else "expression",
                         "solutions": len(found), "answers": sorted(found),
                         "ground_truth": f"{target}|{','.join(map(str, numbers))}"})
    return problems


@dataclass(frozen=True)
class CountdownSpec:
    """The CPU lab's countdown task: ``train_size`` (RL), ``test_size`` (held out) and ``warm_start_size``
    (supervised warm start) distinct problems of 3 or 4 numbers from 1..12, a ``sum_fraction`` of them with the sum
    of the numbers as target. The three sets share no problem: RL trains on prompts the warm start never saw, as a
    model's RL prompts are not its fine-tuning data. Answers are listed up to ``limit`` per problem.
    ``warm_start_steps`` is the length of the warm start that :mod:`rlvr_recipes.tiny_task.build` gives the model;
    docs/lab.md has the measured properties it gives."""

    train_size: int = 2000
    test_size: int = 200
    warm_start_size: int = 3000
    sum_fraction: float = 0.3
    sizes: tuple[int, ...] = (3, 4)
    max_number: int = 12
    max_target: int = 60
    limit: int = 200
    #: supervised steps of the warm start (batch 128, lr 1e-3; docs/lab.md)
    warm_start_steps: int = 850
    seed: int = 0


def countdown_problems(spec: CountdownSpec, with_warm_start: bool = False) -> tuple[list[dict], ...]:
    """Disjoint training (RL) and held-out problems of ``spec``, and with ``with_warm_start`` the warm start's
    problems third; no ground truth is in two of them. All are drawn from one stream, the same either way."""
    total = spec.train_size + spec.test_size + spec.warm_start_size
    seen: set[str] = set()
    problems: list[dict] = []
    batch_seed = spec.seed
    while len(problems) < total:
        for problem in make_problems(total - len(problems), seed=batch_seed, sizes=spec.sizes,
                                     max_number=spec.max_number, max_target=spec.max_target,
                                     sum_fraction=spec.sum_fraction, limit=spec.limit):
            if problem["ground_truth"] not in seen:
                seen.add(problem["ground_truth"])
                problems.append(problem)
        batch_seed += 1_000_003  # a further stream when duplicates were dropped
    test_end = spec.train_size + spec.test_size
    if with_warm_start:
        return problems[: spec.train_size], problems[spec.train_size : test_end], problems[test_end:total]
    return problems[: spec.train_size], problems[spec.train_size : test_end]


def fresh_problems(spec: CountdownSpec, count: int, seed: int) -> list[dict]:
    """``count`` problems of ``spec``'s distribution drawn with another ``seed``, none of them in its RL, held-out or
    warm-start sets: prompts on which no setting of the lab was chosen."""
    used = {p["ground_truth"] for part in countdown_problems(spec, with_warm_start=True) for p in part}
    fresh: list[dict] = []
    batch_seed = seed
    while len(fresh) < count:
        for problem in make_problems(count, seed=batch_seed, sizes=spec.sizes, max_number=spec.max_number,
                                     max_target=spec.max_target, sum_fraction=spec.sum_fraction, limit=spec.limit):
            if problem["ground_truth"] not in used and len(fresh) < count:
                used.add(problem["ground_truth"])
                fresh.append(problem)
        batch_seed += 1_000_003
    return fresh


def prompt_text(numbers: list[int], target: int) -> str:
    """The rendered prompt of one problem: the numbers, then ``>`` and the target, then ``:`` (``"3,7,9>19:"``)."""
    return ",".join(map(str, numbers)) + ">" + str(target) + ":"


def _random_value(numbers: list[int], rng: random.Random) -> Optional[int]:
    items: list[Item] = [(Fraction(n), str(n)) for n in numbers]
    rng.shuffle(items)
    while len(items) > 1:
        a, b = items.pop(), items.pop()
        items.append(rng.choice(_combine(a, b)))
    value = items[0][0]
    return int(value) if value.denominator == 1 else None
