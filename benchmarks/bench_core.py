"""Benchmark: this package's group-statistics core against verl's ``grpo`` and ``grpo_vectorized``, in one run.

All three compute the GRPO advantage from the same ``(bs, L)`` token-level rewards and ``uid`` array and return
``(bs, L)`` token-level advantages. Prints median wall times and each one's ratio to ours (> 1 means ours is faster).

    python benchmarks/bench_core.py                       # 1024 prompts x 8 responses x 4096 tokens
    python benchmarks/bench_core.py --prompts 64 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from typing import Callable

import numpy as np
import torch

import verl  # noqa: F401
from rlvr_recipes.advantage.core import base_advantage, group_stats, outcome_scores, to_token_level
from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage, compute_grpo_vectorized_outcome_advantage


def make_batch(prompts: int, responses: int, tokens: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, np.ndarray]:
    """Benchmark inputs: ``(token_level_rewards (bs, tokens), response_mask (bs, tokens), uid (bs,))`` with a 0/1
    outcome reward on the last valid token of ragged responses, ``bs = prompts * responses``, one uid per prompt."""
    g = torch.Generator().manual_seed(seed)
    bs = prompts * responses
    lengths = torch.randint(1, tokens + 1, (bs,), generator=g)
    mask = (torch.arange(tokens).unsqueeze(0) < lengths.unsqueeze(1)).float()
    tlr = torch.zeros(bs, tokens)
    tlr[torch.arange(bs), lengths - 1] = torch.randint(0, 2, (bs,), generator=g).float()
    uid = np.array([f"uid-{i // responses}" for i in range(bs)], dtype=object)
    return tlr, mask, uid


def ours(token_level_rewards: torch.Tensor, response_mask: torch.Tensor, index: np.ndarray) -> torch.Tensor:
    """GRPO through the shared core, as every estimator of the package computes its base."""
    scores = outcome_scores(token_level_rewards)
    adv = base_advantage(scores, group_stats(scores, index, ddof=1))
    return to_token_level(adv, response_mask)


def timed_round_robin(fns: dict[str, Callable[[], torch.Tensor]], repeat: int) -> dict[str, tuple[float, torch.Tensor]]:
    """Median wall time of each function, run in interleaved rounds after two warm-up rounds, so that allocator
    and page-cache effects of the first large allocations do not fall on whichever function happens to run first."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    outs: dict[str, torch.Tensor] = {}
    for round_ in range(repeat + 2):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            outs[name] = fn()
            if round_ >= 2:
                times[name].append(time.perf_counter() - t0)
    return {name: (statistics.median(times[name]), outs[name]) for name in fns}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompts", type=int, default=1024)
    parser.add_argument("--responses", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=4096)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", help="also write the results to this JSON file")
    args = parser.parse_args()

    torch.manual_seed(0)
    bs = args.prompts * args.responses
    lengths = torch.randint(1, args.tokens + 1, (bs,))
    mask = (torch.arange(args.tokens).unsqueeze(0) < lengths.unsqueeze(1)).float()
    tlr = torch.zeros(bs, args.tokens)
    tlr[torch.arange(bs), lengths - 1] = torch.randint(0, 2, (bs,)).float()
    uid = np.array([f"uid-{i // args.responses}" for i in range(bs)], dtype=object)
    print(f"batch: {args.prompts} prompts x {args.responses} responses x {args.tokens} tokens "
          f"(bs={bs}), torch {torch.__version__}, {torch.get_num_threads()} threads, median of {args.repeat}")

    runs = timed_round_robin(
        {
            "ours (rlvr_recipes.advantage.core)": lambda: ours(tlr, mask, uid),
            "verl grpo_vectorized": lambda: compute_grpo_vectorized_outcome_advantage(tlr, mask, uid)[0],
            "verl grpo": lambda: compute_grpo_outcome_advantage(tlr, mask, uid)[0],
        },
        args.repeat,
    )
    t_ours, a_ours = runs["ours (rlvr_recipes.advantage.core)"]
    for _, other in runs.values():
        torch.testing.assert_close(a_ours, other, rtol=1e-4, atol=1e-4)
    results = {name: t for name, (t, _) in runs.items()}
    print(f"{'function':<28}{'median s':>12}{'time / ours':>14}")
    for name, t in results.items():
        print(f"{name:<28}{t:>12.4f}{t / t_ours:>13.2f}x")
    print("outputs agree to 1e-4")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {"args": vars(args), "torch": torch.__version__, "machine": platform.machine(),
                 "threads": torch.get_num_threads(), "median_s": results},
                f,
                indent=2,
            )


if __name__ == "__main__":
    main()
