"""Early ACR against final held-out accuracy within one setting (a method, its G, its model), over the lab's seed sets.

The early-ACR claim (000 Sec. 3.4.2, Fig. 1) is tested in each summary over all its runs, which differ in method or G
or difficulty level or model size as well as in seed. This asks what is left of it within one setting: each summary's
runs of ``--method`` (three or more seeds), each run's early ACR (mean over the first 20 % of steps) and final held-out
accuracy as the summary's early-ACR claim records them, centred on their set's means (so a set's build, seeds and
other settings drop out), then Pearson's r over all of them with the test of a within-set correlation (t on
n - sets - 1 degrees of freedom). Per set, r over its own runs. It trains and scores nothing, and changes no verdict:

    python benchmarks/lab_early_acr_within.py $(LAB_SUMMARIES) --method grpo --json benchmarks/lab_early_acr_within.json

(``make lab-early-acr-within`` is this command with the Makefile's ``LAB_SUMMARIES``.) ``--method`` also takes a
comma list, or ``all`` for every method a summary's early-ACR claim records: then each method's runs in each summary
are a set of their own, named ``<summary>:<method>``, and a set met again in a later summary (the same method's same
runs: a kept comparison taken into a second summary) is counted once (``make lab-early-acr-within-all``,
``make lab-early-acr-within-sizes``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from typing import Any, Optional, Sequence

import numpy as np
from scipy import stats

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from rlvr_recipes.launch.compare import EARLY_ACR  # noqa: E402
from rlvr_recipes.launch.verdicts import read_summaries  # noqa: E402


def _early_acr_values(summary: dict[str, Any]) -> dict[str, Any]:
    """The figures ``summary``'s early-ACR claim keeps (``{"early ACR": {method: {seed: x}}, "final held-out
    accuracy": ...}``); empty where it has no such claim or keeps none."""
    for claim in summary.get("claims", []):
        if claim["claim"] == EARLY_ACR:
            return claim.get("values") or {}
    return {}


def set_runs(summary: dict[str, Any], method: str) -> list[tuple[float, float]]:
    """(early ACR, final held-out accuracy) of each run of ``method`` in ``summary``'s early-ACR claim, by seed; runs
    with a value that is not finite are left out."""
    values = _early_acr_values(summary)
    early = values.get("early ACR", {}).get(method, {})
    final = values.get("final held-out accuracy", {}).get(method, {})
    pairs = [(early[s], final[s]) for s in sorted(early, key=int) if s in final]
    return [(e, f) for e, f in pairs if math.isfinite(e) and math.isfinite(f)]


def early_acr_methods(summary: dict[str, Any]) -> list[str]:
    """The methods whose runs ``summary``'s early-ACR claim records, in its order."""
    return list(_early_acr_values(summary).get("early ACR", {}))


def run_sets(summaries: Sequence[tuple[str, dict[str, Any]]], methods: Sequence[str]
             ) -> tuple[dict[str, list[tuple[float, float]]], list[str]]:
    """The runs of each of ``methods`` (``["all"]``: every method of each summary's early-ACR claim) in each summary,
    as sets named by the summary's file stem, with ``:<method>`` unless ``methods`` is one method; a set of runs met
    in an earlier summary (the same method, the same figures by seed) is left out, and its name returned in the second
    list."""
    every = list(methods) == ["all"]
    by_method = every or len(methods) > 1
    sets: dict[str, list[tuple[float, float]]] = {}
    seen: set[tuple[str, tuple[tuple[float, float], ...]]] = set()
    repeated: list[str] = []
    for path, summary in summaries:
        stem = os.path.basename(path)[: -len("_summary.json")]
        for method in (early_acr_methods(summary) if every else methods):
            runs = set_runs(summary, method)
            name = f"{stem}:{method}" if by_method else stem
            if runs and (method, tuple(runs)) in seen:
                repeated.append(name)
                continue
            seen.add((method, tuple(runs)))
            sets[name] = runs
    return sets, repeated


def within_correlation(sets: dict[str, list[tuple[float, float]]], min_runs: int = 3) -> dict[str, Any]:
    """Pearson's r of the runs centred on their set's means, over the sets of at least ``min_runs`` runs, with the
    two-sided p of t = r sqrt(df / (1 - r^2)) on df = runs - sets - 1; and each set's own r (NaN where a figure has
    no spread)."""
    used = {name: np.asarray(runs, dtype=float) for name, runs in sets.items() if len(runs) >= min_runs}
    per_set = {}
    for name, xy in used.items():
        spread = np.ptp(xy[:, 0]) > 0 and np.ptp(xy[:, 1]) > 0
        per_set[name] = {"runs": len(xy), "r": float(np.corrcoef(xy.T)[0, 1]) if spread else float("nan"),
                         "early_acr_mean": float(xy[:, 0].mean()), "final_mean": float(xy[:, 1].mean())}
    if not used:
        return {"runs": 0, "sets": 0, "r": float("nan"), "df": 0, "p": float("nan"), "by_set": per_set}
    centred = np.concatenate([xy - xy.mean(axis=0) for xy in used.values()])
    n, k = len(centred), len(used)
    df = n - k - 1
    r = float(np.corrcoef(centred.T)[0, 1]) if df > 0 and np.ptp(centred, axis=0).min() > 0 else float("nan")
    p = float("nan")
    if math.isfinite(r) and abs(r) < 1:
        p = float(2 * stats.t.sf(abs(r) * math.sqrt(df / (1 - r * r)), df))
    return {"runs": n, "sets": k, "r": r, "df": df, "p": p, "by_set": per_set}


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("summaries", nargs="+", help="lab summaries (*_summary.json); other files are skipped")
    parser.add_argument("--method", default="grpo",
                        help="the method whose runs are correlated (default grpo); a comma list, or all, makes each "
                             "method's runs in each summary a set of their own")
    parser.add_argument("--json", help="write the result here")
    args = parser.parse_args(argv)
    try:
        summaries = read_summaries([path for path in args.summaries if path.endswith("_summary.json")])
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    methods = [m for m in args.method.split(",") if m]
    sets, repeated = run_sets(summaries, methods)
    result = {"method": args.method, **within_correlation(sets), "repeated_sets": repeated}
    for name, row in result["by_set"].items():
        print(f"{name:48s} {row['runs']:3d} runs  early ACR {row['early_acr_mean']:.3f}  final {row['final_mean']:.3f}"
              f"  r = {row['r']:+.2f}")
    if repeated:
        print(f"counted once (the same runs in an earlier summary): {', '.join(repeated)}")
    print(f"{args.method}: within-set r = {result['r']:+.3f} over {result['runs']} runs of {result['sets']} sets, "
          f"p = {result['p']:.3g} (t on {result['df']} df, two-sided)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
