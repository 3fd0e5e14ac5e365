"""How far apart do the addition task's warm starts land, and where does that leave the default run (docs/cpu.md)?

The warm start (:func:`rlvr_recipes.tiny_task.warmstart.warm_start`) stops at the first check, every 10 steps, where
one sample at temperature 1 is right on a target fraction (45 %) of 256 training problems. The model it stops at is
not the same on every CPU: floating-point reductions differ, and the trajectory with them. This script stands a
warm-start seed in for a CPU (each seed draws other batches and another probe from the same initial model) and
follows whole trajectories: at every check it records the probe's sampled accuracy (what the stopping rule reads) and
the held-out (test split) sampled and greedy accuracy, so that the rule can be read off afterwards for each of
``--targets``. It prints, per learning rate and target, the stopping steps and the held-out greedy accuracy at the
stop, which is where a GRPO run starts.

    python benchmarks/addition_warm_start_spread.py --json benchmarks/addition_warm_start_spread.json   # ~6 min
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from typing import Any

import torch
from transformers import AutoTokenizer

from rlvr_recipes.tiny_task.build import TinyModelSpec, build_model, build_tokenizer
from rlvr_recipes.tiny_task.task import TaskSpec, addition_problems
from rlvr_recipes.tiny_task.warmstart import sampled_accuracy, warm_start


def trajectory(lr: float, seed: int, max_steps: int, task: TaskSpec) -> list[dict[str, float]]:
    """One warm start from the default initial model, never stopped, with the four accuracies at every check."""
    _, test = addition_problems(task)
    rows: list[dict[str, float]] = []

    def record(step: int, probe_acc: float, model: Any) -> None:
        rows.append({"step": step, "probe_sampled": probe_acc,
                     "test_sampled": sampled_accuracy(model, tokenizer, test, seed=10**6 + step),
                     "test_greedy": sampled_accuracy(model, tokenizer, test, temperature=0.0)})

    with tempfile.TemporaryDirectory() as model_dir:
        build_tokenizer(model_dir)
        build_model(model_dir, TinyModelSpec(), seed=task.seed)
        tokenizer = AutoTokenizer.from_pretrained(model_dir)
        warm_start(model_dir, task, max_steps=max_steps, target_acc=2.0, lr=lr, seed=seed, on_check=record)
    return rows


def stops(trajectories: dict[int, list[dict[str, float]]], target: float) -> list[dict[str, float]]:
    """Where the warm start's rule (first check with the probe's sampled accuracy >= ``target``) stops each one."""
    out = []
    for seed, rows in trajectories.items():
        row = next((r for r in rows if r["probe_sampled"] >= target), None)
        if row is not None:
            out.append({"seed": seed, **row})
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lrs", default="3e-3,1e-3", help="warm-start learning rates (3e-3: the default)")
    parser.add_argument("--seeds", type=int, default=12, help="warm-start seeds 0..N-1 per learning rate")
    parser.add_argument("--targets", default="0.3,0.35,0.4,0.45",
                        help="stopping targets to read off (0.45: the default)")
    parser.add_argument("--max-steps", default="3e-3:700,1e-3:400", help="steps followed per learning rate")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    task = TaskSpec()
    max_steps = {float(k): int(v) for k, v in (kv.split(":") for kv in args.max_steps.split(","))}
    t0 = time.monotonic()
    result: dict[str, Any] = {"what": "addition warm starts followed for --seeds warm-start seeds per learning rate, "
                                      "each stopping rule read off the same trajectories",
                              "command": "python benchmarks/addition_warm_start_spread.py " + " ".join(sys.argv[1:]),
                              "torch_threads": torch.get_num_threads(), "by_lr": {}}
    for lr in (float(x) for x in args.lrs.split(",")):
        trajectories = {}
        for seed in range(args.seeds):
            trajectories[seed] = trajectory(lr, seed, max_steps.get(lr, 700), task)
            print(f"[spread] lr {lr:g} seed {seed}: {len(trajectories[seed])} checks "
                  f"[{time.monotonic() - t0:.0f} s]", flush=True)
        by_target = {}
        for target in (float(x) for x in args.targets.split(",")):
            st = stops(trajectories, target)
            greedy = [r["test_greedy"] for r in st]
            steps = [r["step"] for r in st]
            by_target[str(target)] = {"stopped": len(st), "of": len(trajectories), "stops": st}
            if greedy:
                mean, sd = statistics.mean(greedy), statistics.pstdev(greedy)
                by_target[str(target)].update(greedy_mean=mean, greedy_sd=sd)
                print(f"lr {lr:g} target {target:.2f}: {len(st)}/{len(trajectories)} stopped, steps "
                      f"{min(steps)}-{max(steps)}, held-out greedy at the stop {min(greedy):.2f}-{max(greedy):.2f} "
                      f"(mean {mean:.3f}, sd {sd:.3f}), sampled "
                      f"{min(r['test_sampled'] for r in st):.2f}-{max(r['test_sampled'] for r in st):.2f}")
        result["by_lr"][f"{lr:g}"] = {"trajectories": trajectories, "by_target": by_target}
    print(f"done in {time.monotonic() - t0:.0f} s")
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
