"""Which tiny model and warm start give the countdown task the properties the CPU lab needs (docs/lab.md)?

For each model size and warm-start length, it trains a randomly initialised Llama-type model (character vocabulary of
``rlvr_recipes.tiny_task.build``) by supervised steps on one answer of a random fraction of the training problems, then
samples ``--samples`` responses per held-out prompt at temperature 1 and measures, with the countdown verifier:

- the spread of per-prompt pass@1: the fraction of prompts with pass@1 in [0.05, 0.95], and at 0 and at 1;
- ACR at G = 8 expected from each prompt's pass rate p: mean of p^8 + (1 - p)^8 (000 Sec. 3);
- pass@1, pass@k for k up to ``--samples`` (unbiased estimator), pass@64 - pass@1;
- mean response length in tokens, and how many distinct correct answers per prompt were sampled.

    python benchmarks/lab_countdown_warmstart.py --json benchmarks/lab_countdown_warmstart.json   # a GPU: ~2 min
    python benchmarks/lab_countdown_warmstart.py --quick                                          # CPU: seconds

Nothing is downloaded: problems from ``rlvr_recipes.tiny_task.countdown``, models built from a config.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from typing import Any

import numpy as np
import torch

from rlvr_recipes.reward.countdown import is_solution
from rlvr_recipes.tiny_task.build import vocabulary
from rlvr_recipes.tiny_task.countdown import make_problems, solutions

VOCAB = vocabulary()
ID = {tok: i for i, tok in enumerate(VOCAB)}
PAD, EOS = 0, 1
MAX_RESPONSE = 40

SIZES = {
    "h64x4": dict(hidden_size=64, intermediate_size=256, num_hidden_layers=4, num_attention_heads=4),
    "h128x4": dict(hidden_size=128, intermediate_size=512, num_hidden_layers=4, num_attention_heads=4),
    "h256x4": dict(hidden_size=256, intermediate_size=1024, num_hidden_layers=4, num_attention_heads=8),
}


def prompt_of(problem: dict) -> str:
    return ",".join(map(str, problem["numbers"])) + ">" + str(problem["target"]) + ":"


def encode(text: str) -> list[int]:
    return [ID[c] for c in text]


def decode(ids: list[int]) -> str:
    out = []
    for i in ids:
        if i == EOS:
            break
        if i > 2:
            out.append(VOCAB[i])
    return "".join(out)


def build_model(size: str, device: str, seed: int) -> Any:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    spec = SIZES[size]
    cfg = LlamaConfig(vocab_size=len(VOCAB), num_key_value_heads=spec["num_attention_heads"],
                      max_position_embeddings=64, pad_token_id=PAD, eos_token_id=EOS, bos_token_id=EOS, **spec)
    return LlamaForCausalLM(cfg).to(device)


def training_examples(problems: list[dict], frac: float, rng: random.Random) -> list[tuple[list[int], list[int]]]:
    """(prompt ids, answer ids + EOS) for a random ``frac`` of the problems, one random answer each."""
    chosen = [p for p in problems if rng.random() < frac]
    out = []
    for p in chosen:
        answer = rng.choice(sorted(solutions(p["numbers"], p["target"], limit=200)))
        out.append((encode(prompt_of(p)), encode(answer) + [EOS]))
    return out


def batches(examples, batch_size: int, rng: random.Random, device: str):
    while True:
        rng.shuffle(examples)
        for i in range(0, len(examples) - batch_size + 1, batch_size):
            chunk = examples[i : i + batch_size]
            width = max(len(p) + len(a) for p, a in chunk)
            ids = torch.full((batch_size, width), PAD, dtype=torch.long)
            labels = torch.full((batch_size, width), -100, dtype=torch.long)
            for r, (p, a) in enumerate(chunk):
                ids[r, : len(p) + len(a)] = torch.tensor(p + a)
                labels[r, len(p) : len(p) + len(a)] = torch.tensor(a)
            yield ids.to(device), labels.to(device)


@torch.no_grad()
def sample(model: Any, prompts: list[str], samples: int, device: str, chunk: int = 8192) -> list[list[str]]:
    """``samples`` responses per prompt at temperature 1 (prompts of one length batch together, no padding)."""
    model.eval()
    out: list[list[str]] = [[] for _ in prompts]
    by_len: dict[int, list[int]] = {}
    for i, p in enumerate(prompts):
        by_len.setdefault(len(p), []).append(i)
    for idxs in by_len.values():
        rows = [i for i in idxs for _ in range(samples)]
        for s in range(0, len(rows), chunk):
            part = rows[s : s + chunk]
            ids = torch.tensor([encode(prompts[i]) for i in part], device=device)
            gen = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=True, temperature=1.0, top_k=0,
                                 top_p=1.0, max_new_tokens=MAX_RESPONSE, pad_token_id=PAD, eos_token_id=EOS)
            for i, seq in zip(part, gen[:, ids.shape[1]:].tolist()):
                out[i].append(decode(seq))
    model.train()
    return out


def pass_at_k(n: int, c: int, k: int) -> float:
    return 1.0 if n - c < k else 1.0 - math.comb(n - c, k) / math.comb(n, k)


def properties(problems: list[dict], responses: list[list[str]]) -> dict[str, Any]:
    from fractions import Fraction

    n = len(responses[0])
    correct = np.array([[is_solution(r, Fraction(p["target"]), p["numbers"]) for r in rs]
                        for p, rs in zip(problems, responses)])
    p = correct.mean(axis=1)
    ks = [k for k in (1, 2, 4, 8, 16, 32, 64, 128, 256) if k <= n]
    passk = {k: float(np.mean([pass_at_k(n, int(c), k) for c in correct.sum(axis=1)])) for k in ks}
    lengths = [len(r) + 1 for rs in responses for r in rs]  # characters are tokens; +1 for EOS
    distinct = [len({r for r, ok in zip(rs, cs) if ok}) for rs, cs in zip(responses, correct)]
    return {
        "pass@1": float(p.mean()), "pass@k": passk,
        "room_pass64_minus_pass1": passk.get(64, float("nan")) - passk[1],
        "frac_spread_0.05_0.95": float(np.mean((p >= 0.05) & (p <= 0.95))),
        "frac_at_0": float(np.mean(p == 0)), "frac_at_1": float(np.mean(p == 1)),
        "expected_acr_g8": float(np.mean(p**8 + (1 - p) ** 8)),
        "mean_response_tokens": float(np.mean(lengths)),
        "distinct_correct_per_prompt_median": float(np.median(distinct)),
        "readable_frac": float(np.mean([[bool(r) for r in rs] for rs in responses])),
    }


def run(size: str, frac: float, checkpoints: list[int], train: list[dict], held: list[dict], samples: int,
        device: str, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    model = build_model(size, device, seed)
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0)
    examples = training_examples(train, frac, rng)
    if not examples:
        raise ValueError(f"no training examples at train_frac={frac}")
    stream = batches(examples, min(256, len(examples)), rng, device)
    prompts = [prompt_of(p) for p in held]
    rows, step, t0 = [], 0, time.time()
    for stop in checkpoints:
        while step < stop:
            ids, labels = next(stream)
            loss = model(input_ids=ids, labels=labels).loss
            loss.backward()
            opt.step()
            opt.zero_grad()
            step += 1
        props = properties(held, sample(model, prompts, samples, device))
        row = {"size": size, "params": params, "train_frac": frac, "steps": step, "train_examples": len(examples),
               "loss": float(loss.detach()), "seconds": round(time.time() - t0, 1), **props}
        rows.append(row)
        print(f"[{size} frac {frac} step {step}] pass@1 {props['pass@1']:.3f} spread "
              f"{props['frac_spread_0.05_0.95']:.2f} (0: {props['frac_at_0']:.2f}, 1: {props['frac_at_1']:.2f}) "
              f"ACR@8 {props['expected_acr_g8']:.2f} pass@64-pass@1 {props['room_pass64_minus_pass1']:.3f} "
              f"len {props['mean_response_tokens']:.1f} distinct {props['distinct_correct_per_prompt_median']:.0f}",
              flush=True)
    return rows


def main(argv: Any = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", default=None)
    parser.add_argument("--quick", action="store_true", help="tiny sizes and counts (a CPU smoke run)")
    parser.add_argument("--samples", type=int, default=64)
    args = parser.parse_args(argv)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if args.quick:
        train, held = make_problems(300, seed=0), make_problems(20, seed=1)
        plan, samples = [("h64x4", 0.5, [20])], 8
    else:
        train, held = make_problems(4000, seed=0), make_problems(400, seed=1)
        plan = [(size, frac, [250, 500, 1000, 2000]) for size in ("h128x4", "h256x4") for frac in (0.25, 0.5)]
        samples = args.samples
    seen = {p["ground_truth"] for p in train}
    held = [p for p in held if p["ground_truth"] not in seen]
    print(f"{len(train)} training problems, {len(held)} held-out (not in training), {samples} samples each, {device}")
    rows = []
    for size, frac, checkpoints in plan:
        rows += run(size, frac, checkpoints, train, held, samples, device, seed=0)
    if args.json:
        meta = {"device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu", "torch": torch.__version__,
                "held_out": len(held), "samples": samples}
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "runs": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
