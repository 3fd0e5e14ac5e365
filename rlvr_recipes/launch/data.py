"""Dataset preparation: benchmarks and training sets into verl's parquet schema, and difficulty-selected subsets.

    python -m rlvr_recipes.launch.data list                                   # datasets, their default sources, prompt templates
    python -m rlvr_recipes.launch.data convert --dataset math500 --output data/math500.parquet                  # from the Hub
    python -m rlvr_recipes.launch.data convert --dataset gsm8k --input gsm8k_test.jsonl --split test --output data/gsm8k.parquet
    python -m rlvr_recipes.launch.data convert --dataset open_rs --template open_rs --output data/open_rs.parquet
    python -m rlvr_recipes.launch.data select --data data/math_train.parquet --rollouts runs/selector/scores.jsonl \\
        --min-rate 0.3 --max-rate 0.5 --count 500 --seed 42 --output data/level3_500.parquet

``--input`` is a local .parquet / .jsonl / .json / .csv file or a Hugging Face dataset name (read with ``datasets``
when you run it; without ``--input`` the dataset's default Hub source is used). Each row becomes::

    data_source   the dataset name (per-benchmark key of the evaluation and of verl's validation metrics)
    prompt        chat messages: the template's system message (if any) and the user message
    ability       "math"
    reward_model  {"style": "rule", "ground_truth": <final answer string>}
    extra_info    {"split", "index" (row of the raw table), "dataset", "question", "answer", "level", "subject",
                   "source_id"}  -- the same keys for every dataset, so verl can concatenate files

``select`` keeps the problems a selector model solves at a rate in [min-rate, max-rate] and samples ``count`` of
them without replacement: the ACR paper's Level3-500 is MATH problems that Qwen2.5-Math-1.5B solves 30-50 % of the
time, 500 of them, seed 42 (000, Sec. 3.4.1, App. A.1). Rollouts are what ``python -m rlvr_recipes.launch.evaluate`` writes as
``scores.jsonl`` (per problem ``index``, ``n``, ``c``), or one row per sample with ``index`` and ``correct``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np
import pandas as pd

from rlvr_recipes.reward.extract import last_boxed

# --------------------------------------------------------------------------------------------------------------
# prompt templates


@dataclass(frozen=True)
class PromptTemplate:
    """A system message (or None) and a user message with a ``{question}`` slot."""

    system: Optional[str]
    user: str
    source: str

    def messages(self, question: str) -> list[dict[str, str]]:
        msgs = [{"role": "system", "content": self.system}] if self.system else []
        return msgs + [{"role": "user", "content": self.user.replace("{question}", question)}]


_BOXED_INSTRUCTION = "Please reason step by step, and put your final answer within \\boxed{}."
_OPEN_RS_SYSTEM = (
    "A conversation between User and Assistant. The user asks a question, and the Assistant solves it. The "
    "assistant first thinks about the reasoning process in the mind and then provides the user with the answer, and "
    "put your final answer within \\boxed{} . The reasoning process and answer are enclosed within <think> </think> "
    "and <answer> </answer> tags, respectively, i.e., <think> reasoning process here </think> <answer> answer here "
    "</answer>. Note that respond by English, NOT use other languages."
)

#: Prompt templates by the paper that uses them (``--template``; a JSON file with ``system``/``user`` works too).
TEMPLATES: dict[str, PromptTemplate] = {
    "boxed": PromptTemplate(
        "You are a helpful assistant.",
        "{question}\n" + _BOXED_INSTRUCTION,
        "two-stage paper (004 App. C.2), GRPO-N/GSPO-N; also used for ACR/AVSPO, whose paper gives no prompt",
    ),
    "agrae": PromptTemplate(
        _BOXED_INSTRUCTION, "{question}", "A-GRAE, MATH runs: this as the system prompt (001 App. C.2)"
    ),
    "open_rs": PromptTemplate(
        _OPEN_RS_SYSTEM,
        "{question}",
        "CW-GRPO training prompt (003 App. B, Fig. 4) = AAPO-1.5B training prompt (002 App. C.2), Open-RS setup",
    ),
    "aapo_7b": PromptTemplate(
        "You are a helpful AI Assistant, designed to provide well-reasoned and detailed responses. You FIRST think "
        "about the reasoning process as an internal monologue and then provide the user with the answer. The "
        "reasoning process MUST BE enclosed within <think> and </think> tags.",
        "{question}",
        "AAPO-7B training prompt (002 App. C.2)",
    ),
    "aapo_eval": PromptTemplate(
        "Solve the following math problem efficiently and clearly. The last line of your response should be of the "
        "following format: 'Therefore, the final answer is: $\\boxed{ANSWER}$. I hope it is correct' (without "
        "quotes) where ANSWER is just the final number or expression that solves the problem. Think step by step "
        "before answering.",
        "{question}",
        "AAPO evaluation of Qwen models (002 App. C.3)",
    ),
    "plain": PromptTemplate(None, "{question}", "no system prompt: AAPO's Llama runs (002 App. C.2)"),
}


def load_template(name_or_path: str) -> PromptTemplate:
    """A template of :data:`TEMPLATES`, or a JSON file ``{"system": str|null, "user": "...{question}..."}``."""
    if name_or_path in TEMPLATES:
        return TEMPLATES[name_or_path]
    if os.path.isfile(name_or_path):
        with open(name_or_path) as f:
            spec = json.load(f)
        if not isinstance(spec, dict) or "{question}" not in str(spec.get("user", "")):
            raise ValueError(f"--template {name_or_path}: needs a JSON object whose 'user' contains '{{question}}'")
        return PromptTemplate(spec.get("system"), spec["user"], name_or_path)
    raise ValueError(f"--template {name_or_path!r} is neither a known template {sorted(TEMPLATES)} nor a JSON file")


# --------------------------------------------------------------------------------------------------------------
# datasets


@dataclass(frozen=True)
class DatasetSpec:
    """Where a dataset lives by default and which raw columns hold its question and answer (first present wins)."""

    hub: str
    split: str
    question: tuple[str, ...] = ("problem", "question", "Problem", "Question")
    answer: tuple[str, ...] = ("answer", "final_answer", "Answer", "expected_answer")
    #: Read the final answer from a worked solution's last ``\\boxed{}`` when no answer column exists.
    solution: tuple[str, ...] = ("solution", "Solution")
    gsm8k_answer: bool = False
    hub_config: Optional[str] = None
    papers: str = ""
    level: tuple[str, ...] = ("level", "Level", "difficulty")
    subject: tuple[str, ...] = ("subject", "type", "Type", "subfield")
    source_id: tuple[str, ...] = ("unique_id", "id", "ID", "problem_id")


#: Default Hub sources are the usual public copies (not checked from here: no Hub access when this was written);
#: pass ``--input`` to use any other copy, and ``--question-column`` / ``--answer-column`` for other layouts.
DATASETS: dict[str, DatasetSpec] = {
    "math": DatasetSpec("DigitalLearningGmbH/MATH-lighteval", "train", papers="training set of 000, 001, 004"),
    "math500": DatasetSpec("HuggingFaceH4/MATH-500", "test", papers="000, 002, 003"),
    "gsm8k": DatasetSpec("openai/gsm8k", "test", hub_config="main", gsm8k_answer=True, papers="000"),
    "aime24": DatasetSpec("HuggingFaceH4/aime_2024", "train", papers="000, 002, 003, 004"),
    "aime25": DatasetSpec("math-ai/aime25", "test", papers="001, 004"),
    "amc23": DatasetSpec("math-ai/amc23", "test", papers="001, 002, 003, 004 (000's AMC set has 120 problems)"),
    "minerva": DatasetSpec("math-ai/minervamath", "test", papers="000, 002, 003"),
    "olympiadbench": DatasetSpec("math-ai/olympiadbench", "test", papers="000, 002, 003"),
    "open_rs": DatasetSpec("knoveleng/open-rs", "train", papers="training set of 002 (1.5B) and 003"),
    "deepscaler": DatasetSpec(
        "agentica-org/DeepScaleR-Preview-Dataset", "train", papers="part of Open-RS (003 App. A)"
    ),
}


def load_table(source: str, split: Optional[str] = None, hub_config: Optional[str] = None) -> pd.DataFrame:
    """A local .parquet/.jsonl/.json/.csv file, or a Hugging Face dataset name (loaded with ``datasets``)."""
    if os.path.exists(source):
        lower = source.lower()
        try:
            if lower.endswith(".parquet"):
                return pd.read_parquet(source)
            if lower.endswith(".jsonl"):
                return pd.read_json(source, lines=True, dtype=False)
            if lower.endswith(".json"):
                with open(source) as f:
                    data = json.load(f)
                if isinstance(data, dict) and isinstance(data.get("data"), list):
                    data = data["data"]
                if isinstance(data, dict):  # columnar {"col": [...]}
                    return pd.DataFrame(data)
                if not isinstance(data, list):
                    raise ValueError("expected a list of records, {'data': [...]} or {column: [...]}")
                return pd.DataFrame.from_records(data)
            if lower.endswith(".csv"):
                return pd.read_csv(source, dtype=str, keep_default_na=False)
        except (ValueError, OSError) as e:
            raise ValueError(f"{source}: cannot read ({e})") from e
        raise ValueError(f"{source}: unknown file type (use .parquet, .jsonl, .json or .csv)")
    if re.fullmatch(r"[\w.-]+/[\w.-]+", source):
        try:
            import datasets
        except ImportError as e:  # pragma: no cover
            raise ImportError("reading a Hugging Face dataset needs the `datasets` package") from e
        print(f"[data] loading {source} (config {hub_config}, split {split}) from the Hugging Face Hub", flush=True)
        return datasets.load_dataset(source, hub_config, split=split or "train").to_pandas()
    raise FileNotFoundError(f"--input {source!r} is neither an existing file nor a Hugging Face dataset name")


def _pick(df: pd.DataFrame, override: Optional[str], candidates: Sequence[str], what: str, where: str) -> Optional[str]:
    if override:
        if override not in df.columns:
            raise ValueError(f"{where}: --{what}-column {override!r} not found; columns are {list(df.columns)}")
        return override
    return next((c for c in candidates if c in df.columns), None)


def _scalar_text(value: Any) -> str:
    """A raw cell as answer text: lists joined by ", ", integral floats as integers, None as ""."""
    if value is None:
        return ""
    if isinstance(value, (list, tuple, np.ndarray)):
        parts = [_strip_math_delimiters(_scalar_text(v)) for v in value]
        return ", ".join(p for p in parts if p)
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        if value.is_integer():
            return str(int(value))
    if isinstance(value, (np.floating, np.integer)):
        return _scalar_text(value.item())
    return str(value).strip()


def gsm8k_answer(text: str) -> str:
    """GSM8K's final answer: the text after ``####``, thousands commas removed."""
    return text.split("####")[-1].strip().replace(",", "") if "####" in text else text.strip()


