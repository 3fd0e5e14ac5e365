"""Evaluation: n samples per problem, unbiased pass@k, greedy accuracy, per-benchmark and weighted averages.

    # score generations that already exist (one JSON object per line: data_source, ground_truth, responses[, greedy])
    python -m launch.evaluate --generations gens.jsonl --k 1 2 4 8 --out runs/eval
    # generate first: Hugging Face on CPU, or vLLM on GPU, from verl parquet test files
    python -m launch.evaluate --model /path/to/model --data data/math500.parquet --n 16 --backend hf --out runs/eval
    # training curves (reward, ACR, entropy) from a run's verl file-logger JSONL
    python -m launch.evaluate --training-log runs/x/metrics.jsonl --out runs/eval

pass@k is the unbiased estimator ``1 - C(n-c, k) / C(n, k)`` (A-GRAE paper App. C.2; two-stage paper, k up to 256),
computed as the stable product ``1 - prod_{i=n-c+1}^{n} (1 - k/i)``. Averages are per benchmark and weighted by
problem count over all benchmarks (the ACR paper's overall average, App. A.3).
"""

from __future__ import annotations

import argparse
import json
import os
from collections import defaultdict
from typing import Any, Iterable, Optional, Sequence

import numpy as np

from reward.math_reward import compute_score


def pass_at_k(n: np.ndarray | int, c: np.ndarray | int, k: int) -> np.ndarray:
    """Unbiased pass@k per problem, vectorised: ``1 - C(n-c, k)/C(n, k)``.

    Args:
        n: ``(P,)`` samples per problem (each ``>= k``).
        c: ``(P,)`` correct samples per problem.
        k: attempts.

    Returns:
        ``(P,)`` float64 in [0, 1].
    """
    n = np.atleast_1d(np.asarray(n, dtype=np.int64))
    c = np.atleast_1d(np.asarray(c, dtype=np.int64))
    if k < 1 or (n < k).any() or (c < 0).any() or (c > n).any():
        raise ValueError(f"pass@{k} needs 1 <= k <= n and 0 <= c <= n (got n={n.tolist()[:5]}, c={c.tolist()[:5]})")
    out = np.ones(n.shape, dtype=np.float64)
    certain = n - c < k  # every k-subset contains a correct sample
    width = int(c.max()) if c.size else 0
    if width:
        i = (n - c)[:, None] + 1 + np.arange(width)[None, :]  # n-c+1 .. n (padded)
        valid = np.arange(width)[None, :] < c[:, None]
        factors = np.where(valid, 1.0 - k / np.maximum(i, 1), 1.0)
        out = 1.0 - np.prod(factors, axis=1)
    out = np.where(c == 0, 0.0, out)
    return np.where(certain & (c > 0), 1.0, out)


def summarise(records: Sequence[dict], ks: Iterable[int]) -> dict[str, Any]:
    """Per-benchmark and overall (weighted by problem count) pass@k and greedy accuracy.

    Args:
        records: one per problem: ``data_source``, ``n``, ``c`` and optionally ``greedy_correct``.
    """
    by_source: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        by_source[r["data_source"]].append(r)
    result: dict[str, Any] = {"benchmarks": {}, "overall": {}}
    totals: dict[str, list[float]] = defaultdict(list)
    for source, rows in sorted(by_source.items()):
        n = np.array([r["n"] for r in rows])
        c = np.array([r["c"] for r in rows])
        entry: dict[str, Any] = {"problems": len(rows)}
        for k in ks:
            if (n >= k).all():
                values = pass_at_k(n, c, k)
                entry[f"pass@{k}"] = float(values.mean())
                totals[f"pass@{k}"].extend(values.tolist())
        greedy = [r["greedy_correct"] for r in rows if r.get("greedy_correct") is not None]
        if greedy:
            entry["greedy_acc"] = float(np.mean(greedy))
            totals["greedy_acc"].extend(float(g) for g in greedy)
        result["benchmarks"][source] = entry
    result["overall"] = {key: float(np.mean(v)) for key, v in totals.items()}
    result["overall"]["problems"] = len(records)
    return result


def score_generations(rows: Iterable[dict], reward_kwargs: Optional[dict] = None) -> list[dict]:
    """Score each problem's ``responses`` (and ``greedy``) with the package's reward; correct = accuracy 1."""
    kwargs = reward_kwargs or {}
    out = []
    for i, row in enumerate(rows):
        for key in ("data_source", "ground_truth", "responses"):
            if key not in row:
                raise ValueError(f"generation record {i} lacks {key!r} (has {sorted(row)})")
        correct = [compute_score(row["data_source"], r, row["ground_truth"], **kwargs)["acc"] for r in row["responses"]]
        greedy = row.get("greedy")
        out.append({
            "data_source": row["data_source"],
            "n": len(correct),
            "c": int(sum(correct)),
            "greedy_correct": None if greedy is None else compute_score(row["data_source"], greedy, row["ground_truth"])["acc"],
        })
    return out


