"""Whether runs trained again reproduce a committed comparison: each figure that both summaries hold for a run
(a method at a seed), compared run by run.

Since the rollout's draws are keyed (docs/lab.md, "Shared draws"), a seed of the CPU lab is a replay: the same command
samples the same answers, and its figures agree up to float rounding (the batch's rows reach the loss in the order
they come back, so sums are taken in another order; where a sampled token lies that close to a tie it flips, and the
run parts from its twin from there). So a comparison's committed summary can be checked from an empty folder at the
cost of one seed: train that seed again with the committed command's settings, then compare the two summaries:

    python -m rlvr_recipes.launch.replay benchmarks/lab_cw_grpo_80_summary.json --train 80

trains seed 80 of the committed command again (``launch.compare`` with the command's settings, ``--seeds 1
--first-seed 80 --out runs/replay_80``; ``--methods`` picks some of its methods), then compares. Without ``--train``
it trains and scores nothing, and compares runs already trained:

    python -m rlvr_recipes.launch.replay benchmarks/lab_cw_grpo_80_summary.json runs/replay_80/summary.json

The figures by run are those a summary keeps keyed by seed: each claim's values (ACR at each group size, early ACR,
final held-out accuracy, entropy's std over steps, ...) and each method's change of held-out pass@1 and pass@k from
the start. A run is compared where both summaries hold it; the settings that change what a run computes (task, steps,
pass@k samples, overrides) must agree, and both comparisons must have drawn keyed (``paired_by_seed``), since runs
drawn before that were not replays. Exit code 0: every figure within ``--tolerance``; 1: some differ (the table names
the largest difference of each figure and its run); 2: the summaries cannot be compared.

``--publish`` is how a lab target of the Makefile puts the summary of runs trained again in the committed one's place
(:func:`publish_summary`): it prints the comparison where there is one and copies the new summary over the committed
one where both are runs of one experiment (the same settings, methods and seeds), whatever the figures; a summary of
another experiment (a methods or arguments override) leaves the committed one as it is, saying why, and exits 0.
With ``--report-into DOC`` the runs' report (``report.md`` beside the new summary) goes into DOC between its report
markers where the summary was written, and nowhere where it was not (``make lab``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import shutil
import sys
from typing import Any, Optional, Sequence

from rlvr_recipes.launch.compare import ACR_CUT, ACR_VS_G, check_report_publishable, publish_report
from rlvr_recipes.launch.compare import main as compare_main
from rlvr_recipes.launch.verdicts import SETTINGS, read_summaries, seed_label, seed_set

#: the default tolerance: a replay's figures differ by the order of float sums (entropy within 6.1e-7 over 50 steps,
#: docs/lab.md "Shared draws"); a changed answer moves held-out accuracy by 0.005 (one prompt of 200) and pass@1 by
#: 7.8e-5 (one answer of the 12,800 it is scored on)
TOLERANCE = 1e-4

Run = tuple[str, str]  # (method, seed)


#: the figures of a summary's table that time the machine rather than describe the run: left out of a replay
TIMED_FIGURES = frozenset({"s/step"})


def run_figures(summary: dict[str, Any]) -> dict[str, dict[Run, float]]:
    """The figures a ``launch.compare`` summary keeps for each run: ``{figure: {(method, seed): value}}``.

    A claim's values are ``{method: {seed: value}}``, or ``{figure: {method: {seed: value}}}`` for a claim on several
    figures; they are named ``"<claim>"`` and ``"<claim> / <figure>"`` (``"difference by seed"``, one run's figure
    minus another's, is left out). ``change_from_start``'s ``by_seed`` lists (``"pass@k change from start"``) are
    keyed by the setup's seeds in order, and only where the list has one entry a seed and no run is missing (the list
    skips a run whose figure is not finite, so it cannot be keyed otherwise). A summary written since it kept them
    has the table's figures of each run (``figures_by_seed``: ``{method: {figure: {seed: value}}}``), named as the
    table names them, less the seconds a step (:data:`TIMED_FIGURES`: the machine's timing, which no replay gives
    again).
    """
    methods = set(summary.get("setup", {}).get("methods") or [])
    figures: dict[str, dict[Run, float]] = {}

    def add(name: str, method: str, by_seed: dict[str, Any]) -> None:
        for seed, value in by_seed.items():
            if isinstance(value, (int, float)):
                figures.setdefault(name, {})[(method, str(seed))] = float(value)

    for claim in summary.get("claims") or []:
        for key, value in (claim.get("values") or {}).items():
            if not isinstance(value, dict):
                continue
            if key in methods:
                add(claim["claim"], key, value)
            else:
                for method, by_seed in value.items():
                    if method in methods and isinstance(by_seed, dict):
                        add(f"{claim['claim']} / {key}", method, by_seed)
    for method, by_figure in (summary.get("figures_by_seed") or {}).items():
        if method in methods:
            for figure, by_seed in by_figure.items():
                if figure not in TIMED_FIGURES:
                    add(figure, method, by_seed)
    setup = summary.get("setup", {})
    if "seeds" in setup and not setup.get("missing_runs"):
        seeds = [str(s) for s in sorted(seed_set(summary))]
        for method, changes in (summary.get("change_from_start") or {}).items():
            for k, change in changes.items():
                by_seed = change.get("by_seed") or []
                if len(by_seed) == len(seeds):
                    add(f"{k} change from start", method, dict(zip(seeds, by_seed)))
    return figures


def setting_differences(committed: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The settings (:data:`rlvr_recipes.launch.verdicts.SETTINGS`) in which two summaries' setups differ, each as
    ``"key: committed -> new"``: two summaries that differ in one are not replays of each other."""
    a, b = committed.get("setup", {}), new.get("setup", {})
    return [f"{key}: {a.get(key)!r} -> {b.get(key)!r}" for key in SETTINGS if a.get(key) != b.get(key)]


