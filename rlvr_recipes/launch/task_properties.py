"""Measure the properties the CPU lab needs of an embedded task's warm start, on its held-out prompts (docs/lab.md).

    python -m rlvr_recipes.launch.task_properties --task countdown [--samples 64] [--model DIR] [--json PATH]
                                                  [--fresh N [--fresh-seed S]]

Builds the task if needed (:func:`rlvr_recipes.launch.cpu_run.ensure_tiny`), samples ``--samples`` responses per
held-out prompt at temperature 1.0 from the warm-started model (or ``--model``), scores them with the run's reward, and
prints, against the lab's targets:

- the spread: the fraction of prompts whose pass rate p lies in [0.05, 0.95] (target >= 0.40), with both ends
  populated (some prompts below 0.05, some above 0.95);
- the expected advantage collapse rate at G = 8, the mean of p^8 + (1 - p)^8 (ACR paper 000 Sec. 3; target 0.3-0.7);
- pass@1 and pass@k for k = 2, 4, ... ``--samples`` (unbiased estimator), and pass@64 - pass@1 (target >= 0.25);
- the mean response length in tokens (target >= 10), and the median number of distinct correct responses per prompt;
- ``greedy_acc``, the greedy accuracy: of the warm start on the held-out prompts, the trainer's validation before its
  first step, which tells one build of the task from another (it depends on the CPU the warm start trained on; a
  comparison pools and replays only with those of its build). ``--samples 1`` gives it in seconds.

``--fresh N`` measures on N new countdown problems instead (drawn with ``--fresh-seed``, none in the RL, held-out or
warm-start sets): prompts on which no setting of the lab was chosen.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, Callable, Optional, Sequence

import numpy as np

#: the lab's targets (docs/lab.md)
TARGETS = {"spread": 0.40, "acr_g8": (0.3, 0.7), "room": 0.25, "tokens": 10.0}


def properties(counts: np.ndarray, samples: int, record: dict[str, list]) -> dict[str, Any]:
    """The lab's figures from ``(P,)`` correct counts out of ``samples`` each and the sampling ``record`` of
    :func:`rlvr_recipes.launch.compare.sample_correct_counts`."""
    from rlvr_recipes.launch.compare import passk_curve

    p = counts / samples
    curve = passk_curve(counts, samples)
    room_k = min(64, samples)
    return {
        "prompts": int(len(counts)),
        "samples": samples,
        "pass@1": curve[1],
        "pass@k": curve,
        f"pass@{room_k}-pass@1": curve[room_k] - curve[1],
        "spread_0.05_0.95": float(np.mean((p >= 0.05) & (p <= 0.95))),
        "below_0.05": float(np.mean(p < 0.05)),
        "above_0.95": float(np.mean(p > 0.95)),
        "at_0": float(np.mean(p == 0)),
        "at_1": float(np.mean(p == 1)),
        "expected_acr_g8": float(np.mean(p**8 + (1 - p) ** 8)),
        "mean_response_tokens": float(np.mean(record["tokens"])),
        "distinct_correct_median": float(np.median(record["distinct_correct"])),
    }


def verdicts(props: dict[str, Any]) -> dict[str, bool]:
    """Each target of the lab: met or not."""
    room = next(v for k, v in props.items() if k.endswith("-pass@1"))
    lo, hi = TARGETS["acr_g8"]
    return {
        "spread >= 0.40, both ends populated": props["spread_0.05_0.95"] >= TARGETS["spread"]
        and props["below_0.05"] > 0 and props["above_0.95"] > 0,
        "ACR at G=8 in [0.3, 0.7]": lo <= props["expected_acr_g8"] <= hi,
        "pass@64 - pass@1 >= 0.25": room >= TARGETS["room"],
        "responses >= 10 tokens": props["mean_response_tokens"] >= TARGETS["tokens"],
    }


def write_fresh_prompts(path: str, count: int, seed: int) -> str:
    """A verl parquet file at ``path`` of ``count`` fresh countdown problems
    (:func:`rlvr_recipes.tiny_task.countdown.fresh_problems` of the lab's task)."""
    import pandas as pd

    from rlvr_recipes.tiny_task.build import countdown_rows
    from rlvr_recipes.tiny_task.countdown import CountdownSpec, fresh_problems

    pd.DataFrame(countdown_rows(fresh_problems(CountdownSpec(), count, seed), "fresh")).to_parquet(path)
    return path


def scorer(task: str = "countdown", samples: int = 64, tiny_dir: Optional[str] = None, seed: int = 0,
           prompts: Optional[str] = None, greedy: bool = False) -> Callable[[Optional[str]], dict[str, Any]]:
    """Build ``task`` if needed and return ``score(model_dir)``: the :func:`properties` of a model (None: the task's
    warm start) on ``prompts`` (a verl parquet file; default the held-out prompts). The task, its reward and its
    settings are set up once, so one scorer serves many models; ``score(model_dir, seed=s)`` draws from seed ``s``'s
    keyed streams instead of ``seed``'s (a run's own, as :mod:`rlvr_recipes.launch.compare` scores it). With
    ``greedy`` the properties hold ``greedy_acc`` too (``compare.greedy_accuracy``: on the held-out prompts of the
    warm start, the build's mark, a summary's ``held-out acc, start``)."""
    from rlvr_recipes.launch.cpu_run import compose, embedded_task, ensure_tiny
    from rlvr_recipes.launch.compare import greedy_accuracy, sample_correct_counts
    from rlvr_recipes.reward.reference import reference_settings, settings_reward

    paths = ensure_tiny(tiny_dir, task)
    settings = reference_settings(compose(list(embedded_task(task).overrides)))
    reward_fn = settings_reward(settings)

    def score(model_dir: Optional[str] = None, seed: int = seed) -> dict[str, Any]:
        record: dict[str, list] = {}
        counts = sample_correct_counts(model_dir or paths["model"], prompts or paths["test"], reward_fn, samples,
                                       settings["max_response_length"], seed=seed, record=record)
        props = properties(counts, samples, record)
        if greedy:
            props["greedy_acc"] = greedy_accuracy(model_dir or paths["model"], prompts or paths["test"], reward_fn,
                                                  settings["max_response_length"])
        return props

    return score


def measure(task: str = "countdown", samples: int = 64, model_dir: Optional[str] = None,
            tiny_dir: Optional[str] = None, seed: int = 0, fresh: int = 0, fresh_seed: int = 1) -> dict[str, Any]:
    """Build ``task`` if needed and measure its warm start (or ``model_dir``) on the held-out prompts, or on
    ``fresh`` new ones."""
    import tempfile

    if fresh and task != "countdown":
        raise ValueError(f"--fresh draws countdown problems; the task is {task!r}")
    with tempfile.TemporaryDirectory() as tmp:
        prompts = write_fresh_prompts(f"{tmp}/fresh.parquet", fresh, fresh_seed) if fresh else None
        return scorer(task, samples, tiny_dir, seed, prompts, greedy=True)(model_dir)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="countdown")
    parser.add_argument("--samples", type=int, default=64, help="responses per held-out prompt (default 64)")
    parser.add_argument("--model", default=None, help="a Hugging Face model folder (default: the task's warm start)")
    parser.add_argument("--tiny-dir", default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None, help="write the figures here")
    parser.add_argument("--fresh", type=int, default=0, help="measure on this many new problems (countdown)")
    parser.add_argument("--fresh-seed", type=int, default=1, help="seed of the new problems (default 1)")
    args = parser.parse_args(argv)
    t0 = time.monotonic()
    try:
        props = measure(args.task, args.samples, args.model, args.tiny_dir, args.seed, args.fresh, args.fresh_seed)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    checks = verdicts(props)
    for key, value in props.items():
        if key != "pass@k":
            print(f"{key:>26}: {value:.3f}" if isinstance(value, float) else f"{key:>26}: {value}")
    print(" " * 18 + "pass@k: " + "  ".join(f"{k}: {v:.3f}" for k, v in props["pass@k"].items()))
    for name, ok in checks.items():
        print(f"[{'met' if ok else 'NOT met'}] {name}")
    print(f"measured in {time.monotonic() - t0:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"task": args.task, "properties": props, "targets_met": checks,
                       "command": "python -m rlvr_recipes.launch.task_properties " + " ".join(sys.argv[1:])}, f,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
