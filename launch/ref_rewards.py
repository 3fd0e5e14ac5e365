"""Cache AAPO's reference rewards: sample M responses per prompt from the frozen reference model, score them with the
training reward, store them with the dataset.

    python -m launch.ref_rewards --data data/train.parquet --model $MODEL_PATH --samples 16 --backend vllm \
        --output data/train_ref.parquet                                   # GPU
    python -m launch.ref_rewards --data data/train.parquet --generations ref_gens.jsonl --output data/train_ref.parquet

Each row gets ``extra_info["ref_rewards"]`` (M floats). During training the trainer extension
(``trainer.v1.trainer_mode=rlvr``) draws G distinct ones per prompt, from a permutation drawn from (seed, step), and
pairs them with the G policy responses (AAPO Eq. 5). The reference model is frozen, so sampling once before training
gives rewards from the same distribution as sampling it every step (the paper's +28-45 % step time, Table 4) at the
cost of reusing M samples across epochs.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Callable, Optional, Sequence

import pandas as pd

from launch.evaluate import generate


def load_reward_fn(path: Optional[str], name: str) -> Callable[..., object]:
    """The training reward: a verl custom reward function file (``path``, ``name``), else this package's math reward."""
    if path:
        from verl.utils.import_utils import load_extern_object

        return load_extern_object(module_path=path, object_name=name)
    from reward.math_reward import compute_score

    return compute_score


def _score(fn: Callable[..., object], data_source: str, response: str, truth: str, extra: dict) -> float:
    out = fn(data_source=data_source, solution_str=response, ground_truth=truth, extra_info=extra)
    return float(out["score"] if isinstance(out, dict) else out)


def attach_ref_rewards(df: pd.DataFrame, responses: Sequence[Sequence[str]], reward_fn: Callable[..., object]) -> pd.DataFrame:
    """Score ``responses[i]`` (M strings) for row i and store them as ``extra_info["ref_rewards"]``."""
    if len(responses) != len(df):
        raise ValueError(f"{len(responses)} response lists for {len(df)} prompts")
    out = df.copy()
    infos = []
    for i, (info, source, rm, resp) in enumerate(zip(df["extra_info"], df["data_source"], df["reward_model"], responses)):
        info = dict(info) if isinstance(info, dict) else {"index": i}
        info.setdefault("index", i)
        info["ref_rewards"] = [_score(reward_fn, source, r, rm["ground_truth"], info) for r in resp]
        infos.append(info)
        if (i + 1) % 100 == 0:
            print(f"[ref_rewards] scored {i + 1}/{len(df)} prompts", flush=True)
    out["extra_info"] = infos
    return out


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="verl parquet (python -m launch.data)")
    parser.add_argument("--output", required=True)
    parser.add_argument("--generations", help="JSONL with one {'index', 'responses'} per prompt, instead of a model")
    parser.add_argument("--model", help="the frozen reference model (the initial policy)")
    parser.add_argument("--backend", default="vllm", choices=["vllm", "hf"])
    parser.add_argument("--samples", type=int, default=16, help="M responses per prompt (>= rollout.n)")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--top-p", type=float, default=1.0)
    parser.add_argument("--max-new-tokens", type=int, default=2048)
    parser.add_argument("--reward-path", help="verl custom reward function file (default: reward/math_reward.py)")
    parser.add_argument("--reward-name", default="compute_score")
    args = parser.parse_args(argv)
    df = pd.read_parquet(args.data)
    if args.generations:
        with open(args.generations) as f:
            by_index = {int(r["index"]): r["responses"] for r in map(json.loads, filter(str.strip, f))}
        indices = [int(e["index"]) if isinstance(e, dict) and "index" in e else i for i, e in enumerate(df["extra_info"])]
        missing = [i for i in indices if i not in by_index]
        if missing:
            raise ValueError(f"--generations lacks prompts with index {missing[:10]}")
        responses = [by_index[i] for i in indices]
    elif args.model:
        rows = generate(args.model, [args.data], args.samples, args.backend, args.temperature, args.top_p,
                        args.max_new_tokens)
        responses = [r["responses"] for r in rows]
    else:
        parser.error("give --model (sample the reference) or --generations (precomputed)")
    out = attach_ref_rewards(df, responses, load_reward_fn(args.reward_path, args.reward_name))
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    out.to_parquet(args.output)
    print(f"[ref_rewards] wrote {len(out)} prompts with {len(responses[0]) if responses else 0} reference rewards each "
          f"to {args.output}")


if __name__ == "__main__":
    main()