def _strip_math_delimiters(s: str) -> str:
    s = s.strip()
    for left, right in (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")):
        if s.startswith(left) and s.endswith(right) and len(s) > len(left) + len(right):
            return s[len(left) : -len(right)].strip()
    return s


def to_verl(
    df: pd.DataFrame,
    dataset: str,
    template: str | PromptTemplate = "boxed",
    split: str = "test",
    data_source: Optional[str] = None,
    question_column: Optional[str] = None,
    answer_column: Optional[str] = None,
) -> pd.DataFrame:
    """Rows of a raw table as verl RL rows. Rows without a question or a final answer are skipped; their count is
    in ``out.attrs["skipped"]`` and their raw row numbers in ``out.attrs["skipped_rows"]``."""
    if dataset not in DATASETS:
        raise ValueError(f"--dataset {dataset!r} is unknown; known: {sorted(DATASETS)}")
    spec = DATASETS[dataset]
    tpl = template if isinstance(template, PromptTemplate) else load_template(template)
    where = f"dataset {dataset}"
    qcol = _pick(df, question_column, spec.question, "question", where)
    if qcol is None:
        raise ValueError(f"{where}: no question column; looked for {list(spec.question)}, found {list(df.columns)} "
                         "(name one with --question-column)")
    acol = _pick(df, answer_column, spec.answer, "answer", where)
    scol = None if acol else next((c for c in spec.solution if c in df.columns), None)
    if acol is None and scol is None:
        raise ValueError(f"{where}: no answer column; looked for {list(spec.answer)} and for a worked solution in "
                         f"{list(spec.solution)}, found {list(df.columns)} (name one with --answer-column)")
    meta = {
        key: next((c for c in getattr(spec, key) if c in df.columns), None) for key in ("level", "subject", "source_id")
    }
    rows, skipped = [], []
    records = df.to_dict("records")
    for i, raw in enumerate(records):
        question = _scalar_text(raw.get(qcol))
        if acol is not None:
            answer = _scalar_text(raw.get(acol))
            if spec.gsm8k_answer:
                answer = gsm8k_answer(answer)
        else:
            answer = last_boxed(_scalar_text(raw.get(scol))) or ""
        answer = _strip_math_delimiters(answer)
        if not question or not answer:
            skipped.append(i)
            continue
        rows.append({
            "data_source": data_source or dataset,
            "prompt": tpl.messages(question),
            "ability": "math",
            "reward_model": {"style": "rule", "ground_truth": answer},
            "extra_info": {
                "split": split,
                "index": i,
                "dataset": dataset,
                "question": question,
                "answer": answer,
                **{key: _scalar_text(raw.get(col)) if col else "" for key, col in meta.items()},
            },
        })
    out = pd.DataFrame(rows, columns=["data_source", "prompt", "ability", "reward_model", "extra_info"])
    out.attrs["skipped"] = len(skipped)
    out.attrs["skipped_rows"] = skipped[:20]
    return out


# --------------------------------------------------------------------------------------------------------------
# difficulty selection


def _as_01(value: Any) -> float:
    """0/1, true/false (also as text) -> 0.0/1.0; anything else -> NaN."""
    if isinstance(value, (bool, np.bool_)):
        return float(value)
    if isinstance(value, (int, float, np.integer, np.floating)):
        return float(value) if value in (0, 1) else math.nan
    text = str(value).strip().lower()
    return {"1": 1.0, "0": 0.0, "true": 1.0, "false": 0.0}.get(text, math.nan)


def solve_rates(rollouts: pd.DataFrame) -> pd.DataFrame:
    """Per-problem ``n``, ``c`` and ``rate`` from a rollouts table.

    Accepted layouts: per problem ``index, n, c`` (``rlvr_recipes.launch.evaluate``'s scores.jsonl); per problem ``index`` and a
    list ``correct``; per sample ``index`` and a 0/1 (or bool) ``correct`` or ``acc``. An optional ``data_source``
    column is kept as part of the key.
    """
    cols = set(rollouts.columns)
    if "index" not in cols:
        raise ValueError(f"rollouts need an 'index' column (extra_info.index of the data); found {sorted(cols)}")
    keys = ["data_source", "index"] if "data_source" in cols else ["index"]
    if {"n", "c"} <= cols:
        out = rollouts[keys + ["n", "c"]].copy()
        out = out.groupby(keys, as_index=False)[["n", "c"]].sum()
    else:
        corr = next((c for c in ("correct", "acc") if c in cols), None)
        if corr is None:
            raise ValueError("rollouts need per-problem 'n' and 'c' columns, or a per-sample 'correct' (or 'acc') "
                             f"column; found {sorted(cols)}")
        values = rollouts[corr]
        if len(values) and isinstance(values.iloc[0], (list, tuple, np.ndarray)):
            frame = rollouts[keys].copy()
            frame["n"] = values.map(len)
            frame["c"] = values.map(lambda v: int(sum(float(x) > 0.5 for x in v)))
        else:
            frame = rollouts[keys].copy()
            numeric = values.map(_as_01)
            if numeric.isna().any():
                bad = rollouts.index[numeric.isna()][:5].tolist()
                raise ValueError(f"rollouts column {corr!r} must be 0/1 or true/false; rows {bad} are not")
            frame["n"] = 1
            frame["c"] = (numeric > 0.5).astype(int)
        out = frame.groupby(keys, as_index=False)[["n", "c"]].sum()
    if (out["n"] <= 0).any() or (out["c"] < 0).any() or (out["c"] > out["n"]).any():
        raise ValueError("rollouts: every problem needs n > 0 and 0 <= c <= n")
    out["rate"] = out["c"] / out["n"]
    return out


def select_by_difficulty(
    data: pd.DataFrame,
    rollouts: pd.DataFrame,
    min_rate: float = 0.3,
    max_rate: float = 0.5,
    count: Optional[int] = 500,
    seed: int = 42,
) -> pd.DataFrame:
    """Problems of ``data`` whose selector solve rate is in ``[min_rate, max_rate]``, ``count`` of them drawn without
    replacement (all of them if fewer), in data order. Defaults: the ACR paper's Level3-500 (000 App. A.1).

    Each kept row's ``extra_info`` gains ``selector_solve_rate`` and ``selector_samples``.
    """
    if not 0.0 <= min_rate <= max_rate <= 1.0:
        raise ValueError(f"need 0 <= --min-rate <= --max-rate <= 1, got {min_rate}, {max_rate}")
    if count is not None and count < 1:
        raise ValueError(f"--count must be positive, got {count}")
    for col in ("extra_info", "data_source"):
        if col not in data.columns:
            raise ValueError(f"--data is not verl parquet from `python -m rlvr_recipes.launch.data convert`: no {col!r} column")
    rates = solve_rates(rollouts)
    by_source = "data_source" in rates.columns
    if not by_source and data["data_source"].nunique() > 1:
        raise ValueError("--data mixes data sources "
                         f"{sorted(data['data_source'].unique())}; the rollouts need a 'data_source' column")
    lookup = {
        ((r.data_source, int(r.index)) if by_source else int(r.index)): (float(r.rate), int(r.n))
        for r in rates.itertuples(index=False)
    }
    keys = [
        (src, int(info["index"])) if by_source else int(info["index"])
        for src, info in zip(data["data_source"], data["extra_info"])
    ]
    found = [lookup.get(k) for k in keys]
    missing = sum(f is None for f in found)
    unknown = len(set(lookup) - set(keys))
    if unknown:
        print(f"[data] warning: {unknown} rollout problems are not in --data (ignored)", file=sys.stderr)
    if missing == len(found):
        raise ValueError("no problem of --data has rollouts: check that the rollouts' index (and data_source) refer "
                         "to extra_info.index of --data")
    rate_arr = np.array([np.nan if f is None else f[0] for f in found])
    print(f"[data] {len(found) - missing} of {len(found)} problems have rollouts; solve-rate histogram:")
    edges = np.linspace(0.0, 1.0, 11)
    hist, _ = np.histogram(rate_arr[~np.isnan(rate_arr)], bins=edges)
    for lo, hi, h in zip(edges[:-1], edges[1:], hist):
        print(f"[data]   [{lo:.1f}, {hi:.1f}{']' if hi == 1.0 else ')'} {h:6d}")
    eligible = np.flatnonzero((rate_arr >= min_rate - 1e-12) & (rate_arr <= max_rate + 1e-12))
    print(f"[data] {len(eligible)} problems solved at a rate in [{min_rate}, {max_rate}]")
    if count is not None and len(eligible) > count:
        eligible = np.sort(np.random.default_rng(seed).choice(eligible, size=count, replace=False))
        print(f"[data] sampled {count} of them without replacement (seed {seed})")
    elif count is not None and len(eligible) < count:
        print(f"[data] warning: only {len(eligible)} eligible problems, fewer than --count {count}; keeping all",
              file=sys.stderr)
    out = data.iloc[eligible].copy()
    out["extra_info"] = [
        {**dict(info), "selector_solve_rate": found[i][0], "selector_samples": found[i][1]}
        for i, info in zip(eligible, out["extra_info"])
    ]
    return out.reset_index(drop=True)


# --------------------------------------------------------------------------------------------------------------
# command line


def _write(df: pd.DataFrame, path: str) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)) or ".", exist_ok=True)
    df.to_parquet(path, index=False)
    print(f"[data] wrote {len(df)} rows to {path}", flush=True)


