"""What pass@k scoring costs when lanes score at once: ``launch.compare``'s ``sample_correct_counts`` on the held-out
prompts of the embedded countdown task (64 samples each, the lab's setting), alone and as two processes at the same
time, with torch's default threads (the physical cores) and with each process's share of them
(``lane_torch_threads``, what a lane now sets).

    python benchmarks/bench_lane_scoring.py --model MODEL_DIR --json benchmarks/lane_scoring.json

``MODEL_DIR`` is a Hugging Face model folder, e.g. a run's final weights
(``runs/<out>/runs/grpo/seed10/checkpoints/global_step_50/actor/huggingface``). Prints the seconds of each leg and
its ratio to one scorer alone with the default threads; every leg must count the same correct answers.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

_CHILD = """
import sys, time, torch
threads = int(sys.argv[1])
if threads:
    torch.set_num_threads(threads)
from rlvr_recipes.launch.compare import sample_correct_counts
from rlvr_recipes.reward.reference import settings_reward
model, test, samples, reward_path, reward_name, max_new = sys.argv[2:8]
fn = settings_reward({"reward_path": reward_path, "reward_name": reward_name})
t = time.perf_counter()
counts = sample_correct_counts(model, test, fn, int(samples), int(max_new), seed=10)
print(time.perf_counter() - t, int(counts.sum()), torch.get_num_threads(), flush=True)
"""


def leg(scoring: list[str], processes: int, threads: int) -> list[tuple[float, int, int]]:
    """``processes`` scorers started together, each with ``threads`` torch threads (0: torch's default) and the
    ``scoring`` arguments of :func:`main` (model, prompts, samples, reward module and name, response length); each
    one's (seconds, correct answers counted, threads used)."""
    procs = [subprocess.Popen([sys.executable, "-c", _CHILD, str(threads), *scoring],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) for _ in range(processes)]
    out = []
    for p in procs:
        stdout, _ = p.communicate()
        if p.returncode:
            raise RuntimeError(f"a scorer failed with exit code {p.returncode}")
        seconds, correct, used = stdout.split()[-3:]
        out.append((float(seconds), int(correct), int(used)))
    return out


def main() -> None:
    import torch

    from rlvr_recipes.launch.compare import lane_torch_threads
    from rlvr_recipes.launch.cpu_run import compose, embedded_task, ensure_tiny
    from rlvr_recipes.reward.reference import reference_settings

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="a Hugging Face model folder to score")
    ap.add_argument("--samples", type=int, default=64)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    test = ensure_tiny(None, "countdown")["test"]
    # the task's reward and response length, as the lab's runs and their scoring have them
    settings = reference_settings(compose(list(embedded_task("countdown").overrides)))
    # the reward as every scoring of the package loads it (reward.reference.settings_reward; "": the default)
    scoring = [args.model, test, str(args.samples), settings["reward_path"] or "", settings["reward_name"] or "",
               str(settings["max_response_length"])]
    default = torch.get_num_threads()
    share = lane_torch_threads(2, default)
    legs = {"alone, default threads": (1, 0), "alone, a lane's share": (1, share),
            "two at once, default threads": (2, 0), "two at once, a lane's share each": (2, share)}
    results = {}
    for name, (processes, threads) in legs.items():
        results[name] = leg(scoring, processes, threads)
        print(f"{name:36s} " + ", ".join(f"{s:.1f} s ({u} threads)" for s, _, u in results[name]), flush=True)
    base = results["alone, default threads"][0][0]
    for name, runs in results.items():
        print(f"{name:36s} {max(s for s, _, _ in runs) / base:.2f}x one scorer alone")
    counted = {c for runs in results.values() for _, c, _ in runs}
    print("every leg counted the same correct answers" if len(counted) == 1 else f"counts differ: {sorted(counted)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": " ".join(["python", "benchmarks/bench_lane_scoring.py", *sys.argv[1:]]),
                       "machine": {"cores": os.cpu_count(), "torch_threads": default, "python": platform.python_version(),
                                   "torch": torch.__version__},
                       "samples": args.samples, "legs": {k: [{"seconds": round(s, 2), "correct": c, "threads": u}
                                                             for s, c, u in v] for k, v in results.items()},
                       "same_counts": len(counted) == 1, "time": time.strftime("%Y-%m-%d %H:%M:%S")}, f, indent=1)


if __name__ == "__main__":
    main()