def generate(model: str, data_files: Sequence[str], n: int, backend: str, temperature: float, top_p: float,
             max_new_tokens: int) -> list[dict]:
    """Sample ``n`` responses (and one greedy) per problem of verl parquet ``data_files``.

    ``hf``: transformers ``generate`` (CPU or GPU). ``vllm``: vLLM's offline ``LLM.generate`` (GPU).
    """
    import pandas as pd

    frames = [pd.read_parquet(f) for f in data_files]
    df = pd.concat(frames, ignore_index=True)
    for col in ("prompt", "reward_model", "data_source"):
        if col not in df.columns:
            raise ValueError(f"{data_files}: missing verl column {col!r}; prepare data with python -m launch.data")
    prompts = [list(p) for p in df["prompt"]]
    truths = [rm["ground_truth"] for rm in df["reward_model"]]
    if backend == "vllm":
        from vllm import LLM, SamplingParams  # GPU only; imported lazily

        llm = LLM(model=model)
        sample = llm.chat(prompts, SamplingParams(n=n, temperature=temperature, top_p=top_p, max_tokens=max_new_tokens))
        greedy = llm.chat(prompts, SamplingParams(n=1, temperature=0.0, max_tokens=max_new_tokens))
        texts = [[o.text for o in out.outputs] for out in sample]
        greedy_texts = [out.outputs[0].text for out in greedy]
    elif backend == "hf":
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tok = AutoTokenizer.from_pretrained(model)
        lm = AutoModelForCausalLM.from_pretrained(model)
        texts, greedy_texts = [], []
        for i, messages in enumerate(prompts):
            ids = tok.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt")
            if not isinstance(ids, torch.Tensor):
                ids = ids["input_ids"]
            with torch.no_grad():
                s = lm.generate(ids, do_sample=True, temperature=temperature, top_p=top_p, num_return_sequences=n,
                                max_new_tokens=max_new_tokens, pad_token_id=tok.pad_token_id or tok.eos_token_id)
                g = lm.generate(ids, do_sample=False, max_new_tokens=max_new_tokens,
                                pad_token_id=tok.pad_token_id or tok.eos_token_id)
            texts.append(tok.batch_decode(s[:, ids.shape[1]:], skip_special_tokens=True))
            greedy_texts.append(tok.decode(g[0, ids.shape[1]:], skip_special_tokens=True))
            print(f"[generate] {i + 1}/{len(prompts)}", flush=True)
    else:
        raise ValueError(f"--backend must be hf or vllm, got {backend!r}")
    return [{"data_source": s, "ground_truth": t, "responses": r, "greedy": g}
            for s, t, r, g in zip(df["data_source"], truths, texts, greedy_texts)]


def read_training_log(path: str) -> dict[str, list[tuple[int, float]]]:
    """Per-metric ``[(step, value)]`` from verl's file logger (one JSON object per line, ``{"step", "data"}``)."""
    curves: dict[str, list[tuple[int, float]]] = defaultdict(list)
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            entry = json.loads(line)
            step, data = entry.get("step"), entry.get("data", entry)
            for key, value in data.items():
                if isinstance(value, (int, float)):
                    curves[key].append((int(step), float(value)))
    return curves


def plot_pass_at_k(summary: dict, ks: Sequence[int], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for source, entry in list(summary["benchmarks"].items()) + [("overall", summary["overall"])]:
        xs = [k for k in ks if f"pass@{k}" in entry]
        ax.plot(xs, [entry[f"pass@{k}"] for k in xs], marker="o", label=source,
                linestyle="--" if source == "overall" else "-")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("k")
    ax.set_ylabel("pass@k")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def plot_training(curves: dict[str, list[tuple[int, float]]], path: str) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    wanted = [k for k in curves if k.endswith("reward/mean") or k in ("critic/score/mean", "acr/acr",
              "acr/effective_acr", "actor/entropy")]
    if not wanted:
        wanted = sorted(curves)[:4]
    fig, axes = plt.subplots(1, len(wanted), figsize=(4 * len(wanted), 3.2), squeeze=False)
    for ax, key in zip(axes[0], wanted):
        steps, values = zip(*curves[key])
        ax.plot(steps, values)
        ax.set_title(key)
        ax.set_xlabel("step")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return wanted


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--generations", help="JSONL of problems with responses (skips generation)")
    parser.add_argument("--model", help="model path, with --data")
    parser.add_argument("--data", nargs="*", default=[], help="verl parquet files to generate for")
    parser.add_argument("--backend", default="hf", choices=["hf", "vllm"])
    parser.add_argument("--n", type=int, default=16)
    parser.add_argument("--temperature", type=float, default=0.6)
    parser.add_argument("--top-p", type=float, default=0.95)
    parser.add_argument("--max-new-tokens", type=int, default=2048)
    parser.add_argument("--k", type=int, nargs="*", default=[1, 2, 4, 8, 16, 32, 64, 128, 256])
    parser.add_argument("--training-log", help="verl file-logger JSONL to plot reward/ACR/entropy from")
    parser.add_argument("--out", default="runs/eval")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    if not (args.generations or args.model or args.training_log):
        parser.error("give --generations, or --model with --data, or --training-log")
    if args.generations or args.model:
        if args.generations:
            with open(args.generations) as f:
                rows = [json.loads(line) for line in f if line.strip()]
        else:
            if not args.data:
                parser.error("--model needs --data parquet files")
            rows = generate(args.model, args.data, args.n, args.backend, args.temperature, args.top_p,
                            args.max_new_tokens)
            with open(os.path.join(args.out, "generations.jsonl"), "w") as f:
                f.writelines(json.dumps(r) + "\n" for r in rows)
        summary = summarise(score_generations(rows), args.k)
        with open(os.path.join(args.out, "passk.json"), "w") as f:
            json.dump(summary, f, indent=2)
        plot_pass_at_k(summary, args.k, os.path.join(args.out, "passk.png"))
        print(json.dumps(summary["overall"], indent=1))
        print(f"wrote {args.out}/passk.json and passk.png")
    if args.training_log:
        keys = plot_training(read_training_log(args.training_log), os.path.join(args.out, "training.png"))
        print(f"wrote {args.out}/training.png ({', '.join(keys)})")


if __name__ == "__main__":
    main()
