"""Build the embedded default locally: a character-level tokenizer, a tiny Llama-type causal LM and an addition task.

Nothing is downloaded. Everything is seeded and written under one directory::

    <out>/model/       tokenizer + config + random-init (or warm-started) weights, loadable by AutoTokenizer and
                       AutoModelForCausalLM (verl's ``actor_rollout_ref.model.path``)
    <out>/data/train.parquet, <out>/data/test.parquet
                       verl's RL parquet layout: ``prompt`` (chat messages), ``data_source``, ``reward_model``
                       ``{"style": "rule", "ground_truth": ...}``, ``extra_info``

The task is integer addition ``"47+8="`` -> ``"55"`` (by default a two-digit and a one-digit operand: 1000 problems,
900 for training and 100 held out), scored by :func:`rlvr_recipes.reward.arithmetic.compute_score`. The prompt carries no chat
markup: the chat template only concatenates the message contents, so the rendered prompt is exactly ``"47+8="``.
The countdown task of the CPU lab (``task=CountdownSpec()``, :mod:`rlvr_recipes.tiny_task.countdown`) is built the same
way, with a larger model (:data:`COUNTDOWN_MODEL`), its prompt ``"3,7,9>19:"``, the ground truth ``"19|3,7,9"`` scored
by :func:`rlvr_recipes.reward.countdown.compute_score`, and a warm start of ``spec.warm_start_steps`` supervised steps.
With a warm start, every training row also carries ``extra_info["ref_rewards"]``: the rewards of ``ref_samples``
responses of the initial (reference) model, which AAPO's advantage margin needs (see ``rlvr_recipes/launch/ref_rewards.py``).

A warm start trains on the CPU, and the sums in its matrix products depend on the kernels the CPU runs them with, so
the same seed gives other weights on another CPU (docs/lab.md, "A build of the task per CPU"; for the addition task,
whose warm start stops at a target, docs/cpu.md, "Why the rise differs from machine to machine"). The default warm
start of each task therefore ships with the package (:data:`SHIPPED_WARM_STARTS`, one file and its record per
settings): a build whose settings are a shipped warm start's loads those weights, checked against the record's
SHA-256, instead of training, so every machine starts its runs from the same model. ``train_warm_start=True`` trains
it on the machine instead (to remake the file, or to see a CPU's own build).

Why Llama and a character vocabulary: verl 0.9.1 swaps the tokenizer of ``model_type=qwen2`` models for its own
Qwen handling, which needs a byte-level vocabulary; a Llama config keeps the plain tokenizer, and a character
vocabulary (printable ASCII plus newline and tab) round-trips any ASCII text exactly, newlines included.

CLI: ``python -m rlvr_recipes.tiny_task.build --out runs/tiny`` (``--help`` for the sizes).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
from dataclasses import asdict, dataclass
from typing import Any, Optional, Union

from rlvr_recipes.tiny_task import countdown
from rlvr_recipes.tiny_task.countdown import CountdownSpec
from rlvr_recipes.tiny_task.task import WARM_START_EVAL_EVERY, TaskSpec, addition_problems, prompt_text

DATA_SOURCE = "arithmetic/addition"
COUNTDOWN_SOURCE = "countdown"
PAD, EOS, UNK = "<pad>", "</s>", "<unk>"
#: Renders a conversation as the concatenation of its message contents (no role markup), assistant turns closed by
#: the end-of-sequence token. ``add_generation_prompt`` adds nothing: the prompt already ends with "=".
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['content'] }}"
    "{% if message['role'] == 'assistant' %}" + EOS + "{% endif %}{% endfor %}"
)


@dataclass(frozen=True)
class TinyModelSpec:
    """Sizes of the tiny Llama-type model (about 0.1M parameters with the defaults)."""

    hidden_size: int = 64
    intermediate_size: int = 128
    num_hidden_layers: int = 2
    num_attention_heads: int = 2
    num_key_value_heads: int = 2
    max_position_embeddings: int = 64


#: The countdown task's model: 1.1M parameters (hidden 128, 4 layers). Chosen by measurement (docs/lab.md): the
#: 4.2M-parameter model learned the training answers faster and generalised less.
COUNTDOWN_MODEL = TinyModelSpec(hidden_size=128, intermediate_size=512, num_hidden_layers=4, num_attention_heads=4,
                                num_key_value_heads=4)


def vocabulary() -> list[str]:
    """Special tokens, then every printable ASCII character, newline and tab (one token each)."""
    chars = [chr(c) for c in range(32, 127)] + ["\n", "\t"]
    return [PAD, EOS, UNK] + chars


def build_tokenizer(out_dir: str) -> Any:
    """Write a character-level fast tokenizer to ``out_dir`` and return it (loaded back through AutoTokenizer)."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    vocab = {tok: i for i, tok in enumerate(vocabulary())}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    core.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")  # one token per character
    core.decoder = decoders.Fuse()  # concatenate, no spaces between characters
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core,
        pad_token=PAD,
        eos_token=EOS,
        unk_token=UNK,
        clean_up_tokenization_spaces=False,
        model_max_length=TinyModelSpec().max_position_embeddings,
    )
    tok.chat_template = CHAT_TEMPLATE
    os.makedirs(out_dir, exist_ok=True)
    tok.save_pretrained(out_dir)
    loaded = AutoTokenizer.from_pretrained(out_dir)
    probe = "12+34=\n46\t x"
    if loaded.decode(loaded.encode(probe, add_special_tokens=False)) != probe:
        raise RuntimeError(f"tokenizer written to {out_dir} does not round-trip {probe!r}")
    return loaded


