"""Dataset preparation: benchmark and training sets into verl parquet, and difficulty-selected subsets.

    python -m launch.data convert --dataset math500 --input test.jsonl --output data/math500.parquet --template boxed
    python -m launch.data convert --dataset gsm8k --input openai/gsm8k --hf-config main --split test --output data/gsm8k.parquet
    python -m launch.data select --input data/math.parquet --rollouts rollouts.jsonl --low 0.2 --high 0.8 \
        --count 500 --output data/level3_500.parquet

``--input`` is a local json/jsonl/parquet file, or a Hugging Face dataset name (loaded with ``datasets`` at your run
time; nothing is downloaded by the tests). Rows become verl's schema: ``data_source``, ``prompt`` (chat messages),
``ability``, ``reward_model {style: rule, ground_truth}``, ``extra_info {split, index, question}``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from typing import Any, Callable, Optional, Sequence

import pandas as pd

#: Question/answer columns of each dataset (first column present wins); answer post-processing.
DATASETS: dict[str, dict[str, Any]] = {
    "math": {"question": ["problem", "question"], "answer": ["answer", "solution"]},
    "math500": {"question": ["problem", "question"], "answer": ["answer", "solution"]},
    "gsm8k": {"question": ["question"], "answer": ["answer"]},
    "aime24": {"question": ["problem", "question", "Problem"], "answer": ["answer", "Answer"]},
    "aime25": {"question": ["problem", "question", "Problem"], "answer": ["answer", "Answer"]},
    "amc23": {"question": ["problem", "question"], "answer": ["answer"]},
    "minerva": {"question": ["problem", "question"], "answer": ["answer", "solution"]},
    "olympiadbench": {"question": ["problem", "question"], "answer": ["final_answer", "answer"]},
    "open_rs": {"question": ["problem", "question"], "answer": ["answer", "solution"]},
    "deepscaler": {"question": ["problem", "question"], "answer": ["answer", "solution"]},
}

#: Prompt templates, by the paper that uses them.
TEMPLATES: dict[str, dict[str, Optional[str]]] = {
    # two-stage paper App. C.2 (also A-GRAE, AVSPO): reason step by step, boxed answer
    "boxed": {"system": "You are a helpful assistant.",
              "user": "{question} Please reason step by step, and put your final answer within \\boxed{{}}."},
    # CW-GRPO / AAPO (R1-style): think and answer tags
    "think_answer": {"system": "A conversation between User and Assistant. The user asks a question, and the "
                     "Assistant solves it. The assistant first thinks about the reasoning process in the mind and then "
                     "provides the user with the answer. The reasoning process and answer are enclosed within "
                     "<think> </think> and <answer> </answer> tags, respectively.",
                     "user": "{question}"},
    # no system prompt (AAPO's Llama runs)
    "plain": {"system": None, "user": "{question}"},
}


def gsm8k_answer(text: str) -> str:
    """GSM8K's final answer follows ``####``."""
    return text.split("####")[-1].strip().replace(",", "") if "####" in text else text.strip()


def solution_answer(text: str) -> str:
    """The boxed answer of a worked solution (MATH style), else the text itself."""
    from reward.math_reward import _last_boxed

    boxed = _last_boxed(str(text))
    return boxed.strip() if boxed is not None else str(text).strip()


def load_table(source: str, split: str = "train", hf_config: Optional[str] = None) -> pd.DataFrame:
    """A local json/jsonl/parquet/csv file, or a Hugging Face dataset name."""
    if os.path.exists(source):
        if source.endswith(".parquet"):
            return pd.read_parquet(source)
        if source.endswith(".jsonl"):
            return pd.read_json(source, lines=True)
        if source.endswith(".json"):
            with open(source) as f:
                data = json.load(f)
            return pd.DataFrame(data if isinstance(data, list) else data.get("data", data))
        if source.endswith(".csv"):
            return pd.read_csv(source)
        raise ValueError(f"{source}: unknown file type (use .parquet, .jsonl, .json or .csv)")
    if re.fullmatch(r"[\w.-]+/[\w.-]+", source):
        import datasets

        return datasets.load_dataset(source, hf_config, split=split).to_pandas()
    raise FileNotFoundError(f"--input {source!r} is neither a file nor a Hugging Face dataset name")


