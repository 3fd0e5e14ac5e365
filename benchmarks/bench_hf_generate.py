"""What the model's own generation costs in a step of the CPU lab: the hf rollout server's batched ``generate`` alone,
on the task's first 16 training prompts x 8 answers (one step's batch), sampled at temperature 1 with the keyed draws
of a run, without verl, Ray or the agent loop around it.

    python benchmarks/bench_hf_generate.py --task countdown --json benchmarks/hf_generate_countdown.json

Set against ``timing_s/gen`` of ``benchmarks/bench_cpu_step.py`` (the whole generation phase of a step, verl's
per-sample agent loop included), it says how much of that phase is the model. One thread, as Ray gives the server.
Medians over ``--reps`` rounds, each the 128 answers in batches of the given size (128: one call, as in a run).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time

import pandas as pd
import torch


def prompts_of_a_step(train_file: str, tokenizer, prompts: int, n: int) -> list[list[int]]:
    """The chat-formatted token ids of the first ``prompts`` training prompts, each ``n`` times (a step's batch)."""
    df = pd.read_parquet(train_file)
    ids = []
    for i in range(prompts):
        out = tokenizer.apply_chat_template(list(df.iloc[i]["prompt"]), add_generation_prompt=True, tokenize=True)
        ids.append(list(out if isinstance(out, list) else out["input_ids"]))
    return [p for p in ids for _ in range(n)]


def main() -> None:
    from transformers import AutoTokenizer

    from rlvr_recipes.cpu_backend.hf_server import HFServer
    from rlvr_recipes.launch.cpu_run import TASKS, ensure_tiny

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--task", default="countdown", choices=sorted(TASKS))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--batch-sizes", default="128,64,32")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    torch.set_num_threads(1)
    paths = ensure_tiny(task=args.task)  # built on first use, as a run builds it
    model = paths["model"]
    tokenizer = AutoTokenizer.from_pretrained(model)
    server = HFServer({"prompt_length": 64, "response_length": 32, "dtype": "float32", "seed": 0},
                      {"path": model, "local_path": model})
    batch = prompts_of_a_step(paths["train"], tokenizer, 16, 8)
    key = server._sampling_key(max(len(p) for p in batch), {"temperature": 1.0, "logprobs": True})
    rows = []
    for size in [int(s) for s in args.batch_sizes.split(",")]:
        times, lengths = [], []
        for rep in range(args.reps):
            server.global_steps = rep  # another step's draws each round, as in a run
            t0 = time.perf_counter()
            for start in range(0, len(batch), size):
                chunk = batch[start:start + size]
                answers = server._generate_batch(chunk, key, [server._noise_key(p) for p in chunk])
                lengths += [len(tokens) for tokens, _ in answers]
            times.append(time.perf_counter() - t0)
        rows.append({"batch_size": size, "median_s": round(statistics.median(times), 4),
                     "times_s": [round(t, 4) for t in times], "mean_answer_tokens": round(statistics.mean(lengths), 2)})
        print(f"{len(batch)} answers in batches of {size:>3}: median {statistics.median(times):.3f} s over "
              f"{args.reps} rounds, {statistics.mean(lengths):.1f} tokens an answer", flush=True)
    if args.json:
        result = {"task": args.task, "answers": len(batch), "max_new_tokens": key.max_tokens, "threads": 1,
                  "machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
                              "torch": torch.__version__},
                  "rows": rows}
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
