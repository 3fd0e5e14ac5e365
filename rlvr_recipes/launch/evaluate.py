"""Evaluation: n samples per problem, unbiased pass@k, greedy accuracy, per-benchmark and overall averages, plots.

    # GPU: vLLM, 256 samples at temperature 0.6 / top-p 0.95 (004 App. C.2), pass@1..256, plus greedy accuracy
    python -m rlvr_recipes.launch.evaluate --model $MODEL --data data/math500.parquet data/aime25.parquet data/amc23.parquet \\
        --backend vllm --n 256 --temperature 0.6 --top-p 0.95 --max-new-tokens 4096 --out runs/eval
    # CPU: Hugging Face generate on a local model
    python -m rlvr_recipes.launch.evaluate --model /path/to/model --data data/gsm8k.parquet --backend hf --n 4 --out runs/eval
    # generations from a file (tests, or answers produced elsewhere): by problem, through the same pipeline
    python -m rlvr_recipes.launch.evaluate --data data/math500.parquet --backend stub --stub-generations gens.jsonl --out runs/eval
    # re-score generations written by an earlier run
    python -m rlvr_recipes.launch.evaluate --generations runs/eval/generations.jsonl --out runs/rescored
    # training curves (reward, ACR, entropy) of one or more runs from verl's file-logger JSONL or console log
    python -m rlvr_recipes.launch.evaluate --training-log runs/grpo.jsonl runs/avspo.jsonl --out runs/eval

Writes to ``--out``: ``generations.jsonl`` (one object per problem: data_source, index, ground_truth, responses,
greedy), ``scores.jsonl`` (per problem n, c, greedy_correct: the ``--rollouts`` input of ``rlvr_recipes.launch.data select``),
``passk.json`` (:func:`rlvr_recipes.launch.passk.summarise` plus the settings) and ``passk.png``; ``training.png`` with
``--training-log``. Correctness is the reward's accuracy component (:func:`rlvr_recipes.reward.math_reward.is_correct`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterable, Optional, Protocol, Sequence

from rlvr_recipes.launch.passk import default_ks, summarise

# --------------------------------------------------------------------------------------------------------------
# problems and generators


def load_problems(data_files: Sequence[str], limit: Optional[int] = None) -> list[dict[str, Any]]:
    """Problems of verl parquet files (``python -m rlvr_recipes.launch.data convert``): data_source, index, prompt, ground_truth."""
    import pandas as pd

    problems: list[dict[str, Any]] = []
    for path in data_files:
        if not os.path.exists(path):
            raise FileNotFoundError(f"--data {path!r} does not exist")
        df = pd.read_parquet(path)
        for col in ("data_source", "prompt", "reward_model"):
            if col not in df.columns:
                raise ValueError(f"--data {path}: no {col!r} column; prepare it with `python -m rlvr_recipes.launch.data convert`")
        if limit is not None:
            df = df.head(limit)
        infos = df["extra_info"] if "extra_info" in df.columns else [None] * len(df)
        for i, (src, prompt, rm, info) in enumerate(zip(df["data_source"], df["prompt"], df["reward_model"], infos)):
            index = int(info["index"]) if isinstance(info, dict) and info.get("index") is not None else i
            problems.append({
                "data_source": str(src),
                "index": index,
                "prompt": [{"role": str(m["role"]), "content": str(m["content"])} for m in prompt],
                "ground_truth": rm["ground_truth"],
            })
    return problems


class Generator(Protocol):
    def sample(self, problems: Sequence[dict], n: int) -> list[list[str]]: ...

    def greedy(self, problems: Sequence[dict]) -> list[str]: ...


class StubGenerator:
    """Generations read from a JSONL file instead of a model: one object per problem with ``index`` (and
    ``data_source`` when several benchmarks share indices), ``responses`` (>= n strings) and optionally ``greedy``."""

    def __init__(self, path: str) -> None:
        self.by_key: dict[Any, dict] = {}
        with open(path) as f:
            for line_no, line in enumerate(f, 1):
                if not line.strip():
                    continue
                row = json.loads(line)
                for key in ("index", "responses"):
                    if key not in row:
                        raise ValueError(f"{path}:{line_no}: no {key!r} (has {sorted(row)})")
                self.by_key[(row.get("data_source"), int(row["index"]))] = row
        self.path = path

    def _row(self, problem: dict) -> dict:
        row = self.by_key.get((problem["data_source"], problem["index"])) or self.by_key.get((None, problem["index"]))
        if row is None:
            raise KeyError(f"{self.path}: no generations for {problem['data_source']} index {problem['index']}")
        return row

    def sample(self, problems: Sequence[dict], n: int) -> list[list[str]]:
        out = []
        for p in problems:
            responses = [str(r) for r in self._row(p)["responses"]]
            if len(responses) < n:
                raise ValueError(f"{self.path}: {p['data_source']} index {p['index']} has {len(responses)} "
                                 f"responses, fewer than --n {n}")
            out.append(responses[:n])
        return out

    def greedy(self, problems: Sequence[dict]) -> list[str]:
        out = []
        for p in problems:
            row = self._row(p)
            if "greedy" not in row:
                raise ValueError(f"{self.path}: {p['data_source']} index {p['index']} has no 'greedy' response "
                                 "(add it, or pass --no-greedy)")
            out.append(str(row["greedy"]))
        return out


class HFGenerator:
    """Hugging Face ``generate`` on a local model (CPU, or a GPU if torch sees one); chat template when the tokenizer
    has one, the messages' contents joined by newlines otherwise."""

    def __init__(self, model: str, temperature: float, top_p: float, max_new_tokens: int, batch_size: int = 8,
                 seed: int = 0) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.torch = torch
        self.tok = AutoTokenizer.from_pretrained(model)
        device = "cuda" if torch.cuda.is_available() else "cpu"
        self.lm = AutoModelForCausalLM.from_pretrained(model).to(device).eval()
        self.device = device
        self.temperature, self.top_p, self.max_new_tokens = temperature, top_p, max_new_tokens
        self.batch_size = max(1, batch_size)
        self.pad = self.tok.pad_token_id if self.tok.pad_token_id is not None else self.tok.eos_token_id
        torch.manual_seed(seed)

    def _ids(self, messages: list[dict]) -> Any:
        if getattr(self.tok, "chat_template", None):
            text = self.tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        else:
            text = "\n".join(m["content"] for m in messages) + "\n"
        return self.tok(text, return_tensors="pt", add_special_tokens=False)["input_ids"].to(self.device)

    def _generate(self, ids: Any, count: int, sample: bool) -> list[str]:
        kwargs: dict[str, Any] = {"max_new_tokens": self.max_new_tokens, "pad_token_id": self.pad,
                                  "num_return_sequences": count, "do_sample": sample}
        if sample:
            kwargs.update(temperature=self.temperature, top_p=self.top_p)
        with self.torch.no_grad():
            out = self.lm.generate(ids, attention_mask=self.torch.ones_like(ids), **kwargs)
        return self.tok.batch_decode(out[:, ids.shape[1] :], skip_special_tokens=True)

    def sample(self, problems: Sequence[dict], n: int) -> list[list[str]]:
        out = []
        for i, p in enumerate(problems):
            ids = self._ids(p["prompt"])
            texts: list[str] = []
            while len(texts) < n:
                texts += self._generate(ids, min(self.batch_size, n - len(texts)), sample=True)
            out.append(texts)
            _progress("sampled", i + 1, len(problems))
        return out

    def greedy(self, problems: Sequence[dict]) -> list[str]:
        return [self._generate(self._ids(p["prompt"]), 1, sample=False)[0] for p in problems]