def _column(df: pd.DataFrame, candidates: Sequence[str], what: str, dataset: str) -> str:
    for c in candidates:
        if c in df.columns:
            return c
    raise ValueError(f"{dataset}: no {what} column; looked for {list(candidates)}, found {list(df.columns)}")


def to_verl(df: pd.DataFrame, dataset: str, template: str = "boxed", split: str = "train") -> pd.DataFrame:
    """Rows of a raw table -> verl's RL parquet schema."""
    if dataset not in DATASETS:
        raise ValueError(f"--dataset {dataset!r} unknown; known: {sorted(DATASETS)}")
    if template not in TEMPLATES:
        raise ValueError(f"--template {template!r} unknown; known: {sorted(TEMPLATES)}")
    spec, tpl = DATASETS[dataset], TEMPLATES[template]
    qcol = _column(df, spec["question"], "question", dataset)
    acol = _column(df, spec["answer"], "answer", dataset)
    post: Callable[[str], str] = gsm8k_answer if dataset == "gsm8k" else (
        solution_answer if acol == "solution" else (lambda s: str(s).strip()))
    rows = []
    for i, (q, a) in enumerate(zip(df[qcol], df[acol])):
        messages = ([{"role": "system", "content": tpl["system"]}] if tpl["system"] else []) + [
            {"role": "user", "content": tpl["user"].format(question=str(q).strip())}]
        rows.append({
            "data_source": dataset,
            "prompt": messages,
            "ability": "math",
            "reward_model": {"style": "rule", "ground_truth": post(a)},
            "extra_info": {"split": split, "index": i, "question": str(q)},
        })
    return pd.DataFrame(rows)


def select_by_difficulty(df: pd.DataFrame, rollouts: pd.DataFrame, low: float, high: float,
                         count: Optional[int], seed: int = 0) -> pd.DataFrame:
    """Problems a selector model solves at a rate in ``[low, high]`` (like the ACR paper's Level3-500).

    Args:
        df: verl parquet rows (``extra_info.index`` identifies a problem).
        rollouts: one row per sampled response with columns ``index`` and ``correct`` (0/1).
    """
    for col in ("index", "correct"):
        if col not in rollouts.columns:
            raise ValueError(f"rollouts need columns 'index' and 'correct'; missing {col!r} (have {list(rollouts.columns)})")
    rate = rollouts.groupby("index")["correct"].mean()
    keep = set(rate[(rate >= low) & (rate <= high)].index)
    idx = df["extra_info"].map(lambda e: e["index"])
    out = df[idx.isin(keep)].copy()
    out["extra_info"] = [{**e, "selector_solve_rate": float(rate[e["index"]])} for e in out["extra_info"]]
    if count is not None and len(out) > count:
        out = out.sample(n=count, random_state=seed)
    return out.reset_index(drop=True)


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    conv = sub.add_parser("convert", help="raw dataset -> verl parquet")
    conv.add_argument("--dataset", required=True, choices=sorted(DATASETS))
    conv.add_argument("--input", required=True)
    conv.add_argument("--output", required=True)
    conv.add_argument("--template", default="boxed", choices=sorted(TEMPLATES))
    conv.add_argument("--split", default="train")
    conv.add_argument("--hf-config", default=None)
    sel = sub.add_parser("select", help="difficulty-selected subset from rollouts")
    sel.add_argument("--input", required=True, help="verl parquet")
    sel.add_argument("--rollouts", required=True, help="jsonl/parquet with columns index, correct")
    sel.add_argument("--low", type=float, default=0.2)
    sel.add_argument("--high", type=float, default=0.8)
    sel.add_argument("--count", type=int, default=None)
    sel.add_argument("--seed", type=int, default=0)
    sel.add_argument("--output", required=True)
    args = parser.parse_args(argv)
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    if args.command == "convert":
        raw = load_table(args.input, args.split, args.hf_config)
        print(f"[data] {args.input}: {len(raw)} rows", flush=True)
        out = to_verl(raw, args.dataset, args.template, args.split)
    else:
        out = select_by_difficulty(load_table(args.input), load_table(args.rollouts), args.low, args.high,
                                   args.count, args.seed)
    out.to_parquet(args.output)
    print(f"[data] wrote {len(out)} rows to {args.output}")


if __name__ == "__main__":
    main()
