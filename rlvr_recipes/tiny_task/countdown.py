"""Countdown problems for the CPU lab: "reach TARGET with NUMBERS using + - * / and parentheses, each at most once".

Unlike the addition task, a problem has many correct answers (different orders, operations and subsets of the
numbers), and its difficulty has a knob: how many numbers are given. :func:`solutions` enumerates every answer up to
commutativity, so each problem records how many it has; :func:`make_problems` draws problems whose target is reached.
Answers are scored by :mod:`rlvr_recipes.reward.countdown`, which never evaluates text.

Not yet built on this: the tiny model's vocabulary and warm start for this task, and the measured properties the lab
needs (docs/lab.md says what is measured and what is not).
"""

from __future__ import annotations

import random
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
                  max_target: int = 60, min_solutions: int = 2) -> list[dict]:
    """``count`` problems: ``{"numbers", "target", "ground_truth" ("T|a,b,..."), "solutions" (how many)}``.

    Numbers are drawn from 1..``max_number``, ``sizes`` giving how many (the difficulty knob); the target is the
    value of a random expression over them, an integer in 2..``max_target``, kept when it has at least
    ``min_solutions`` answers."""
    rng = random.Random(seed)
    problems: list[dict] = []
    while len(problems) < count:
        numbers = [rng.randint(1, max_number) for _ in range(rng.choice(sizes))]
        target = _random_value(numbers, rng)
        if target is None or not 2 <= target <= max_target:
            continue
        found = solutions(numbers, target)
        if len(found) < min_solutions:
            continue
        problems.append({"numbers": numbers, "target": target, "solutions": len(found),
                         "ground_truth": f"{target}|{','.join(map(str, numbers))}"})
    return problems


def _random_value(numbers: list[int], rng: random.Random) -> Optional[int]:
    items: list[Item] = [(Fraction(n), str(n)) for n in numbers]
    rng.shuffle(items)
    while len(items) > 1:
        a, b = items.pop(), items.pop()
        items.append(rng.choice(_combine(a, b)))
    value = items[0][0]
    return int(value) if value.denominator == 1 else None