def _list() -> None:
    print("datasets (default Hugging Face source, split; used by):")
    for name, spec in DATASETS.items():
        cfg = f" [{spec.hub_config}]" if spec.hub_config else ""
        print(f"  {name:14s} {spec.hub}{cfg} ({spec.split}); {spec.papers}")
    print("templates:")
    for name, tpl in TEMPLATES.items():
        print(f"  {name:14s} {tpl.source}")


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rlvr_recipes.launch.data", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="datasets and prompt templates")
    conv = sub.add_parser("convert", help="a raw dataset -> verl parquet")
    conv.add_argument("--dataset", required=True, choices=sorted(DATASETS))
    conv.add_argument("--input", help="local file or Hugging Face dataset name (default: the dataset's Hub source)")
    conv.add_argument("--split", help="split to read from the Hub, also stored in extra_info (default: the dataset's)")
    conv.add_argument("--hub-config", help="Hugging Face dataset config (default: the dataset's)")
    conv.add_argument("--template", default="boxed", help=f"one of {sorted(TEMPLATES)} or a JSON file")
    conv.add_argument("--data-source", help="data_source value (default: the dataset name)")
    conv.add_argument("--question-column")
    conv.add_argument("--answer-column")
    conv.add_argument("--limit", type=int, help="keep the first N rows")
    conv.add_argument("--output", required=True)
    sel = sub.add_parser("select", help="difficulty-selected subset from a selector model's rollouts")
    sel.add_argument("--data", required=True, help="verl parquet written by `convert`")
    sel.add_argument("--rollouts", required=True, help="scores.jsonl of rlvr_recipes.launch.evaluate, or per-sample rows")
    sel.add_argument("--min-rate", type=float, default=0.3)
    sel.add_argument("--max-rate", type=float, default=0.5)
    sel.add_argument("--count", type=int, default=500)
    sel.add_argument("--seed", type=int, default=42)
    sel.add_argument("--output", required=True)
    args = parser.parse_args(argv)

    if args.command == "list":
        _list()
        return
    if args.command == "convert":
        spec = DATASETS[args.dataset]
        source = args.input or spec.hub
        split = args.split or spec.split
        template = load_template(args.template)
        raw = load_table(source, split=split, hub_config=args.hub_config or spec.hub_config)
        if args.limit is not None:
            raw = raw.head(args.limit)
        print(f"[data] {source}: {len(raw)} rows, columns {list(raw.columns)}", flush=True)
        out = to_verl(raw, args.dataset, template, split, args.data_source, args.question_column, args.answer_column)
        if out.attrs["skipped"]:
            print(f"[data] warning: skipped {out.attrs['skipped']} rows without a question or a final answer "
                  f"(first rows: {out.attrs['skipped_rows']})", file=sys.stderr)
        if out.empty:
            raise ValueError(f"{source}: no usable rows")
        _write(out, args.output)
        return
    data = pd.read_parquet(args.data) if os.path.exists(args.data) else None
    if data is None:
        raise FileNotFoundError(f"--data {args.data!r} does not exist")
    out = select_by_difficulty(data, load_table(args.rollouts), args.min_rate, args.max_rate, args.count, args.seed)
    _write(out, args.output)


if __name__ == "__main__":
    main()