def build_model(out_dir: str, spec: TinyModelSpec = TinyModelSpec(), seed: int = 0) -> Any:
    """Write a randomly initialised ``LlamaForCausalLM`` of size ``spec`` (fp32, safetensors) to ``out_dir``."""
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    vocab = vocabulary()
    config = LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.num_hidden_layers,
        num_attention_heads=spec.num_attention_heads,
        num_key_value_heads=spec.num_key_value_heads,
        max_position_embeddings=spec.max_position_embeddings,
        pad_token_id=vocab.index(PAD),
        eos_token_id=vocab.index(EOS),
        bos_token_id=None,
        tie_word_embeddings=True,
        torch_dtype="float32",
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(
        eos_token_id=config.eos_token_id, pad_token_id=config.pad_token_id, bos_token_id=None
    )
    model.save_pretrained(out_dir)
    return model


def to_rows(pairs: list[tuple[int, int]], split: str) -> list[dict[str, Any]]:
    """verl RL rows for ``pairs``."""
    return [
        {
            "data_source": DATA_SOURCE,
            "prompt": [{"role": "user", "content": prompt_text(a, b)}],
            "ability": "arithmetic",
            "reward_model": {"style": "rule", "ground_truth": str(a + b)},
            "extra_info": {"split": split, "index": i, "a": a, "b": b},
        }
        for i, (a, b) in enumerate(pairs)
    ]


def countdown_rows(problems: list[dict], split: str) -> list[dict[str, Any]]:
    """verl RL rows for countdown ``problems`` (ground truth ``"T|a,b,..."``)."""
    return [
        {
            "data_source": COUNTDOWN_SOURCE,
            "prompt": [{"role": "user", "content": countdown.prompt_text(p["numbers"], p["target"])}],
            "ability": "arithmetic",
            "reward_model": {"style": "rule", "ground_truth": p["ground_truth"]},
            "extra_info": {"split": split, "index": i, "kind": p["kind"], "solutions": p["solutions"]},
        }
        for i, p in enumerate(problems)
    ]


def build_data(out_dir: str, spec: Union[TaskSpec, CountdownSpec] = TaskSpec()) -> tuple[str, str]:
    """Write ``train.parquet`` and ``test.parquet`` of the addition or the countdown task to ``out_dir``; return
    their paths."""
    import pandas as pd

    if isinstance(spec, CountdownSpec):
        train, test = countdown.countdown_problems(spec)
        splits = (("train", countdown_rows(train, "train")), ("test", countdown_rows(test, "test")))
    else:
        train_pairs, test_pairs = addition_problems(spec)
        splits = (("train", to_rows(train_pairs, "train")), ("test", to_rows(test_pairs, "test")))
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for split, rows in splits:
        path = os.path.join(out_dir, f"{split}.parquet")
        pd.DataFrame(rows).to_parquet(path)
        paths.append(path)
    return paths[0], paths[1]


