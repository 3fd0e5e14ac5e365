"""Pocock's levels at the lab's later looks, checked by simulation (docs/lab.md, "Later looks at a claim").

A planned pooling that adds seeds to K - 1 seed sets read before the plan is the K-th look at their claims, and
``launch.verdicts`` decides it only where its p lies below Pocock's nominal level for K looks
(:data:`rlvr_recipes.launch.verdicts.POCOCK_LEVEL`). Pocock's levels keep the chance that a claim where the methods do
not differ is decided at any of the K looks to 5 % when the looks are equally spaced and each is a z-test. The lab's
looks are neither: each adds a seed set of its own size, and each is a paired t-test on n - 1 df. This measures how
far that moves the chance, for the look sizes of each planned pooling the Makefile names (``LAB_PLANNED``, given here
as ``launch.verdicts``' ``--planned`` values): the seed counts of the sets read before the plan, taken together in the
order the plan names them, then of all its sets.

For each pooling, ``draws`` null experiments: per-seed differences independent and normal (a t-test does not depend
on their scale), the paired t-test's two-sided p at each look, and so

- ``error_at_nominal``: the chance that a test at Pocock's nominal level for K looks decides at one of them (0.05
  where the approximation is exact), with its Monte Carlo standard error;
- ``level_for_5_percent``: the level that keeps that chance to 5 % for these look sizes (the 5 % quantile of the
  smallest p over the looks).

It trains and scores nothing, and changes no verdict:

    python benchmarks/lab_sequential_levels.py $(LAB_PLANNED) --json benchmarks/lab_sequential_levels.json

With ``--scale 100`` (``make lab-sequential-levels LAB_SEQUENTIAL_LEVELS_ARGS="--scale 100 --draws 20000"``) every look
has a hundred times its seeds, where a t-test is a z-test: what is left of the difference from 5 % there comes from the
unequal spacing of the looks alone.

(``make lab-sequential-levels`` is this command with the Makefile's ``LAB_PLANNED``.)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from typing import Any, Sequence

import numpy as np
from scipy import stats

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from rlvr_recipes.launch.verdicts import (POCOCK_LEVEL, planned_poolings, read_summaries,  # noqa: E402
                                          seed_set)

#: null experiments per pooling
DRAWS = 200_000


def look_sizes(earlier: Sequence[frozenset[int]], later: Sequence[frozenset[int]]) -> list[int]:
    """The seed count at each look of a pooling: the sets read before the plan taken together one by one, in order,
    then all of them (a seed two sets share counts once)."""
    sizes, seen = [], set()
    for seeds in earlier:
        seen |= seeds
        sizes.append(len(seen))
    for seeds in later:
        seen |= seeds
    sizes.append(len(seen))
    return sizes


def smallest_p(sizes: Sequence[int], draws: int, seed: int = 0) -> np.ndarray:
    """``[draws]``: the smallest two-sided p of the one-sample t-test of mean 0 over the looks, each look the first
    ``sizes[k]`` of a draw's i.i.d. standard normal differences (the paired t-test under the null)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((draws, max(sizes)))
    total, squares = np.cumsum(x, axis=1), np.cumsum(x * x, axis=1)
    smallest = np.ones(draws)
    for n in sizes:
        mean = total[:, n - 1] / n
        var = (squares[:, n - 1] - n * mean * mean) / (n - 1)
        t = mean / np.sqrt(var / n)
        smallest = np.minimum(smallest, 2.0 * stats.t.sf(np.abs(t), n - 1))
    return smallest


def check(sizes: Sequence[int], draws: int = DRAWS, seed: int = 0) -> dict[str, Any]:
    """Pocock's nominal level for ``len(sizes)`` looks at these look sizes: the chance it decides a null claim at one
    of the looks, with its Monte Carlo standard error, and the level that would keep that chance to 5 %."""
    nominal = POCOCK_LEVEL[len(sizes)]
    p = smallest_p(sizes, draws, seed)
    error = float(np.mean(p < nominal))
    return {"looks": len(sizes), "sizes": list(sizes), "nominal_level": nominal, "error_at_nominal": error,
            "error_se": math.sqrt(error * (1 - error) / draws), "level_for_5_percent": float(np.quantile(p, 0.05)),
            "draws": draws}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("planned", nargs="+", help="launch.verdicts' --planned values ([A.json,...+]B.json[:METHOD])")
    parser.add_argument("--draws", type=int, default=DRAWS)
    parser.add_argument("--scale", type=int, default=1,
                        help="every look this many times as many seeds (at 100, where a t-test is a z-test, what is "
                             "left of the difference from 5 %% comes from the spacing of the looks alone)")
    parser.add_argument("--json", default=None, help="write the rows here")
    args = parser.parse_args(argv)
    try:
        plans = planned_poolings(args.planned)
        seeds = {name: seed_set(summary)
                 for name, summary in read_summaries(sorted({n for plan in plans for n in plan.names}))}
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    rows = []
    print("| pooling | looks | seeds at each look | Pocock's level | chance of deciding a null | level for 5 % |")
    print("|---|---:|---|---:|---:|---:|")
    for spec, plan in zip(args.planned, plans):
        if not plan.earlier:
            continue  # a first look: tested at 5 %
        later = [n for n in plan.names if n not in plan.earlier]
        sizes = look_sizes([seeds[n] for n in plan.earlier], [seeds[n] for n in later])
        row = {"pooling": spec, **check([n * args.scale for n in sizes], args.draws)}
        rows.append(row)
        name = spec.replace("benchmarks/", "").replace("_summary.json", "").replace(".json", "")
        print(f"| {name} | {row['looks']} | {', '.join(map(str, row['sizes']))} | {row['nominal_level']:g} | "
              f"{row['error_at_nominal']:.4f} +/- {row['error_se']:.4f} | {row['level_for_5_percent']:.4f} |")
    if args.json:
        with open(args.json, "w") as f:
            options = [*(["--draws", str(args.draws)] if args.draws != DRAWS else []),
                       *(["--scale", str(args.scale)] if args.scale != 1 else [])]
            json.dump({"command": " ".join(["python benchmarks/lab_sequential_levels.py", *args.planned, *options]),
                       "rows": rows}, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
