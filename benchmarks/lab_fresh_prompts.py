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

With ``--by-seed`` each run is scored on its own seed's keyed draws and the warm start on every seed's, as
``launch.compare`` scores them, so that the runs of one seed share their draws: each method's change from the warm
start and each claim's pair are then tested seed by seed (the paired t-test, :func:`~rlvr_recipes.launch.compare.
paired_change`) rather than by Welch's test, and ``--json`` also holds the claims they test in ``launch.compare``'s
summary form (:func:`claims`), which ``launch.verdicts`` reads beside the comparisons' summaries. ``--methods``
scores only the runs of the methods named, ``--seed-list`` only those of the seeds named (a list, not a count as
``launch.compare``'s ``--seeds``): with ``--keep``, the record of a command stopped at a cut-off, on the seeds it had
scored for every method by then, takes no new scoring.

    python benchmarks/lab_fresh_prompts.py --out runs/lab_confirm --held-out --samples 256 --by-seed \
        --methods grpo,grpo_n,agrae,cw_grpo --json benchmarks/lab_confirm_passk256.json   # 105 min on 2 cores
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
from collections import defaultdict
from typing import Any

import numpy as np

from rlvr_recipes.launch.compare import (CLAIMED_ABOVE, CW_GRPO_BASELINES, EXPLORATION_CLAIMS, finished_runs,
                                         paired_change, paired_claim, welch_test)
from rlvr_recipes.launch.task_properties import scorer, write_fresh_prompts
from rlvr_recipes.launch.verdicts import START_KEY, start_accuracy

FIGURES = ("pass@1", "pass@8", "pass@max", "at_0", "above_0.95")
#: the figure here of each figure an exploration claim names (compare.EXPLORATION_CLAIMS; its direction is
#: compare.CLAIMED_ABOVE's); entropy is not measured here
FIGURE_OF_CLAIM = {"pass1": "pass@1", "passk": "pass@max", "passk_below": "pass@max"}
#: (method, its baseline, figure, whether the claim is that the method's lies above, paper): the pairs of the lab's
#: claims about learning (launch.compare.claims), the exploration claims on large-k pass@k (and pass@1 where
#: claimed), CW-GRPO's on accuracy (pass@1 here)
CLAIM_PAIRS = (*((m, base, FIGURE_OF_CLAIM[name], CLAIMED_ABOVE[name], source)
                 for m, base, source, figures in EXPLORATION_CLAIMS
                 for name in FIGURE_OF_CLAIM if name in figures),
               *(("cw_grpo", base, "pass@1", True, source) for base, source in CW_GRPO_BASELINES))


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
    parser.add_argument("--by-seed", action="store_true",
                        help="score each run on its own seed's draws and the warm start on every seed's, and test "
                             "seed by seed (paired t-test)")
    parser.add_argument("--methods", default=None, help="score only these methods' runs (comma-separated)")
    parser.add_argument("--seed-list", default=None, type=seed_list,
                        help="score only these seeds' runs (comma-separated; A-B for A to B), e.g. 205-210 (a "
                             "list, not a count as launch.compare's --seeds)")
    return parser


def seed_list(text: str) -> list[int]:
    """``--seed-list``: comma-separated seeds, each a number or a range ``A-B`` (both ends in it), e.g. ``205-210,212``.

    Raises:
        argparse.ArgumentTypeError: a part that is neither, or a range that runs backwards (named).
    """
    seeds: list[int] = []
    for part in text.split(","):
        first, dash, last = part.strip().partition("-")
        if not first.isdigit() or (dash and not last.isdigit()):
            raise argparse.ArgumentTypeError(f"{part.strip()!r} is not a seed or a range A-B of seeds")
        span = range(int(first), int(last or first) + 1)
        if not span:
            raise argparse.ArgumentTypeError(f"{part.strip()!r}: the range runs backwards")
        seeds.extend(s for s in span if s not in seeds)
    return seeds


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
    for key in ("out", "fresh", "fresh_seed", "samples", "held_out", "by_seed"):
        if getattr(before, key) != getattr(args, key):
            raise ValueError(f"{path} was scored with --{key.replace('_', '-')} {getattr(before, key)}, this command "
                             f"has {getattr(args, key)}: leave out --keep or write another --json")
    return {"warm_start": recorded["warm_start"],
            "runs": {(m, r["seed"]): r for m, rs in recorded["runs"].items() for r in rs}}


def _test(a: dict[int, float], b: dict[int, float], by_seed: bool) -> dict[str, Any]:
    """``mean(a) - mean(b)`` (each a figure by seed) with its 95 % interval and p: the paired t-test over the seeds
    both have (``by_seed``) or Welch's test over seeds; ``d`` is the difference, ``seeds`` how many (paired) or
    ``[n_a, n_b]``."""
    if by_seed:
        seeds = sorted(set(a) & set(b))
        c = paired_change([a[s] - b[s] for s in seeds])
        return {"d": c["mean"], "low": c["low"], "high": c["high"], "p": c["p"], "seeds": len(seeds),
                "by_seed": dict(zip(seeds, c["by_seed"]))}
    return {**welch_test(list(a.values()), list(b.values())), "seeds": [len(a), len(b)]}


def summarise(results: dict[str, list[dict[str, Any]]], start: dict[int, dict[str, float]],
              by_seed: bool) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Per method: each figure's mean and std over seeds, and pass@1's and pass@max's change from the warm start;
    each claim's pair (:data:`CLAIM_PAIRS`) tested on its figure (:func:`_test`).

    ``results`` maps a method to its runs (``{"seed", figure: value}``); ``start`` maps a seed to the warm start's
    figures on that seed's draws (``by_seed``), or holds the one warm start under every seed. Changes from the warm
    start are paired by seed; with ``by_seed`` the methods' pairs are too, else Welch's test compares them.
    """
    table: dict[str, Any] = {}
    by = {m: {k: {r["seed"]: r[k] for r in rs} for k in FIGURES} for m, rs in results.items()}
    for method, rs in results.items():
        row: dict[str, Any] = {k: (float(np.mean([r[k] for r in rs])), float(np.std([r[k] for r in rs])))
                               for k in FIGURES}
        for k in ("pass@1", "pass@max"):
            change = paired_change([r[k] - start[r["seed"]][k] for r in rs])
            row[f"{k} change"] = {key: change[key] for key in ("by_seed", "mean", "low", "high", "p")}
        if method != "grpo" and "grpo" in by and len(rs) >= 2 and len(by["grpo"]["pass@1"]) >= 2:
            row["vs_grpo_pass@1"] = _test(by[method]["pass@1"], by["grpo"]["pass@1"], by_seed)
        table[method] = row
    pairs = []
    for method, base, key, _, source in CLAIM_PAIRS:
        if method not in by or base not in by:
            continue
        a, b = by[method][key], by[base][key]
        if min(len(a), len(b)) < 2 or (by_seed and len(set(a) & set(b)) < 2):
            continue
        pairs.append({"method": method, "baseline": base, "figure": key, "source": source, **_test(a, b, by_seed)})
    return table, pairs


def claims(results: dict[str, list[dict[str, Any]]], start: dict[int, dict[str, float]],
           pairs: list[dict[str, Any]], samples: int) -> list[dict[str, Any]]:
    """The claims these scores test, each run on its own seed's draws, in ``launch.compare``'s summary form
    (``{"claim", "source", "verdict", "evidence", "values", "higher"}``, :func:`~rlvr_recipes.launch.compare.claims`),
    so that ``launch.verdicts`` sets them beside the comparisons' verdicts and pools them (``higher``: whether the
    claim is that the method's figure lies above the base's, which a claim that cannot be judged does not tell):
    GRPO's pass@``samples`` at the end below the warm start's at its seed (001 Sec. 4.2, Fig. 2: GRPO narrows the
    boundary), then each claim's pair that :func:`summarise` tested (``pairs``), both seed by seed
    (:func:`~rlvr_recipes.launch.compare.diff_verdict`, paired).

    ``values`` holds each side's figure by seed (seeds as strings) and ``"difference by seed"``, the figures the
    verdict was taken on; a claim needs two seeds scored on both sides.
    """
    by = {m: {k: {str(r["seed"]): r[k] for r in rs} for k in ("pass@1", "pass@max")} for m, rs in results.items()}
    wording = {("pass@max", True): f"keeps large-k pass@{samples} above", ("pass@1", True): "ends with pass@1 above",
               ("pass@max", False): f"ends with large-k pass@{samples} below"}
    tests = []
    if "grpo" in by:
        initial = {str(s): f["pass@max"] for s, f in start.items()}
        tests.append((f"grpo's large-k pass@{samples} ends below the initial model's", "001 Sec. 4.2, Fig. 2",
                      "grpo", by["grpo"]["pass@max"], "initial model", initial, False))
    claimed_above = {(m, base, key): above for m, base, key, above, _ in CLAIM_PAIRS}
    for p in pairs:
        above = claimed_above[p["method"], p["baseline"], p["figure"]]
        tests.append((f"{p['method']} {wording[p['figure'], above]} {p['baseline']}", p["source"], p["method"],
                      by[p["method"]][p["figure"]], p["baseline"], by[p["baseline"]][p["figure"]], above))
    return [paired_claim(claim, source, name, mine, base, theirs, higher)
            for claim, source, name, mine, base, theirs, higher in tests if len(set(mine) & set(theirs)) >= 2]


def _interval(t: dict[str, Any]) -> str:
    return f"{t['d']:+.3f} [{t['low']:+.3f}, {t['high']:+.3f}] p={t['p']:.2g}"


def main() -> int:
    args = build_parser().parse_args()
    if args.keep and not args.json:
        print("error: --keep reads the scores of --json; give --json", file=sys.stderr)
        return 2
    if not os.path.isdir(os.path.join(args.out, "runs")):
        print(f"error: {args.out}/runs not found: run the comparison first (make lab)", file=sys.stderr)
        return 2
    runs = finished_runs(args.out)
    if args.methods:
        wanted = args.methods.split(",")
        unknown = [m for m in wanted if m not in runs]
        if unknown:
            print(f"error: --methods {','.join(unknown)}: no finished run in {args.out} (it has "
                  f"{', '.join(runs) or 'none'})", file=sys.stderr)
            return 2
        runs = {m: runs[m] for m in wanted}
    if args.seed_list:
        finished = {m: {spec.seed for spec in specs} for m, specs in runs.items()}
        missing = {m: [s for s in args.seed_list if s not in seeds] for m, seeds in finished.items()}
        missing = {m: seeds for m, seeds in missing.items() if seeds}
        if missing:
            print("error: --seed-list " + "; ".join(f"{','.join(map(str, seeds))}: no finished run of {m} in {args.out}"
                                                for m, seeds in missing.items()), file=sys.stderr)
            return 2
        runs = {m: [spec for spec in specs if spec.seed in args.seed_list] for m, specs in runs.items()}
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

    def score(model_dir: Any, seed: int = 0) -> dict[str, float]:
        if not built:
            prompts = None if args.held_out else write_fresh_prompts(os.path.join(tmp.name, "fresh.parquet"),
                                                                      args.fresh, args.fresh_seed)
            built.append(scorer("countdown", args.samples, prompts=prompts))
        return figures(built[0](model_dir, seed=seed))

    def line(fig: dict[str, float]) -> str:
        return "  ".join(f"{k} {v:.3f}" for k, v in fig.items())

    # the warm start: once (seed 0's draws), or at every seed of the runs (before that seed's runs), as compare does
    kept_start = kept.get("warm_start") or {}
    start: dict[str, dict[str, float]] = {}

    def warm_start(seed: int) -> dict[str, float]:
        key = str(seed) if args.by_seed else "all"
        if key not in start:
            was = kept_start.get(key) if args.by_seed else kept_start or None
            start[key] = was or score(None, seed=seed if args.by_seed else 0)
            say(f"warm start{f' seed {seed}' if args.by_seed else ''}{' (kept)' if was else ''}: {line(start[key])}")
        return start[key]

    results: dict[str, list[dict[str, Any]]] = {}
    steps = sorted({spec.steps for specs in runs.values() for spec in specs})
    # seed by seed, so that a command stopped early leaves whole seeds (--keep resumes it)
    for spec in sorted((spec for specs in runs.values() for spec in specs),
                       key=lambda spec: (spec.seed, list(runs).index(spec.method))):
        warm_start(spec.seed)
        was = kept.get("runs", {}).get((spec.method, spec.seed))
        fig = ({k: was[k] for k in FIGURES} if was
               else score(spec.final_model, seed=spec.seed if args.by_seed else 0))
        results.setdefault(spec.method, []).append({"seed": spec.seed, **fig})
        say(f"{spec.method} seed {spec.seed}{' (kept)' if was else ''}: {line(fig)}")
        if args.json:  # after every model, so that --keep resumes a command stopped early
            write_json(args, start, results, None, None, steps)
    if not results:
        warm_start(0)
    start_of = {int(s): f for s, f in start.items()} if args.by_seed else defaultdict(lambda: start["all"])
    table, pairs = summarise(results, start_of, args.by_seed)

    test = "paired t-test by seed" if args.by_seed else "Welch's t-test over seeds"
    mean_start = {k: float(np.mean([f[k] for f in start.values()])) for k in FIGURES}
    print(f"\n{problems_of(args)} x {args.samples} samples; warm start pass@1 {mean_start['pass@1']:.3f}, "
          f"pass@{args.samples} {mean_start['pass@max']:.3f}{' (mean over seeds)' if args.by_seed else ''}")
    print(f"{'method':<12} {'seeds':>5} {'pass@1':>15} {'pass@8':>15} {'pass@max':>15}  pass@1 and pass@max change "
          f"from the warm start (t-test of the changes by seed); vs grpo (pass@1, {test})")
    for method, row in table.items():
        cell = lambda k: f"{row[k][0]:.3f} +/- {row[k][1]:.3f}"  # noqa: E731
        change = lambda k: _interval({"d": row[k]["mean"], **row[k]})  # noqa: E731
        vs = _interval(row["vs_grpo_pass@1"]) if "vs_grpo_pass@1" in row else ""
        print(f"{method:<12} {len(results[method]):>5} {cell('pass@1'):>15} {cell('pass@8'):>15} "
              f"{cell('pass@max'):>15}  {change('pass@1 change')}; {change('pass@max change')}; {vs}")
    print(f"\nthe claims' pairs ({test}, 95 % interval of the difference)")
    for pair in pairs:
        print(f"{pair['method']:<12} vs {pair['baseline']:<9} {pair['figure']:<9} {_interval(pair)} "
              f"({pair['seeds']} seeds; {pair['source']})")
    print(f"done in {time.monotonic() - t0:.0f} s")
    if args.json:
        write_json(args, start, results, table, pairs, steps)
    return 0


def comparison_of(out: str) -> dict[str, Any]:
    """The task, overrides and build (the initial model's held-out greedy accuracy) of the comparison whose runs are
    scored, from its ``summary.json`` in ``out``, or nothing where it has none: ``launch.verdicts`` pools the claims
    of two rescorings only where these agree (:func:`~rlvr_recipes.launch.verdicts.pooled`)."""
    path = os.path.join(out, "summary.json")
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        summary = json.load(f)
    return {"task": summary["setup"].get("task"), "overrides": summary["setup"].get("overrides"),
            START_KEY: start_accuracy(summary)}


def problems_of(args: argparse.Namespace) -> str:
    return "the build's held-out prompts" if args.held_out else f"{args.fresh} fresh problems (seed {args.fresh_seed})"


def write_json(args: argparse.Namespace, start: dict[str, Any], results: dict[str, Any], table: Any,
               pairs: Any, steps: list[int]) -> None:
    """The scores so far (``table`` and ``pairs`` None until every model is scored) to ``args.json``.

    With ``--by-seed`` and every model scored it also holds ``setup`` (the seeds, methods, steps and samples) and
    ``claims`` (:func:`claims`), the two parts of ``launch.compare``'s summary that ``launch.verdicts`` reads. The
    command recorded is the one whose scores these are: ``--keep`` only spares scoring them again, so it is left out.
    """
    warm = start if args.by_seed else start.get("all", {})
    what = (f"the warm start and the final model of each run of {args.out} on {problems_of(args)} of the countdown "
            f"task x {args.samples} samples" + (", each on its own seed's draws" if args.by_seed else ""))
    record = {"what": what,
              "command": "python benchmarks/lab_fresh_prompts.py " + " ".join(a for a in sys.argv[1:] if a != "--keep"),
              "warm_start": warm, "runs": results, "by_method": table, "claim_pairs": pairs}
    if args.by_seed and pairs is not None:
        seeds = sorted({r["seed"] for rs in results.values() for r in rs})
        record["setup"] = {"scored": problems_of(args), "methods": list(results), "seeds": len(seeds),
                           "first_seed": seeds[0] if seeds else 0, "seed_list": seeds,
                           "steps": steps[0] if len(steps) == 1 else steps, "passk_samples": args.samples,
                           **comparison_of(args.out)}
        record["claims"] = claims(results, {int(s): f for s, f in start.items()}, pairs, args.samples)
    with open(args.json, "w") as f:
        json.dump(record, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
