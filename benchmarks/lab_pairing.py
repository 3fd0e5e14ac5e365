"""What shared draws buy a comparison (docs/lab.md, "Shared draws: the methods compared seed by seed").

For a comparison made with keyed draws (every run's ``done.json`` has ``"keyed_draws": true``), or as a control one
made before them (whose runs of one seed share the data order and the initial model but no draws), this script
prints and writes to ``--json``:

- how many answers two methods sampled alike at one seed, at steps 1, 10, 25 and the last (the rollouts dumped by
  each run; answers compared as multisets of (prompt, answer) pairs, so the order of arrival does not count);
- for each claim of the report on a pair of methods (:data:`PAIRS`), both tests on the same runs: Welch's
  (:func:`rlvr_recipes.launch.compare.welch_test`, seeds as independent samples) and the paired t-test by seed
  (:func:`rlvr_recipes.launch.compare.paired_change`), with their standard errors, the ratio Welch / paired, and the
  correlation across seeds of the two methods' values.

    python benchmarks/lab_pairing.py --out runs/lab_paired --json benchmarks/lab_paired_pairing.json
    python benchmarks/lab_pairing.py --out runs/lab_replication      # the control: the same methods, no shared draws
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections import Counter
from typing import Any, Callable

import numpy as np

from rlvr_recipes.launch.compare import _tail_mean, finished_runs, load_run, paired_change, welch_test

#: (method, baseline, figure): the report's claims on these pairs (launch.compare.claims), each on its own figure
PAIRS = (("cw_grpo", "grpo", "greedy accuracy (last 20 %)"), ("cw_grpo", "grpo", "entropy std over steps"),
         ("grpo_n", "grpo", "entropy (last 20 %)"), ("grpo_n", "grpo", "pass@max"))


def figure_of(name: str) -> Callable[[dict[str, Any]], float]:
    """The per-run value of a figure, read as the report reads it (launch.compare.claims)."""
    return {
        "greedy accuracy (last 20 %)": lambda r: _tail_mean(r["curves"]["val"]),
        "entropy std over steps": lambda r: float(np.std(list(r["curves"]["actor/entropy"].values()))),
        "entropy (last 20 %)": lambda r: _tail_mean(r["curves"]["actor/entropy"]),
        "pass@max": lambda r: r["passk_end"][max(r["passk_end"])],
    }[name]


def load(out: str) -> dict[str, dict[int, dict[str, Any]]]:
    """``{method: {seed: run}}`` of the finished runs of comparison ``out``, each as the report reads it
    (:func:`rlvr_recipes.launch.compare.load_run`) with its folder."""
    return {method: {spec.seed: {**load_run(spec), "path": spec.out} for spec in specs}
            for method, specs in finished_runs(out).items()}


def answers(path: str, step: int) -> Counter:
    """The (prompt, answer) pairs a run sampled at ``step``, as a multiset."""
    with open(os.path.join(path, "rollouts", f"{step}.jsonl")) as f:
        return Counter((row["input"], row["output"]) for row in map(json.loads, f))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="runs/lab_paired", help="the comparison's folder")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args(argv)
    runs = load(args.out)
    keyed = all(r["keyed_draws"] for rs in runs.values() for r in rs.values())
    result: dict[str, Any] = {"command": "python " + " ".join(sys.argv), "keyed_draws": keyed, "shared_answers": {},
                              "tests": []}
    print(f"{args.out}: " + ("every run drew keyed" if keyed else
                             "runs made without keyed draws: the control, whose runs of one seed share no draws"))

    print("Answers sampled alike at one seed (of each step's batch):")
    for method in sorted(set(runs) - {"grpo"}):
        for seed in sorted(set(runs[method]) & set(runs.get("grpo", {}))):
            a, b = runs[method][seed], runs["grpo"][seed]
            steps = max(a["curves"]["critic/score/mean"])
            shares = {}
            for step in sorted({1, 10, 25, steps}):
                mine, theirs = answers(a["path"], step), answers(b["path"], step)
                shares[step] = [sum((mine & theirs).values()), sum(mine.values())]
            result["shared_answers"][f"{method} vs grpo, seed {seed}"] = shares
            print(f"  {method} vs grpo, seed {seed}: " + ", ".join(f"step {s} {n}/{t}" for s, (n, t) in shares.items()))

    print("\nEach claim's pair on the same runs, Welch's test against the paired t-test by seed:")
    for method, base, name in PAIRS:
        if method not in runs or base not in runs:
            continue
        seeds = sorted(set(runs[method]) & set(runs[base]))
        if len(seeds) < 2:
            print(f"  {method} vs {base}, {name}: {len(seeds)} seed(s) with both methods, no test")
            continue
        fn = figure_of(name)
        a, b = [fn(runs[method][s]) for s in seeds], [fn(runs[base][s]) for s in seeds]
        welch, paired = welch_test(a, b), paired_change([x - y for x, y in zip(a, b)])
        paired_se = paired["se"]
        row = {"method": method, "baseline": base, "figure": name, "seeds": seeds, "method_values": a,
               "baseline_values": b, "difference": paired["mean"],
               "welch": {"se": welch["se"], "low": welch["low"], "high": welch["high"], "p": welch["p"]},
               "paired": {"se": paired_se, "low": paired["low"], "high": paired["high"], "p": paired["p"]},
               "se_ratio_welch_over_paired": welch["se"] / paired_se if paired_se > 0 else math.inf,
               "correlation_across_seeds": float(np.corrcoef(a, b)[0, 1])}
        result["tests"].append(row)
        print(f"  {method} vs {base}, {name}: {row['difference']:+.4f}; Welch s.e. {welch['se']:.4f} "
              f"[{welch['low']:+.4f}, {welch['high']:+.4f}] p = {welch['p']:.3g}; paired s.e. {paired_se:.4f} "
              f"[{paired['low']:+.4f}, {paired['high']:+.4f}] p = {paired['p']:.3g}; ratio "
              f"{row['se_ratio_welch_over_paired']:.2f}; r = {row['correlation_across_seeds']:+.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