class VLLMGenerator:
    """vLLM offline generation (GPU). Imported only when used: vLLM is not needed anywhere else."""

    def __init__(self, model: str, temperature: float, top_p: float, max_new_tokens: int, seed: int = 0,
                 tensor_parallel_size: int = 1, max_model_len: Optional[int] = None,
                 gpu_memory_utilization: float = 0.9) -> None:
        try:
            from vllm import LLM, SamplingParams
        except ImportError as e:
            raise ImportError("--backend vllm needs vLLM (pip install -e '.[gpu]' on a GPU machine)") from e
        self.SamplingParams = SamplingParams
        self.llm = LLM(model=model, seed=seed, tensor_parallel_size=tensor_parallel_size,
                       max_model_len=max_model_len, gpu_memory_utilization=gpu_memory_utilization)
        self.tok = self.llm.get_tokenizer()
        self.temperature, self.top_p, self.max_new_tokens = temperature, top_p, max_new_tokens

    def _prompts(self, problems: Sequence[dict]) -> list[dict[str, list[int]]]:
        """Token ids of the chat-templated prompts (the template already holds any BOS: none is added again)."""
        texts = [
            self.tok.apply_chat_template(p["prompt"], add_generation_prompt=True, tokenize=False) for p in problems
        ]
        return [{"prompt_token_ids": self.tok(t, add_special_tokens=False)["input_ids"]} for t in texts]

    def sample(self, problems: Sequence[dict], n: int) -> list[list[str]]:
        params = self.SamplingParams(
            n=n, temperature=self.temperature, top_p=self.top_p, max_tokens=self.max_new_tokens
        )
        outputs = self.llm.generate(self._prompts(problems), params)
        return [[o.text for o in out.outputs] for out in outputs]

    def greedy(self, problems: Sequence[dict]) -> list[str]:
        params = self.SamplingParams(n=1, temperature=0.0, max_tokens=self.max_new_tokens)
        return [out.outputs[0].text for out in self.llm.generate(self._prompts(problems), params)]