def attach_reference_rewards(
    model_dir: str, train_path: str, samples: int, seed: int = 0, settings: Optional[dict] = None
) -> None:
    """Score ``samples`` responses of the model in ``model_dir`` to every prompt of ``train_path`` and store them in
    place as ``extra_info["ref_rewards"]`` (the cache format of ``rlvr_recipes/launch/ref_rewards.py``, settings recorded).

    ``settings`` (:func:`rlvr_recipes.reward.reference.reference_settings` of the training config) gives the reward, the length
    limit and the sampling; without it: the arithmetic reward, answer width + 1 tokens, temperature 1.0."""
    import pandas as pd
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rlvr_recipes.reward.reference import attach_ref_rewards, settings_reward, write_cache

    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(model_dir, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    df = pd.read_parquet(train_path)
    prompts = [row[0]["content"] for row in df["prompt"]]
    if settings is None:
        width = max(len(str(int(rm["ground_truth"]))) for rm in df["reward_model"]) + 1
        settings = {"reward_path": "pkg://rlvr_recipes.reward.arithmetic", "reward_name": "compute_score",
                    "reward_kwargs": {}, "max_response_length": width, "temperature": 1.0, "top_p": 1.0, "top_k": -1}
    settings = dict(settings)
    responses: list[list[str]] = []
    for start in range(0, len(prompts), 256):
        chunk = [p for p in prompts[start : start + 256] for _ in range(samples)]
        enc = tokenizer(chunk, return_tensors="pt", padding=True, add_special_tokens=False)
        with torch.no_grad():
            out = model.generate(**enc, max_new_tokens=settings["max_response_length"], do_sample=True,
                                 temperature=settings["temperature"], top_k=None, top_p=settings["top_p"], pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)
        texts = tokenizer.batch_decode(out[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)
        responses += [texts[i : i + samples] for i in range(0, len(texts), samples)]
    write_cache(attach_ref_rewards(df, responses, settings_reward(settings), settings["reward_kwargs"]), train_path,
                settings, samples)


#: The warm starts that ship with the package: ``<name>.safetensors`` and its record ``<name>.json`` (the build
#: settings it was trained with, its SHA-256, the warm start's figures and the machine it was trained on).
SHIPPED_WARM_STARTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "warm_starts")
#: The settings of a build that decide its warm start's weights (the reference cache is made after the warm start);
#: ``warm_start_eval_every`` (how often the addition warm start checks its target) only where a build records it.
WARM_START_KEYS = ("model", "task", "warm_start_target", "version", "warm_start_eval_every")


def shipped_warm_start(
    model: TinyModelSpec, task: Union[TaskSpec, CountdownSpec], warm_start_target: float
) -> Optional[dict[str, Any]]:
    """The record of the warm start shipped for these settings, its ``path`` added, or None if none is."""
    if warm_start_target <= 0 or not os.path.isdir(SHIPPED_WARM_STARTS):
        return None
    settings = build_settings(model, task, warm_start_target)
    wanted = {k: settings[k] for k in WARM_START_KEYS if k in settings}
    for name in sorted(os.listdir(SHIPPED_WARM_STARTS)):
        if not name.endswith(".json"):
            continue
        record_path = os.path.join(SHIPPED_WARM_STARTS, name)
        with open(record_path) as f:
            record = json.load(f)
        if record["settings"] == wanted:
            return {**record, "path": os.path.splitext(record_path)[0] + ".safetensors"}
    return None


def file_sha256(path: str) -> str:
    """The SHA-256 of the file at ``path``, in hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_shipped_warm_start(record: dict[str, Any]) -> None:
    """Raise ``ValueError`` naming the file if the shipped warm start of ``record`` (:func:`shipped_warm_start`) is
    missing or is not the one its record names (its SHA-256 differs: a Git LFS pointer or a damaged copy)."""
    path = record["path"]
    if not os.path.exists(path):
        raise ValueError(f"{path}: the shipped warm start is missing (reinstall the package, or build with "
                         "train_warm_start=True)")
    sha = file_sha256(path)
    if sha != record["sha256"]:
        raise ValueError(f"{path}: SHA-256 {sha} is not its record's {record['sha256']} (a Git LFS pointer or a "
                         "damaged copy; reinstall the package, or build with train_warm_start=True)")


def load_shipped_warm_start(model_dir: str, record: dict[str, Any]) -> None:
    """Put the shipped warm start of ``record`` (:func:`shipped_warm_start`) in place of the weights in ``model_dir``.

    Raises:
        ValueError: the shipped file fails :func:`check_shipped_warm_start`, or does not hold the tensors of the
            model in ``model_dir``.
    """
    from safetensors import safe_open

    check_shipped_warm_start(record)
    path, sha = record["path"], record["sha256"]
    target = os.path.join(model_dir, "model.safetensors")

    def shapes(file: str) -> dict[str, tuple[int, ...]]:
        with safe_open(file, framework="pt") as f:
            return {key: tuple(f.get_slice(key).get_shape()) for key in f.keys()}

    if shapes(path) != shapes(target):
        raise ValueError(f"{path}: its tensors are not those of the model built in {model_dir}")
    shutil.copyfile(path, target)
    with open(os.path.join(model_dir, "warm_start.json"), "w") as f:
        json.dump({**record["warm_start"], "shipped": os.path.basename(path), "sha256": sha}, f)


def tiny_paths(out: str) -> dict[str, str]:
    """Where :func:`build` puts the model, the training and the held-out data under ``out`` (built or not)."""
    out = os.path.abspath(out)
    return {
        "model": os.path.join(out, "model"),
        "train": os.path.join(out, "data", "train.parquet"),
        "test": os.path.join(out, "data", "test.parquet"),
    }


def build_settings(
    model: TinyModelSpec,
    task: Union[TaskSpec, CountdownSpec],
    warm_start_target: float = 0.0,
    ref_samples: int = 8,
    ref_settings: Optional[dict] = None,
    warm_start_sha256: Optional[str] = None,
) -> dict[str, Any]:
    """The settings a build records in its ``build.json`` stamp, as the stamp reads back (tuples become lists).

    The countdown task is marked by ``task["name"] == "countdown"`` (:func:`task_from_settings` reads it back);
    ``warm_start_sha256`` names a shipped warm start the build loaded (a build that trained its own has none).
    """
    settings: dict[str, Any] = {
        "model": asdict(model),
        "task": {"name": "countdown", **asdict(task)} if isinstance(task, CountdownSpec) else asdict(task),
        "warm_start_target": warm_start_target,
        "ref_samples": ref_samples if warm_start_target > 0 else 0,
        "version": 1,
    }
    if warm_start_target > 0 and not isinstance(task, CountdownSpec):
        # how often the stopping rule is checked (builds made when it was every 100 steps are rebuilt)
        settings["warm_start_eval_every"] = WARM_START_EVAL_EVERY
    if ref_settings is not None and warm_start_target > 0 and ref_samples > 0:
        settings["ref_settings"] = ref_settings
    if warm_start_sha256 is not None:
        settings["warm_start_sha256"] = warm_start_sha256
    return json.loads(json.dumps(settings))


def task_from_settings(settings: dict[str, Any]) -> tuple[str, Union[TaskSpec, CountdownSpec]]:
    """``(kind, spec)`` of the task recorded by :func:`build_settings` (``kind``: "addition" or "countdown")."""
    fields = {k: tuple(v) if isinstance(v, list) else v for k, v in settings["task"].items()}  # JSON lists -> tuples
    kind = fields.pop("name", "addition")
    return kind, CountdownSpec(**fields) if kind == "countdown" else TaskSpec(**fields)


def build(
    out: str,
    model: TinyModelSpec = TinyModelSpec(),
    task: Union[TaskSpec, CountdownSpec] = TaskSpec(),
    warm_start_target: float = 0.0,
    ref_samples: int = 8,
    force: bool = False,
    ref_settings: Optional[dict] = None,
    train_warm_start: bool = False,
) -> dict[str, str]:
    """Build model, tokenizer and data under ``out`` unless a build with the same settings is already there.

    ``warm_start_target`` > 0 runs :func:`rlvr_recipes.tiny_task.warmstart.warm_start` until one sample at temperature 1.0 is
    right that fraction of the time (a short supervised phase, so that RL starts from a policy that is sometimes
    right), then caches ``ref_samples`` reference rewards per training prompt (AAPO). For the countdown task
    (``task`` a :class:`CountdownSpec`), ``warm_start_target`` > 0 runs
    :func:`rlvr_recipes.tiny_task.warmstart.countdown_warm_start` for ``task.warm_start_steps`` steps. Returns the paths
    (``model``, ``train``, ``test``). Where a warm start ships for these settings (:func:`shipped_warm_start`) it is
    loaded instead, unless ``train_warm_start``. A ``build.json`` stamp records the settings (and the shipped warm
    start's SHA-256); a different request rebuilds.
    """
    out = os.path.abspath(out)
    stamp_path = os.path.join(out, "build.json")
    shipped = None if train_warm_start else shipped_warm_start(model, task, warm_start_target)
    settings = build_settings(model, task, warm_start_target, ref_samples, ref_settings,
                              warm_start_sha256=shipped["sha256"] if shipped else None)
    paths = tiny_paths(out)
    if not force and os.path.exists(stamp_path):
        with open(stamp_path) as f:
            stamp = json.load(f)
        if all(os.path.exists(p) for p in paths.values()):
            if stamp == settings:
                return paths
            if {k: v for k, v in stamp.items() if k != "ref_settings"} == {
                    k: v for k, v in settings.items() if k != "ref_settings"} and "ref_settings" in settings:
                # same model and data: only the reference cache is redone, with the training run's settings
                attach_reference_rewards(paths["model"], paths["train"], ref_samples, task.seed, ref_settings)
                with open(stamp_path, "w") as f:
                    json.dump(settings, f, indent=1)
                return paths
    if shipped is not None:
        check_shipped_warm_start(shipped)  # before the data are built
    build_tokenizer(paths["model"])
    build_model(paths["model"], model, seed=task.seed)
    build_data(os.path.join(out, "data"), task)
    if shipped is not None:
        load_shipped_warm_start(paths["model"], shipped)
        print(f"[tiny] warm start: the shipped {os.path.basename(shipped['path'])} (trained on "
              f"{shipped['trained_on']}; loss {shipped['warm_start']['loss']:.3f}), SHA-256 checked", flush=True)
    elif warm_start_target > 0 and isinstance(task, CountdownSpec):
        from rlvr_recipes.tiny_task.warmstart import countdown_warm_start

        result = countdown_warm_start(paths["model"], task, steps=task.warm_start_steps, seed=task.seed)
        print(f"[tiny] countdown warm start: {result['steps']} supervised steps on {result['train_examples']} "
              f"problems, loss {result['loss']:.3f}, {result['seconds']:.0f} s", flush=True)
    elif warm_start_target > 0:
        from rlvr_recipes.tiny_task.warmstart import warm_start

        result = warm_start(paths["model"], task, target_acc=warm_start_target)
        print(f"[tiny] warm start: {result['steps']} supervised steps, test accuracy (one sample, T=1) "
              f"{result['test_acc_sampled_before']:.2f} -> {result['test_acc_sampled']:.2f}, greedy "
              f"{result['test_acc_greedy']:.2f}", flush=True)
    if warm_start_target > 0 and ref_samples > 0:
        attach_reference_rewards(paths["model"], paths["train"], ref_samples, seed=task.seed, settings=ref_settings)
    with open(stamp_path, "w") as f:
        json.dump(settings, f, indent=1)
    return paths


def main(argv: Optional[list[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="runs/tiny", help="directory to build into (default: runs/tiny)")
    parser.add_argument("--digits", type=int, default=TaskSpec.digits, help="max digits of the first operand")
    parser.add_argument("--digits-b", type=int, default=TaskSpec.digits_b, help="max digits of the second operand")
    parser.add_argument("--train-size", type=int, default=TaskSpec.train_size)
    parser.add_argument("--test-size", type=int, default=TaskSpec.test_size)
    parser.add_argument("--hidden-size", type=int, default=TinyModelSpec.hidden_size)
    parser.add_argument("--layers", type=int, default=TinyModelSpec.num_hidden_layers)
    parser.add_argument("--warm-start", type=float, default=0.0, metavar="ACC",
                        help="supervised warm start until one sample is right this fraction of the time (0: none)")
    parser.add_argument("--ref-samples", type=int, default=8, help="reference rewards cached per prompt (AAPO)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--force", action="store_true", help="rebuild even if an identical build exists")
    args = parser.parse_args(argv)
    spec = TinyModelSpec(
        hidden_size=args.hidden_size,
        intermediate_size=2 * args.hidden_size,
        num_hidden_layers=args.layers,
    )
    task = TaskSpec(digits=args.digits, digits_b=args.digits_b, train_size=args.train_size, test_size=args.test_size, seed=args.seed)
    paths = build(args.out, spec, task, warm_start_target=args.warm_start, ref_samples=args.ref_samples,
                  force=args.force)
    print(json.dumps(paths))


if __name__ == "__main__":
    main()
