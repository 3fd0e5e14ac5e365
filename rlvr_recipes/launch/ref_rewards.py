"""Cache AAPO's reference rewards: sample M responses per prompt from the frozen reference model with the recipe's own
sampling settings and length limit, score them with the recipe's own reward, store them with the dataset.

    python -m rlvr_recipes.launch.ref_rewards --config-name aapo --model $MODEL_PATH --backend vllm \
        --output data/train_ref.parquet -- <the training run's overrides>                      # GPU
    python -m rlvr_recipes.launch.ref_rewards --config-name aapo --generations ref_gens.jsonl --output data/train_ref.parquet

The recipe (``--config-name`` + Hydra overrides after ``--``) is composed as ``python -m verl.trainer.main_ppo`` composes
it; from it come the reward (``reward.custom_reward_function`` path, name, ``reward_kwargs``), the length limit
(``data.max_response_length``), the sampling settings (``actor_rollout_ref.rollout`` temperature / top_p / top_k), the
data (``data.train_files``, unless ``--data``) and the model (``actor_rollout_ref.model.path``, unless ``--model``).
These settings are recorded in the cache's parquet metadata; the trainer extension (``trainer.v1.trainer_mode=rlvr``)
refuses at start a cache whose settings differ from the training run's, naming both.

Each row gets ``extra_info["ref_rewards"]`` (M floats). During training the G responses of a prompt are paired with G
distinct cached rewards (AAPO Eq. 5). By default M = G x epochs, so that no reference sample of a prompt is drawn twice
over the run: the frozen reference's samples are then the paper's per-step reference sampling in distribution, at a
fraction of its cost (AAPO Table 4: +28-45 % step time). A smaller ``--samples`` is allowed and warned about.
"""

from __future__ import annotations

import argparse
import json
import math
import os
from typing import Any, Optional, Sequence

import pandas as pd

from rlvr_recipes import CONFIG_DIR
from rlvr_recipes.launch.evaluate import generate
from rlvr_recipes.reward.reference import (attach_ref_rewards, planned_epochs, reference_settings, reuse_warning,
                                           settings_reward, write_cache)



def compose_recipe(name: str, overrides: Sequence[str] = ()) -> Any:
    """The recipe ``rlvr_recipes/configs/<name>.yaml`` with ``overrides``, composed as verl's ``main_ppo`` composes it."""
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
        return compose(config_name=name, overrides=list(overrides))


def default_samples(config: Any, num_prompts: int) -> int:
    """M = G x epochs: no prompt's reference sample is drawn twice over the run."""
    return int(math.ceil(int(config.actor_rollout_ref.rollout.n) * planned_epochs(config, num_prompts)))


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config-name", default="aapo", help="the training recipe (rlvr_recipes/configs/<name>.yaml)")
    parser.add_argument("--data", help="verl parquet (default: the recipe's data.train_files)")
    parser.add_argument("--output", required=True)
    parser.add_argument("--generations", help="JSONL with one {'index', 'responses'} per prompt, instead of a model")
    parser.add_argument("--model", help="the frozen reference model (default: the recipe's actor_rollout_ref.model.path)")
    parser.add_argument("--backend", default="vllm", choices=["vllm", "hf"])
    parser.add_argument("--samples", type=int, help="M responses per prompt (default: rollout.n x epochs)")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides of the training run, after --")
    args = parser.parse_args(argv)
    config = compose_recipe(args.config_name, args.overrides)
    settings = reference_settings(config)
    if settings["top_k"] not in (-1, 0):
        raise ValueError(f"actor_rollout_ref.rollout.top_k={settings['top_k']}: reference sampling supports top_k=-1 only")
    data = args.data or str(list(config.data.train_files)[0] if not isinstance(config.data.train_files, str)
                            else config.data.train_files)
    df = pd.read_parquet(data)
    group, epochs = int(config.actor_rollout_ref.rollout.n), planned_epochs(config, len(df))
    samples = args.samples or default_samples(config, len(df))
    if args.generations:
        with open(args.generations) as f:
            by_index = {int(r["index"]): r["responses"] for r in map(json.loads, filter(str.strip, f))}
        indices = [int(e["index"]) if isinstance(e, dict) and "index" in e else i for i, e in enumerate(df["extra_info"])]
        missing = [i for i in indices if i not in by_index]
        if missing:
            raise ValueError(f"--generations lacks prompts with index {missing[:10]}")
        responses = [by_index[i] for i in indices]
        samples = min(len(r) for r in responses) if responses else samples
    else:
        model = args.model or str(config.actor_rollout_ref.model.path)
        rows = generate(model, [data], samples, args.backend, settings["temperature"], settings["top_p"],
                        settings["max_response_length"])
        responses = [r["responses"] for r in rows]
    if samples < group:
        parser.error(f"{samples} reference samples per prompt < rollout.n {group}: each response needs its own")
    warning = reuse_warning(samples, group, epochs)
    if warning:
        print(f"[ref_rewards] WARNING: {warning}", flush=True)
    out = attach_ref_rewards(df, responses, settings_reward(settings), settings["reward_kwargs"])
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    write_cache(out, args.output, settings, samples)
    print(f"[ref_rewards] wrote {len(out)} prompts with {samples} reference rewards each to {args.output}; "
          f"settings {json.dumps(settings, sort_keys=True)}")


if __name__ == "__main__":
    main()
