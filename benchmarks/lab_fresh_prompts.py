"""The lab's final models on countdown problems no setting of the lab was chosen on (docs/lab.md).

The lab's warm-start length and learning rate were chosen by measurements on its 200 held-out prompts, so its
held-out figures may flatter every method a little. This script scores the warm start and each finished run of a
comparison (``runs/lab`` by default, the final Hugging Face model of each method x seed) on ``--fresh`` new problems
of the task's distribution, drawn with ``--fresh-seed`` (:func:`rlvr_recipes.tiny_task.countdown.fresh_problems`:
none is in the RL, held-out or warm-start sets), ``--samples`` responses each at temperature 1, and prints per method
pass@1 / pass@8 / pass@k-max (mean and std over seeds), pass@1's change from the warm start, and each method against
GRPO by Welch's t-test over seeds (the comparison's own test, :func:`rlvr_recipes.launch.compare.welch_test`).

    python benchmarks/lab_fresh_prompts.py --json benchmarks/lab_fresh_prompts.json   # ~30 s per model on 2 cores

With ``--held-out`` the same figures are taken on the build's 200 held-out prompts instead, for a larger k than the
comparison scored (``--samples 256``: pass@256 of every finished run, without training them again).

With ``--keep`` the runs (and the warm start) already scored in ``--json`` by a command with the same ``--out``,
``--fresh``, ``--fresh-seed`` and ``--samples`` are kept and only the runs finished since are scored. The pairs of
the report's claims (:data:`CLAIM_PAIRS`: each method against the baseline its paper compares with) are tested on
the figure each claim is about.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import sys
import tempfile
import time
from typing import Any

import numpy as np

from rlvr_recipes.launch.compare import CW_GRPO_BASELINES, EXPLORATION_CLAIMS, finished_runs, welch_test
from rlvr_recipes.launch.task_properties import scorer, write_fresh_prompts

FIGURES = ("pass@1", "pass@8", "pass@max", "at_0", "above_0.95")
#: (method, its baseline, figure, paper): the pairs of the lab's claims about learning (launch.compare.claims), the
#: exploration claims on large-k pass@k (and pass@1 where claimed), CW-GRPO's on accuracy (pass@1 here)
#: the figure here of each figure an exploration claim names (compare.EXPLORATION_CLAIMS); entropy is not measured here
FIGURE_OF_CLAIM = {"pass1": "pass@1", "passk": "pass@max"}
CLAIM_PAIRS = (*((m, base, FIGURE_OF_CLAIM[name], source) for m, base, source, figures in EXPLORATION_CLAIMS
                 for name in FIGURE_OF_CLAIM if name in figures),
               *(("cw_grpo", base, "pass@1", source) for base, source in CW_GRPO_BASELINES))


def figures(props: dict[str, Any]) -> dict[str, float]:
    """The figures this script reports, from :func:`rlvr_recipes.launch.task_properties.properties`."""
    passk = props["pass@k"]
    return {"pass@1": props["pass@1"], "pass@8": passk.get(8, passk.get("8", math.nan)),
            "pass@max": passk[max(passk, key=int)], "at_0": props["at_0"], "above_0.95": props["above_0.95"]}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="runs/lab", help="the comparison's folder (default runs/lab)")
    parser.add_argument("--fresh", type=int, default=200, help="new problems (default 200)")
    parser.add_argument("--fresh-seed", type=int, default=1, help="seed of the new problems (default 1)")
    parser.add_argument("--samples", type=int, default=64, help="responses per problem (default 64)")
    parser.add_argument("--held-out", action="store_true",
                        help="score on the build's held-out prompts, not on fresh problems (--fresh is not used)")
    parser.add_argument("--json", default=None)
    parser.add_argument("--keep", action="store_true",
                        help="keep the scores already in --json (same settings); score only the runs not in it")
    return parser


def kept_scores(path: str, args: argparse.Namespace) -> dict[str, Any]:
    """The warm start's and the runs' figures recorded in ``path`` by a command with the same settings as ``args``
    (read back from the command the file records); ``{}`` when there is no such file.

    Raises:
        ValueError: the file was written with other settings (named).
    """
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        recorded = json.load(f)
    before = build_parser().parse_args(shlex.split(recorded["command"])[2:])
    for key in ("out", "fresh", "fresh_seed", "samples", "held_out"):
        if getattr(before, key) != getattr(args, key):
            raise ValueError(f"{path} was scored with --{key.replace('_', '-')} {getattr(before, key)}, this command "
                             f"has {getattr(args, key)}: leave out --keep or write another --json")
    return {"warm_start": recorded["warm_start"],
            "runs": {(m, r["seed"]): r for m, rs in recorded["runs"].items() for r in rs}}


def main() -> int:
    args = build_parser().parse_args()
    if args.keep and not args.json:
        print("error: --keep reads the scores of --json; give --json", file=sys.stderr)
        return 2
    if not os.path.isdir(os.path.join(args.out, "runs")):
        print(f"error: {args.out}/runs not found: run the comparison first (make lab)", file=sys.stderr)
        return 2
    runs = finished_runs(args.out)
    try:
        kept = kept_scores(args.json, args) if args.keep else {}
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    tag = "held-out" if args.held_out else "fresh"
    say = lambda s: print(f"[{tag}] {s} [{time.monotonic() - t0:.0f} s]", flush=True)  # noqa: E731
    tmp = tempfile.TemporaryDirectory()
    built: list[Any] = []  # the scorer, built at the first model to score (about 80 s; not at all when all are kept)

    def score(model_dir: Any) -> dict[str, float]:
        if not built:
            prompts = None if args.held_out else write_fresh_prompts(os.path.join(tmp.name, "fresh.parquet"),
                                                                      args.fresh, args.fresh_seed)
            built.append(scorer("countdown", args.samples, prompts=prompts))
        return figures(built[0](model_dir))

    start = kept.get("warm_start") or score(None)
    say(("warm start (kept): " if kept else "warm start: ") + "  ".join(f"{k} {v:.3f}" for k, v in start.items()))
    results: dict[str, list[dict[str, Any]]] = {}
    for method, specs in runs.items():
        for spec in specs:
            was = kept.get("runs", {}).get((method, spec.seed))
            fig = {k: was[k] for k in FIGURES} if was else score(spec.final_model)
            results.setdefault(method, []).append({"seed": spec.seed, **fig})
            say(f"{method} seed {spec.seed}{' (kept)' if was else ''}: "
                + "  ".join(f"{k} {v:.3f}" for k, v in fig.items()))

    table: dict[str, Any] = {}
    problems = ("the build's held-out prompts" if args.held_out
                else f"{args.fresh} fresh problems (seed {args.fresh_seed})")
    print(f"\n{problems} x {args.samples} samples; warm start pass@1 "
          f"{start['pass@1']:.3f}, pass@{args.samples} {start['pass@max']:.3f}")
    print(f"{'method':<12} {'seeds':>5} {'pass@1':>15} {'change':>8} {'pass@8':>15} {'pass@max':>15}  vs grpo (pass@1)")
    base = [r["pass@1"] for r in results.get("grpo", [])]
    for method, rs in results.items():
        row = {k: (float(np.mean([r[k] for r in rs])), float(np.std([r[k] for r in rs]))) for k in FIGURES}
        row["pass@1 change"] = [r["pass@1"] - start["pass@1"] for r in rs]
        vs = ""
        if method != "grpo" and len(rs) >= 2 and len(base) >= 2:
            t = welch_test([r["pass@1"] for r in rs], base)
            row["vs_grpo_pass@1"] = t
            vs = f"{t['d']:+.3f} [{t['low']:+.3f}, {t['high']:+.3f}] p={t['p']:.2g}"
        table[method] = row
        cell = lambda k: f"{row[k][0]:.3f} +/- {row[k][1]:.3f}"  # noqa: E731
        print(f"{method:<12} {len(rs):>5} {cell('pass@1'):>15} {row['pass@1'][0] - start['pass@1']:>+8.3f} "
              f"{cell('pass@8'):>15} {cell('pass@max'):>15}  {vs}")
    pairs = []
    print("\nthe claims' pairs (Welch's t-test over seeds, 95 % interval of the difference)")
    for method, base, key, source in CLAIM_PAIRS:
        a, b = ([r[key] for r in results.get(m, [])] for m in (method, base))
        if len(a) < 2 or len(b) < 2:
            continue
        t = welch_test(a, b)
        pairs.append({"method": method, "baseline": base, "figure": key, "source": source, **t})
        print(f"{method:<12} vs {base:<9} {key:<9} {t['d']:+.3f} [{t['low']:+.3f}, {t['high']:+.3f}] p={t['p']:.2g} "
              f"({len(a)} and {len(b)} seeds; {source})")
    print(f"done in {time.monotonic() - t0:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"what": f"the warm start and the final model of each run of {args.out} on {problems} of the "
                               f"countdown task x {args.samples} samples",
                       "command": "python benchmarks/lab_fresh_prompts.py " + " ".join(sys.argv[1:]),
                       "warm_start": start, "runs": results, "by_method": table, "claim_pairs": pairs}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
