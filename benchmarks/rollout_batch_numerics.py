"""Does a request's answer from the CPU rollout server depend on the other requests of its ``generate`` call?

:class:`rlvr_recipes.cpu_backend.hf_server.HFServer` answers the requests that arrive together in one call, padded
to the longest prompt among them. This script builds the server on a task's initial model, takes ``--prompts``
held-out prompts, answers them greedily in one call (the reference), then answers them again in other calls: the same
call once more, subsets of them, the same rows in another order, and the same rows padded wider. For each it prints
whether every answer's tokens and log-probs are equal to the last bit, the largest log-prob difference, and how many
answers' tokens changed (docs/lab.md, "G = 4 against G = 2 on eight new seeds", the paragraph on the server).

    python benchmarks/rollout_batch_numerics.py --json benchmarks/rollout_batch_numerics.json   # ~1 min on 2 cores

It needs the countdown task's build (``runs/tiny_countdown``; ``python -m rlvr_recipes.launch.task_properties --task
countdown`` builds it) and trains nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from typing import Any

import torch


def prompts_of(data_dir: str, tokenizer: Any, count: int) -> list[list[int]]:
    """The token ids of the first ``count`` held-out prompts, as verl's agent loop builds them (chat template)."""
    import pandas as pd

    frame = pd.read_parquet(os.path.join(data_dir, "test.parquet"))
    out = []
    for messages in frame["prompt"][:count]:
        ids = tokenizer.apply_chat_template(list(messages), add_generation_prompt=True, tokenize=True)
        out.append(list(ids["input_ids"] if hasattr(ids, "keys") else ids))
    return out


def answer(server: Any, prompts: list[list[int]], rows: list[int], width: int) -> list[tuple[list[int], list[float]]]:
    """The server's greedy answers to ``prompts[i]`` for ``i`` in ``rows``, in one call, the prompts left-padded to
    ``width`` (the server pads to the longest prompt: a filler prompt of ``width`` tokens, answered and dropped,
    widens the call)."""
    key = server._sampling_key(width, {"temperature": 0.0, "logprobs": True})
    batch = [prompts[i] for i in rows]
    longest = max(len(p) for p in batch)
    filler = [[server.pad_id] * (width - len(batch[0])) + batch[0]] if width > longest else []
    results = server._generate_batch(batch + filler, key, [(0, 0)] * (len(batch) + len(filler)))
    return results[: len(batch)]


def compare(reference: list[tuple[list[int], list[float]]], rows: list[int],
            other: list[tuple[list[int], list[float]]]) -> dict[str, Any]:
    """How ``other`` (the answers to ``rows``) differs from the reference answers of the same prompts."""
    bitwise, tokens_changed, largest = True, 0, 0.0
    for i, (tokens, logp) in zip(rows, other):
        ref_tokens, ref_logp = reference[i]
        if tokens != ref_tokens:
            tokens_changed += 1
            bitwise = False
            continue
        diff = max((abs(a - b) for a, b in zip(logp, ref_logp)), default=0.0)
        largest = max(largest, diff)
        bitwise = bitwise and diff == 0.0
    return {"answers": len(rows), "bitwise_equal": bitwise, "largest_logprob_diff": largest,
            "answers_with_other_tokens": tokens_changed}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiny-dir", default="runs/tiny_countdown", help="the task's build (model/ and data/)")
    parser.add_argument("--prompts", type=int, default=64, help="held-out prompts in the reference call")
    parser.add_argument("--response-length", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2, help="torch threads, as the server's process has them")
    parser.add_argument("--json", default=None, help="write the results here")
    args = parser.parse_args(argv)
    from transformers import AutoTokenizer

    from rlvr_recipes.cpu_backend.hf_server import HFServer

    model_dir = os.path.join(args.tiny_dir, "model")
    if not os.path.isdir(model_dir):
        print(f"error: {model_dir} is missing: build the task first (python -m rlvr_recipes.launch.task_properties "
              "--task countdown)", file=sys.stderr)
        return 2
    torch.set_num_threads(args.threads)
    server = HFServer({"prompt_length": 64, "response_length": args.response_length}, {"local_path": model_dir})
    prompts = prompts_of(os.path.join(args.tiny_dir, "data"), AutoTokenizer.from_pretrained(model_dir), args.prompts)
    width = max(len(p) for p in prompts)
    everyone = list(range(len(prompts)))
    reference = answer(server, prompts, everyone, width)
    rng = random.Random(0)
    shuffled = rng.sample(everyone, len(everyone))
    # each case: the rows of its call and the tokens it is padded beyond the reference call's width
    cases = {"the same call again": (everyone, 0), "the same rows in another order": (shuffled, 0),
             "the same rows padded 4 tokens wider": (everyone, 4)}
    for size in (1, 8, 22, 40):
        cases[f"{size} of the rows"] = (sorted(rng.sample(everyone, size)), 0)
    results = {}
    for name, (rows, wider) in cases.items():
        results[name] = compare(reference, rows, answer(server, prompts, rows, width + wider))
        r = results[name]
        print(f"{name:40s} bitwise equal: {str(r['bitwise_equal']):5s}  largest log-prob difference "
              f"{r['largest_logprob_diff']:.2e}  answers with other tokens: {r['answers_with_other_tokens']} of "
              f"{r['answers']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"setup": {**vars(args), "torch": torch.__version__, "prompt_tokens": [min(map(len, prompts)),
                                                                                             width]},
                       "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
