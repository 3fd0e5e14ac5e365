"""Benchmark every estimator of this package against verl's ``grpo`` and ``grpo_vectorized``, the ``cw_grpo`` loss
against verl's ``vanilla`` loss (forward + backward), and AAPO's cached reference-reward draw, in one run.

    python benchmarks/bench_estimators.py --quick                 # small sizes, seconds
    python benchmarks/bench_estimators.py --json benchmarks/results.json
    python benchmarks/bench_estimators.py --compare benchmarks/results.json   # ratios against an earlier run

Times are medians of interleaved rounds after two warm-up rounds (``bench_core.timed_round_robin``); ratios are
``time / verl grpo_vectorized`` (< 1 is faster than verl's vectorised GRPO).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
from types import SimpleNamespace

import numpy as np
import torch
from omegaconf import OmegaConf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_core import make_batch, timed_round_robin  # noqa: E402

import verl  # noqa: E402,F401
from rlvr_recipes.advantage import state  # noqa: E402
from rlvr_recipes.advantage.estimators import ESTIMATORS  # noqa: E402
from rlvr_recipes.trainer.extension import draw_ref_rewards  # noqa: E402
from verl.trainer.ppo.core_algos import compute_policy_loss_vanilla, get_adv_estimator_fn, get_policy_loss_fn  # noqa: E402


def bench_estimators(sizes, repeat: int) -> list[dict]:
    rows = []
    for prompts, responses, tokens in sizes:
        tlr, mask, uid = make_batch(prompts, responses, tokens)
        ref = torch.randint(0, 2, (tlr.shape[0],)).float()
        cfg = OmegaConf.create({"norm_adv_by_std_in_grpo": True})
        fns = {}
        for name in ("grpo_vectorized", "grpo", *ESTIMATORS):
            fn = get_adv_estimator_fn(name)
            extra = {"ref_rewards": ref} if name == "aapo" else {}
            fns[name] = (lambda fn=fn, extra=extra: fn(token_level_rewards=tlr, response_mask=mask, index=uid,
                                                        config=cfg, **extra)[0])
        state.reset()
        runs = timed_round_robin(fns, repeat)
        base, loop = runs["grpo_vectorized"][0], runs["grpo"][0]
        for name, (t, _) in runs.items():
            rows.append({"size": f"{prompts}x{responses}x{tokens}", "name": name, "seconds": t,
                         "vs_vectorized": t / base, "vs_grpo": t / loop})
        print(f"[estimators] {prompts}x{responses}x{tokens}: "
              + ", ".join(f"{n} {runs[n][0] / base:.2f}x" for n in runs), flush=True)
        del tlr, mask
    return rows


def bench_losses(prompts: int, responses: int, tokens: int, repeat: int) -> list[dict]:
    bs = prompts * responses
    g = torch.Generator().manual_seed(1)
    old = -torch.rand(bs, tokens, generator=g) * 3
    adv = torch.randn(bs, 1, generator=g).expand(bs, tokens).contiguous()
    mask = torch.ones(bs, tokens)
    cfg = SimpleNamespace(clip_ratio=0.2, clip_ratio_low=0.2, clip_ratio_high=0.28, clip_ratio_c=3.0,
                          global_batch_info={}, get=lambda k, d=None: {"clip_ratio_c": 3.0}.get(k, d))

    def step(fn):
        def run():
            lp = (old + 0.01).clone().requires_grad_(True)
            loss, _ = fn(old, lp, adv, mask, "token-mean", cfg)
            loss.backward()
            return lp.grad
        return run

    runs = timed_round_robin({"vanilla": step(compute_policy_loss_vanilla),
                              "cw_grpo": step(get_policy_loss_fn("cw_grpo"))}, repeat)
    base = runs["vanilla"][0]
    print(f"[losses] {prompts}x{responses}x{tokens} fwd+bwd: cw_grpo {runs['cw_grpo'][0] / base:.2f}x vanilla", flush=True)
    return [{"size": f"{prompts}x{responses}x{tokens}", "name": n, "seconds": t, "vs_vanilla": t / base}
            for n, (t, _) in runs.items()]


def bench_ref_draw(prompts: int, responses: int, cache: int, repeat: int) -> list[dict]:
    bs = prompts * responses
    uid = np.array([f"u{i // responses}" for i in range(bs)], dtype=object)
    rng = np.random.default_rng(0)
    infos = np.array([{"index": i // responses, "ref_rewards": rng.integers(0, 2, cache).tolist()} for i in range(bs)],
                     dtype=object)
    tlr, mask, _ = make_batch(prompts, responses, 1)
    aapo = get_adv_estimator_fn("aapo")
    ref = torch.zeros(bs)
    runs = timed_round_robin({
        "draw cached ref rewards": lambda: torch.as_tensor(draw_ref_rewards(infos, uid, step=3)),
        "aapo estimator": lambda: aapo(token_level_rewards=tlr, response_mask=mask, index=uid, config=None,
                                       ref_rewards=ref)[0],
    }, repeat)
    print(f"[aapo cache] {prompts}x{responses}, M={cache}: draw {runs['draw cached ref rewards'][0] * 1e3:.1f} ms, "
          f"estimator {runs['aapo estimator'][0] * 1e3:.1f} ms", flush=True)
    return [{"size": f"{prompts}x{responses}", "name": n, "seconds": t} for n, (t, _) in runs.items()]


def bench_reference_generation(group: int, new_tokens: int) -> dict:
    """Cost model of sampling the reference each step: measured generation time of a tiny randomly initialised
    Llama-type model (built from a config, no download) for one prompt's G responses, against the cached draw."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=512, hidden_size=128, intermediate_size=256, num_hidden_layers=4,
                      num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=1024)
    model = LlamaForCausalLM(cfg).eval()
    params = sum(p.numel() for p in model.parameters())
    prompt = torch.randint(0, 512, (group, 32))
    import time

    with torch.no_grad():
        model.generate(prompt, max_new_tokens=4, min_new_tokens=4, do_sample=True, pad_token_id=0)
        t0 = time.perf_counter()
        model.generate(prompt, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=True, pad_token_id=0)
        seconds = time.perf_counter() - t0
    per_token = seconds / (group * new_tokens)
    print(f"[aapo reference sampling] tiny Llama {params / 1e6:.2f}M params: {group} x {new_tokens} tokens in "
          f"{seconds:.2f} s ({per_token * 1e3:.3f} ms per generated token)", flush=True)
    return {"model_params": params, "group": group, "new_tokens": new_tokens, "seconds": seconds,
            "seconds_per_token": per_token}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", help="write results here")
    parser.add_argument("--compare", help="an earlier results JSON: print time ratios new / old")
    args = parser.parse_args()
    sizes = [(64, 8, 1024)] if args.quick else [(64, 8, 1024), (256, 16, 4096), (1024, 16, 8192)]
    results = {
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus",
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "estimators": bench_estimators(sizes, args.repeat),
        "losses": bench_losses(*((16, 8, 512) if args.quick else (64, 8, 2048)), args.repeat),
        "aapo_ref_cache": bench_ref_draw(64 if args.quick else 1024, 8, 16, args.repeat),
        "aapo_ref_generation": bench_reference_generation(8, 32 if args.quick else 128),
    }
    print("\n| size | estimator | median s | / verl grpo_vectorized | / verl grpo |\n| --- | --- | --- | --- | --- |")
    for r in results["estimators"]:
        print(f"| {r['size']} | `{r['name']}` | {r['seconds']:.4f} | {r['vs_vectorized']:.2f} | {r['vs_grpo']:.2f} |")
    if args.compare:
        with open(args.compare) as f:
            old = {(r["size"], r["name"]): r["seconds"] for r in json.load(f)["estimators"]}
        for r in results["estimators"]:
            if (r["size"], r["name"]) in old:
                print(f"compare {r['size']} {r['name']}: {r['seconds'] / old[(r['size'], r['name'])]:.2f}x of before")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