def experiment_differences(committed: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What makes two summaries runs of two experiments, each as ``"key: committed -> new"``: the settings
    (:func:`setting_differences`), the methods (in order) and the seeds. Empty where the new summary may stand in the
    committed one's place."""
    out = setting_differences(committed, new)
    methods = [summary.get("setup", {}).get("methods") for summary in (committed, new)]
    if methods[0] != methods[1]:
        out.append(f"methods: {methods[0]!r} -> {methods[1]!r}")
    seeds = [seed_set(summary) for summary in (committed, new)]
    if seeds[0] != seeds[1]:
        out.append(f"seeds: {seed_label(seeds[0])} -> {seed_label(seeds[1])}")
    return out


def publish_summary(committed_path: str, new_path: str, tolerance: float = TOLERANCE) -> list[str]:
    """Put the summary at ``new_path`` in the place of the committed one (a byte copy), where that is missing or the
    two are runs of one experiment (:func:`experiment_differences`), printing their comparison (:func:`compare_runs`)
    where they can be compared; else leave the committed one as it is.

    Returns the differences that kept the committed summary (empty when it was written).

    Raises:
        ValueError: a summary that cannot be read, naming it.
    """
    [(_, new)] = read_summaries([new_path])
    if os.path.exists(committed_path):
        [(_, committed)] = read_summaries([committed_path])
        differences = experiment_differences(committed, new)
        if differences:
            return differences
        try:
            print(markdown(compare_runs(committed, new, tolerance)), end="")
        except ValueError as exc:
            print(f"[replay] {new_path} and {committed_path} are not compared run by run: {exc}")
    shutil.copyfile(new_path, committed_path)
    return []


def compare_runs(committed: dict[str, Any], new: dict[str, Any], tolerance: float = TOLERANCE) -> dict[str, Any]:
    """Each figure of the runs both summaries hold, committed against new.

    Returns ``{"runs": [(method, seed)] compared, "rows": [{"figure", "compared", "equal", "within", "largest",
    "at", "expected"}], "tolerance", "differing_runs": {"<method> seed <s>": [figure]}, "reproduced": bool}``: the
    runs off by more than ``tolerance`` in a figure expected again, with those figures; and per figure, how many runs
    were compared, how many are equal to the last digit, how many lie within ``tolerance``, the largest absolute
    difference and the run it is at (``None`` where all are equal), and whether a replay should give it again. A
    figure that is not finite on one side and finite on the other counts as a difference of ``inf``; NaN on both sides
    as equal. ACR at a cut group size is expected only where both summaries cut all subgroups (``setup.acr_cut``,
    :data:`compare.ACR_CUT`): before, the cut took the first ``g`` responses to come back, which timing decides;
    ``reproduced`` leaves such rows out.

    Raises:
        ValueError: the setups differ in a setting that changes the runs, the runs start from warm starts of different
            held-out greedy accuracy (another build of the task), a summary did not draw keyed, or the two hold no run
            in common; the message names it.
    """
    differ = setting_differences(committed, new)
    if differ:
        raise ValueError("the comparisons were made with other settings, so they are not replays: " + "; ".join(differ))
    start = {name: {m: row["held-out acc, start"][0] for m, row in (summary.get("table") or {}).items()
                    if "held-out acc, start" in row} for name, summary in (("committed", committed), ("new", new))}
    for method in sorted(set(start["committed"]) & set(start["new"])):
        a, b = start["committed"][method], start["new"][method]
        if _gap(a, b) > tolerance:
            raise ValueError(f"the runs start from other warm starts ({method}'s held-out greedy accuracy at the "
                             f"start: {a:.3f} committed, {b:.3f} new): the build of the task differs (floating-point "
                             "reductions differ between CPUs and thread counts; docs/lab.md, \"pass@k up to k = "
                             "256\"), so no run can replay; compare on a build like the committed one")
    for name, summary in (("committed", committed), ("new", new)):
        if not summary.get("paired_by_seed"):
            raise ValueError(f"the {name} summary's runs did not all draw keyed (paired_by_seed is not true): a seed "
                             "was not a replay then, so its figures are not expected to come again")
    mine, theirs = run_figures(committed), run_figures(new)
    # ACR at a smaller G was the first g responses to come back before ACR_CUT: timing chose them
    same_cut = committed["setup"].get("acr_cut") == new["setup"].get("acr_cut") == ACR_CUT
    rows, runs = [], set()
    differing: dict[Run, list[str]] = {}  # run -> the expected figures it is off in
    for figure, by_run in mine.items():
        common = sorted(set(by_run) & set(theirs.get(figure, {})), key=_run_order)
        if not common:
            continue
        runs.update(common)
        gaps = [(_gap(by_run[r], theirs[figure][r]), r) for r in common]
        largest, at = max(gaps, key=lambda g: g[0])
        expected = same_cut or not figure.startswith(ACR_VS_G + " / ")
        rows.append({"figure": figure, "compared": len(common), "equal": sum(g == 0.0 for g, _ in gaps),
                     "within": sum(g <= tolerance for g, _ in gaps), "largest": largest,
                     "at": list(at) if largest > 0 else None, "expected": expected})
        for gap, run in gaps:
            if expected and gap > tolerance:
                differing.setdefault(run, []).append(figure)
    if not rows:
        raise ValueError("the two summaries hold no run (method and seed) in common: nothing to compare")
    return {"runs": [list(r) for r in sorted(runs, key=_run_order)], "rows": rows, "tolerance": tolerance,
            "differing_runs": {f"{m} seed {s}": figures for (m, s), figures in sorted(differing.items(),
                                                                                     key=lambda rf: _run_order(rf[0]))},
            "reproduced": not differing}


def _run_order(run: Run) -> tuple[str, int]:
    return run[0], int(run[1])


def replay_argv(summary: dict[str, Any], seed: int, out: str, methods: Optional[str] = None) -> list[str]:
    """``launch.compare``'s arguments that train ``seed`` again as the summary's recorded command trained its seeds:
    the command's own arguments with ``--seeds 1 --first-seed SEED --out OUT`` (and ``--methods`` where given), and
    without ``--report-only`` and ``--publish``, which write reports rather than runs.

    Raises:
        ValueError: the summary records no ``launch.compare`` command, ``seed`` is not one of its seeds, or a method
            of ``methods`` is not one of its methods; the message names it.
    """
    setup = summary.get("setup", {})
    words = shlex.split(setup.get("command", ""))
    prefix = ["python", "-m", "rlvr_recipes.launch.compare"]
    if words[:3] != prefix:
        raise ValueError(f"the summary's setup.command is not a launch.compare command: {setup.get('command')!r}")
    if seed not in seed_set(summary):
        raise ValueError(f"seed {seed} is not one of the comparison's seeds ({seed_label(seed_set(summary))})")
    if methods is not None:
        unknown = [m for m in methods.split(",") if m not in setup.get("methods", [])]
        if unknown:
            raise ValueError(f"--methods {','.join(unknown)}: not among the comparison's methods "
                             f"({','.join(setup.get('methods', []))})")
    replaced = {"--seeds": "1", "--first-seed": str(seed), "--out": out, "--publish": None}
    if methods is not None:
        replaced["--methods"] = methods
    argv, rest = [], iter(words[3:])
    for word in rest:
        name = word.split("=", 1)[0]
        if name in replaced:
            if "=" not in word:
                next(rest, None)
        elif word != "--report-only":
            argv.append(word)
    for name, value in replaced.items():
        if value is not None:
            argv += [name, value]
    return argv


def _gap(a: float, b: float) -> float:
    """``|a - b|``; 0 for NaN on both sides, ``inf`` for NaN on one."""
    if math.isnan(a) or math.isnan(b):
        return 0.0 if math.isnan(a) and math.isnan(b) else math.inf
    return abs(a - b)


def markdown(result: dict[str, Any]) -> str:
    """The comparison as a Markdown table, one row a figure, and a closing line with the verdict."""
    lines = ["| figure | runs | equal | within tolerance | largest difference | at |", "|---|---|---|---|---|---|"]
    for row in result["rows"]:
        at = f"{row['at'][0]} seed {row['at'][1]}" if row["at"] else ""
        mark = "" if row["expected"] else " (not expected: cut to the first g responses to come back)"
        lines.append(f"| {row['figure']}{mark} | {row['compared']} | {row['equal']} | {row['within']} | "
                     f"{row['largest']:.3g} | {at} |")
    by_method: dict[str, set[int]] = {}
    for method, seed in result["runs"]:
        by_method.setdefault(method, set()).add(int(seed))
    runs = ", ".join(f"{m} seed{'s' if len(s) > 1 else ''} {seed_label(frozenset(s))}" for m, s in by_method.items())
    expected = [row for row in result["rows"] if row["expected"]]
    n = sum(row["compared"] for row in expected)
    bad = n - sum(row["within"] for row in expected)
    verdict = ("reproduced: every figure within" if result["reproduced"] else f"NOT reproduced: {bad} of {n} figures "
               "differ by more than")
    lines += ["", f"Runs compared: {runs}. {n} figures; {verdict} {result['tolerance']:g}."]
    if result["differing_runs"]:
        off = "; ".join(f"{run} ({len(figures)}: {', '.join(figures)})"
                        for run, figures in result["differing_runs"].items())
        lines.append(f"Runs that differ: {off}. The others reproduce every figure.")
    return "\n".join(lines) + "\n"


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("committed", help="the committed summary (benchmarks/lab_*_summary.json)")
    parser.add_argument("new", nargs="?", default=None,
                        help="the summary.json of the runs trained again (launch.compare --out DIR); with --train, "
                             "OUT/summary.json")
    parser.add_argument("--train", metavar="SEED", type=int, default=None,
                        help="first train this seed again with the committed command's settings")
    parser.add_argument("--methods", default=None,
                        help="with --train: some of the comparison's methods (comma-separated)")
    parser.add_argument("--out", default=None, help="with --train: the runs' folder (default runs/replay_SEED)")
    parser.add_argument("--tolerance", type=float, default=TOLERANCE,
                        help=f"largest absolute difference a figure may show (default {TOLERANCE:g})")
    parser.add_argument("--json", metavar="OUT", default=None, help="also write the comparison to OUT")
    parser.add_argument("--publish", action="store_true",
                        help="copy the new summary over the committed one (or write it where there is none) when "
                             "both are runs of one experiment, whatever the figures; another experiment's summary "
                             "leaves the committed one as it is (exit 0 either way)")
    parser.add_argument("--report-into", metavar="DOC", default=None,
                        help="with --publish: where the summary is written, also copy the report beside it into DOC "
                             "between its report markers (launch.compare --publish); where it is not, DOC is left too")
    args = parser.parse_args(argv)
    if (args.train is None) == (args.new is None):
        parser.error("give either the new summary or --train SEED")
    if args.publish and (args.train is not None or args.json):
        parser.error("--publish takes the new summary, without --train or --json")
    if args.report_into and not args.publish:
        parser.error("--report-into goes with --publish")
    if args.publish:
        out = os.path.dirname(args.new) or "."
        try:
            if args.report_into:  # the report and the doc's markers checked before the summary is written
                check_report_publishable(out, args.report_into)
            kept = publish_summary(args.committed, args.new, args.tolerance)
            img_dir = publish_report(out, args.report_into) if args.report_into and not kept else None
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        if kept:
            print(f"[replay] {args.new} is not of the experiment of {args.committed} ({'; '.join(kept)}): "
                  f"{args.committed} left as it is (cp {args.new} {args.committed} puts it there)"
                  + (f"; {args.report_into} left as it is too" if args.report_into else ""))
        else:
            print(f"[replay] {args.new} written to {args.committed}")
            if img_dir:
                print(f"[replay] report copied into {args.report_into}, figures into {img_dir}")
        return 0
    try:
        [(_, committed)] = read_summaries([args.committed])
        new = args.new
        if args.train is not None:
            out = args.out or os.path.join("runs", f"replay_{args.train}")
            argv = replay_argv(committed, args.train, out, args.methods)
            print("[replay] python -m rlvr_recipes.launch.compare " + shlex.join(argv), flush=True)
            code = compare_main(argv)
            if code:
                return code
            new = os.path.join(out, "summary.json")
        [(_, new_summary)] = read_summaries([new])
        result = compare_runs(committed, new_summary, args.tolerance)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(markdown(result), end="")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"committed": args.committed, "new": new, **result}, f, indent=1)
            f.write("\n")
    return 0 if result["reproduced"] else 1


if __name__ == "__main__":
    sys.exit(main())
