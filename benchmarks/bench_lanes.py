"""What lanes buy a comparison: the same runs trained one at a time and then several at once (``launch.compare
--jobs``; docs/lab.md, "Lanes").

Each leg is the command a user runs, ``python -m rlvr_recipes.launch.compare ... --jobs J``, into a folder of its own
(``<out>/jobs<J>``, made afresh), so every leg trains every run. The initial model's pass@k is scored once, by the
first leg, and copied to the others, so the legs differ in their training only. Per leg this prints and writes to
``--json``:

- the wall time of its training (``trained_wall_s`` of the comparison's summary) and the ratio to the first leg's;
- the median step (verl's ``timing_s/step``) and the median run (start-up, training and pass@k scoring of one run);
- how busy the machine's cores were over the leg (``/proc/stat``: 1 - idle share);
- against the first leg, run by run: at how many steps the run sampled the same answers (the rollouts each run dumps,
  compared as multisets of (prompt, answer) pairs), the largest difference of its training reward and entropy at any
  step, and whether its final pass@k is the same.

    python -m benchmarks.bench_lanes --methods grpo,cw_grpo --seeds 2 --steps 20 --jobs 1,2,3 \\
        --json benchmarks/lanes.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from typing import Any

from benchmarks.lab_pairing import answers, load


def cpu_times() -> tuple[int, int]:
    """(total, idle) jiffies of all cores since boot, from ``/proc/stat`` (idle includes iowait)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return sum(fields), fields[3] + fields[4]


def run_leg(args: argparse.Namespace, jobs: int, out: str, first: str | None) -> dict[str, Any]:
    """One leg: the comparison with ``--jobs jobs`` into ``out`` (made afresh; the initial pass@k copied from the
    first leg's folder ``first``). Returns its timings, read from its summary and runs."""
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    if first is not None:
        shutil.copytree(os.path.join(first, "passk_start"), os.path.join(out, "passk_start"))
    cmd = [sys.executable, "-m", "rlvr_recipes.launch.compare", "--task", args.task, "--methods", args.methods,
           "--seeds", str(args.seeds), "--first-seed", str(args.first_seed), "--steps", str(args.steps),
           "--passk-samples", str(args.passk_samples), "--out", out, "--jobs", str(jobs)]
    log = out + ".log"
    print(f"[bench_lanes] jobs {jobs}: {' '.join(cmd[1:])} (log {log})", flush=True)
    total0, idle0 = cpu_times()
    t0 = time.monotonic()
    with open(log, "w") as f:
        proc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT)
    wall = time.monotonic() - t0
    total1, idle1 = cpu_times()
    if proc.returncode != 0:
        raise RuntimeError(f"jobs {jobs}: the comparison exited {proc.returncode}; see {log}")
    with open(os.path.join(out, "summary.json")) as f:
        setup = json.load(f)["setup"]
    runs = {(method, seed): run for method, by_seed in load(out).items() for seed, run in by_seed.items()}
    result = {"jobs": jobs, "out": os.path.relpath(out), "command_wall_s": round(wall, 1), "trained_runs": setup["trained_runs"],
              "trained_wall_s": setup["trained_wall_s"], "median_step_s": setup["median_step_s"],
              "median_run_s": round(statistics.median(r["seconds"] for r in runs.values()), 1),
              "cores_busy": round(1 - (idle1 - idle0) / max(total1 - total0, 1), 3)}
    print(f"[bench_lanes] jobs {jobs}: {result['trained_runs']} runs trained in {result['trained_wall_s']:.0f} s, "
          f"median step {result['median_step_s']} s, median run {result['median_run_s']} s, cores busy "
          f"{100 * result['cores_busy']:.0f} %", flush=True)
    return {**result, "runs": runs}


def same_runs(base: dict[tuple[str, int], dict[str, Any]], other: dict[tuple[str, int], dict[str, Any]],
              steps: int) -> dict[str, Any]:
    """Run by run, how far ``other``'s runs are from ``base``'s: steps with the same answers, the largest difference
    of training reward and entropy at any step, and whether the final pass@k is the same."""
    out = {}
    for key, run in base.items():
        twin = other[key]
        same = sum(answers(run["path"], s) == answers(twin["path"], s) for s in range(1, steps + 1))
        diff = {name: max(abs(run["curves"][name][s] - twin["curves"][name][s]) for s in run["curves"][name])
                for name in ("critic/score/mean", "actor/entropy")}
        out[f"{key[0]} seed {key[1]}"] = {"steps_same_answers": same, "max_reward_diff": diff["critic/score/mean"],
                                          "max_entropy_diff": diff["actor/entropy"],
                                          "passk_end_same": run["passk_end"] == twin["passk_end"]}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--methods", default="grpo,cw_grpo")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--passk-samples", type=int, default=16)
    parser.add_argument("--task", default="countdown")
    parser.add_argument("--jobs", default="1,2,3", help="comma-separated lanes per leg; the first is the baseline")
    parser.add_argument("--out", default=os.path.join("runs", "bench_lanes"))
    parser.add_argument("--json", default=None, help="write the results here")
    args = parser.parse_args(argv)
    legs = [int(j) for j in args.jobs.split(",")]
    results = []
    for jobs in legs:
        first = results[0]["out"] if results else None
        results.append(run_leg(args, jobs, os.path.abspath(os.path.join(args.out, f"jobs{jobs}")), first))
    base = results[0]
    print(f"\n| lanes | runs | wall of training (s) | vs {base['jobs']} lane(s) | median step (s) | median run (s) "
          "| cores busy | runs with every step's answers equal to the first leg's |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for leg in results:
        leg["wall_ratio"] = round(leg["trained_wall_s"] / base["trained_wall_s"], 3)
        leg["replay"] = same_runs(base["runs"], leg["runs"], args.steps)
        equal = sum(r["steps_same_answers"] == args.steps for r in leg["replay"].values())
        print(f"| {leg['jobs']} | {leg['trained_runs']} | {leg['trained_wall_s']:.0f} | {leg['wall_ratio']:.2f}x | "
              f"{leg['median_step_s']} | {leg['median_run_s']} | {100 * leg['cores_busy']:.0f} % | "
              f"{equal} of {len(leg['replay'])} |")
    for leg in results[1:]:
        for name, r in leg["replay"].items():
            print(f"  jobs {leg['jobs']}, {name}: {r['steps_same_answers']}/{args.steps} steps with the same answers, "
                  f"reward within {r['max_reward_diff']:.2g}, entropy within {r['max_entropy_diff']:.2g}, "
                  f"pass@k end {'the same' if r['passk_end_same'] else 'different'}")
    if args.json:
        for leg in results:
            leg.pop("runs")
        with open(args.json, "w") as f:
            json.dump({"command": "python -m benchmarks.bench_lanes " + " ".join(sys.argv[1:]),
                       "machine": f"{platform.machine()}, {os.cpu_count()} cores", "legs": results}, f, indent=1)
        print(f"[bench_lanes] wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
