"""Per-step cost of AAPO's cached reference rewards against the advantage step itself (CPU, docs/trainer.md).

    python -m benchmarks.bench_trainer

Batch: N prompts x G responses, M cached reference rewards per prompt, response length L; best of 5 timings each.
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np
import torch
import verl
from omegaconf import OmegaConf

from rlvr_recipes.advantage.diagnostics import ACRTracker
from rlvr_recipes.trainer.extension import advantage_step, draw_ref_rewards

N, G, M, L = 512, 8, 16, 1024  # prompts, rollout.n, cached refs per prompt, response length


def best_ms(fn: Callable[[], object], repeats: int = 5) -> float:
    """Fastest of ``repeats`` wall-clock timings of ``fn()``, in milliseconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times) * 1e3


def main() -> None:
    rng = np.random.default_rng(0)
    uid = np.repeat(np.array([f"p{i}" for i in range(N)], dtype=object), G)
    infos = np.array(
        [{"index": i, "ref_rewards": rng.integers(0, 2, M).astype(float).tolist()} for i in range(N) for _ in range(G)],
        dtype=object,
    )
    tlr = torch.zeros(N * G, L)
    tlr[:, -1] = torch.from_numpy(rng.integers(0, 2, N * G)).float()
    mask = torch.ones(N * G, L)
    ref = torch.as_tensor(draw_ref_rewards(infos, uid, step=3))
    # the trainer passes the batch's tokens, so that the pairing follows what the rows hold (prompts of 512 tokens)
    prompts = np.repeat(rng.integers(0, 32000, (N, 512)), G, axis=0)
    responses = rng.integers(0, 32000, (N * G, L))

    def step(estimator: str, **fields: torch.Tensor):
        cfg = OmegaConf.create({"adv_estimator": estimator, "norm_adv_by_std_in_grpo": True})
        data = verl.DataProto.from_dict(tensors={"token_level_rewards": tlr.clone(), "response_mask": mask, **fields},
                                        non_tensors={"uid": uid})
        return advantage_step(data, cfg, ACRTracker())

    print(f"bs={N * G} (N={N} prompts x G={G}), M={M}, L={L}")
    print(f"draw_ref_rewards            {best_ms(lambda: draw_ref_rewards(infos, uid, step=3)):8.2f} ms")
    print(f"draw_ref_rewards (tokens)   "
          f"{best_ms(lambda: draw_ref_rewards(infos, uid, step=3, prompts=prompts, responses=responses)):8.2f} ms")
    print(f"advantage_step grpo         {best_ms(lambda: step('grpo')):8.2f} ms")
    print(f"advantage_step aapo (field) {best_ms(lambda: step('aapo', ref_rewards=ref)):8.2f} ms")


if __name__ == "__main__":
    main()