def _progress(what: str, done: int, total: int) -> None:
    step = max(1, total // 10)
    if done == total or done % step == 0:
        print(f"[evaluate] {what} {done}/{total}", flush=True)


def generate(model: str, data_files: Sequence[str], n: int, backend: str = "hf", temperature: float = 1.0,
             top_p: float = 1.0, max_new_tokens: int = 2048, greedy: bool = False, seed: int = 0,
             batch_size: int = 8, tensor_parallel_size: int = 1, max_model_len: Optional[int] = None,
             stub_generations: Optional[str] = None, limit: Optional[int] = None) -> list[dict[str, Any]]:
    """``n`` sampled responses (and a greedy one with ``greedy``) for every problem of verl parquet ``data_files``.

    Returns:
        one record per problem: ``data_source``, ``index``, ``ground_truth``, ``responses`` (and ``greedy``).
    """
    problems = load_problems(data_files, limit)
    gen: Generator
    if backend == "vllm":
        gen = VLLMGenerator(model, temperature, top_p, max_new_tokens, seed, tensor_parallel_size, max_model_len)
    elif backend == "hf":
        gen = HFGenerator(model, temperature, top_p, max_new_tokens, batch_size, seed)
    elif backend == "stub":
        if not stub_generations:
            raise ValueError("--backend stub needs --stub-generations FILE")
        gen = StubGenerator(stub_generations)
    else:
        raise ValueError(f"--backend must be vllm, hf or stub, got {backend!r}")
    print(f"[evaluate] {backend}: {len(problems)} problems x {n} samples", flush=True)
    t0 = time.perf_counter()
    responses = gen.sample(problems, n)
    greedy_texts = gen.greedy(problems) if greedy else [None] * len(problems)
    print(f"[evaluate] generated in {time.perf_counter() - t0:.1f} s", flush=True)
    records = []
    for p, r, g in zip(problems, responses, greedy_texts):
        rec = {"data_source": p["data_source"], "index": p["index"], "ground_truth": p["ground_truth"], "responses": r}
        if g is not None:
            rec["greedy"] = g
        records.append(rec)
    return records


# --------------------------------------------------------------------------------------------------------------
# scoring


def read_generations(path: str) -> list[dict[str, Any]]:
    """Records of a generations JSONL: ``data_source``, ``ground_truth``, ``responses``; optional ``greedy``,
    ``index``."""
    records = []
    with open(path) as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            row = json.loads(line)
            for key in ("data_source", "ground_truth", "responses"):
                if key not in row:
                    raise ValueError(f"{path}:{line_no}: generation record lacks {key!r} (has {sorted(row)})")
            if not isinstance(row["responses"], list) or not row["responses"]:
                raise ValueError(f"{path}:{line_no}: 'responses' must be a non-empty list")
            row.setdefault("index", line_no - 1)
            records.append(row)
    if not records:
        raise ValueError(f"{path}: no generation records")
    return records


def score_records(records: Sequence[dict[str, Any]], workers: int = 4, boxed_only: bool = False,
                  timeout_s: Optional[float] = None) -> list[dict[str, Any]]:
    """Per problem ``data_source``, ``index``, ``n``, ``c`` (correct samples) and ``greedy_correct`` (or None)."""
    from rlvr_recipes.reward.equivalence import DEFAULT_TIMEOUT_S, warm_up
    from rlvr_recipes.reward.math_reward import is_correct

    timeout = DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s
    jobs = [(i, r, rec["ground_truth"]) for i, rec in enumerate(records) for r in rec["responses"]]
    jobs += [(i, rec["greedy"], rec["ground_truth"]) for i, rec in enumerate(records) if rec.get("greedy") is not None]
    n_sampled = sum(len(rec["responses"]) for rec in records)

    def check(job: tuple[int, str, Any]) -> bool:
        return is_correct(job[1], job[2], boxed_only=boxed_only, timeout_s=timeout)

    warm_up()  # start the verification workers before the clock of the first symbolic check starts
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        verdicts = []
        for j, v in enumerate(pool.map(check, jobs), 1):
            verdicts.append(v)
            _progress("scored", j, len(jobs))
    print(f"[evaluate] scored {len(jobs)} responses in {time.perf_counter() - t0:.1f} s", flush=True)
    correct = [0] * len(records)
    for (i, _, _), v in zip(jobs[:n_sampled], verdicts[:n_sampled]):
        correct[i] += int(v)
    greedy_correct: list[Optional[int]] = [None] * len(records)
    for (i, _, _), v in zip(jobs[n_sampled:], verdicts[n_sampled:]):
        greedy_correct[i] = int(v)
    return [{"data_source": rec["data_source"], "index": rec.get("index", i), "n": len(rec["responses"]),
             "c": correct[i], "greedy_correct": greedy_correct[i]} for i, rec in enumerate(records)]


def _write_jsonl(path: str, rows: Iterable[dict]) -> None:
    with open(path, "w") as f:
        f.writelines(json.dumps(r, default=str) + "\n" for r in rows)


def _print_table(summary: dict) -> None:
    ks = summary["k"]
    shown = [k for k in ks if k in (1, 8, 32, 256) or k == ks[-1]] if len(ks) > 5 else ks
    head = ["benchmark", "problems"] + [f"pass@{k}" for k in shown] + ["greedy"]

    def cells(entry: dict) -> list[str]:
        keys = [f"pass@{k}" for k in shown] + ["greedy_acc"]
        return [f"{100 * entry[key]:.1f}" if key in entry else "-" for key in keys]

    rows = [[name, str(e["problems"])] + cells(e) for name, e in summary["benchmarks"].items()]
    rows.append(["overall (weighted)", str(summary["overall"]["problems"])] + cells(summary["overall"]["weighted"]))
    widths = [max(len(r[i]) for r in [head] + rows) for i in range(len(head))]
    for r in [head] + rows:
        print("  ".join(c.ljust(wd) for c, wd in zip(r, widths)))


# --------------------------------------------------------------------------------------------------------------
# command line


def main(argv: Optional[Sequence[str]] = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m rlvr_recipes.launch.evaluate", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    src = parser.add_argument_group("what to score")
    src.add_argument("--data", nargs="+", default=[], help="verl parquet files (python -m rlvr_recipes.launch.data convert)")
    src.add_argument("--backend", choices=["vllm", "hf", "stub"], help="generator for --data (default: hf)")
    src.add_argument("--model", help="model path (vllm, hf)")
    src.add_argument("--stub-generations", help="JSONL of responses per problem index (--backend stub)")
    src.add_argument("--generations", help="score a generations JSONL as it is (no --data, no generation)")
    src.add_argument("--limit", type=int, help="first N problems of each --data file")
    gen = parser.add_argument_group("sampling")
    gen.add_argument("--n", type=int, default=16, help="samples per problem (256 in 001 and 004)")
    gen.add_argument("--temperature", type=float, default=0.6)
    gen.add_argument("--top-p", type=float, default=0.95)
    gen.add_argument("--max-new-tokens", type=int, default=4096)
    gen.add_argument("--greedy", action=argparse.BooleanOptionalAction, default=True, help="also a greedy response")
    gen.add_argument("--seed", type=int, default=0)
    gen.add_argument("--batch-size", type=int, default=8, help="hf: sequences per generate call")
    gen.add_argument("--tp", type=int, default=1, help="vllm: tensor-parallel size")
    gen.add_argument("--max-model-len", type=int, help="vllm: context length")
    sc = parser.add_argument_group("scoring and output")
    sc.add_argument("--k", type=int, nargs="+", help="k values (default: 1, 2, 4, ... up to the samples per problem)")
    sc.add_argument("--boxed-only", action="store_true", help="only \\boxed{} answers count")
    sc.add_argument("--timeout-s", type=float, help="hard limit on one symbolic comparison (default 3)")
    sc.add_argument("--workers", type=int, default=min(8, os.cpu_count() or 1), help="scoring threads")
    sc.add_argument("--training-log", nargs="+", default=[], help="verl file-logger JSONL or console logs to plot")
    sc.add_argument("--out", default="runs/eval")
    args = parser.parse_args(argv)

    if not (args.data or args.generations or args.training_log):
        parser.error("give --data (with --backend), --generations, or --training-log")
    if args.data and args.generations:
        parser.error("--data and --generations exclude each other")
    backend = args.backend or "hf"
    if args.data and backend in ("vllm", "hf") and not args.model:
        parser.error(f"--backend {backend} needs --model")
    if args.n < 1:
        parser.error(f"--n must be positive, got {args.n}")
    os.makedirs(args.out, exist_ok=True)
    os.environ.setdefault("RLVR_VERIFY_WORKERS", str(max(1, min(args.workers, os.cpu_count() or 1))))
    result: dict[str, Any] = {}

    if args.data or args.generations:
        if args.generations:
            records = read_generations(args.generations)
        else:
            records = generate(args.model or "", args.data, args.n, backend, args.temperature, args.top_p,
                               args.max_new_tokens, greedy=args.greedy, seed=args.seed, batch_size=args.batch_size,
                               tensor_parallel_size=args.tp, max_model_len=args.max_model_len,
                               stub_generations=args.stub_generations, limit=args.limit)
            _write_jsonl(os.path.join(args.out, "generations.jsonl"), records)
        scores = score_records(records, args.workers, args.boxed_only, args.timeout_s)
        _write_jsonl(os.path.join(args.out, "scores.jsonl"), scores)
        n_min = min(s["n"] for s in scores)
        ks = args.k or default_ks(n_min)
        too_big = [k for k in ks if k > max(s["n"] for s in scores)]
        if too_big:
            print(f"[evaluate] warning: k {too_big} exceed the samples per problem; left out", file=sys.stderr)
        summary = summarise(scores, ks)
        summary["settings"] = {
            "source": args.generations or args.data, "backend": None if args.generations else backend,
            "model": args.model, "n": None if args.generations else args.n, "temperature": args.temperature,
            "top_p": args.top_p, "max_new_tokens": args.max_new_tokens, "greedy": args.greedy, "seed": args.seed,
            "boxed_only": args.boxed_only,
        }
        with open(os.path.join(args.out, "passk.json"), "w") as f:
            json.dump(summary, f, indent=2)
        from rlvr_recipes.launch.plots import plot_pass_at_k

        plot_pass_at_k(summary, os.path.join(args.out, "passk.png"))
        _print_table(summary)
        print(f"[evaluate] wrote {args.out}/scores.jsonl, passk.json, passk.png", flush=True)
        result["summary"] = summary

    if args.training_log:
        from rlvr_recipes.launch.plots import plot_training_curves
        from rlvr_recipes.launch.training_log import read_training_log

        runs = {os.path.splitext(os.path.basename(p))[0]: read_training_log(p) for p in args.training_log}
        chosen = plot_training_curves(runs, os.path.join(args.out, "training.png"))
        for run, panels in chosen.items():
            print(f"[evaluate] {run}: " + ", ".join(f"{k} <- {v}" for k, v in panels.items()))
        print(f"[evaluate] wrote {args.out}/training.png", flush=True)
        result["training"] = chosen
    return result


if __name__ == "__main__":
    main()
