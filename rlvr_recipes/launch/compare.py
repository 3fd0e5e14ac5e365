"""Every method side by side on verl's real trainer: seeds, curves with bands, pass@k at the start and the end, and
the papers' claims checked against what the runs show.

    python -m rlvr_recipes.launch.compare --methods grpo,avspo,agrae,aapo,cw_grpo,grpo_n --seeds 3 --steps 40 [--out DIR]
                             [--task addition|countdown] [--passk-samples 64] [--jobs 1] [-- KEY=VALUE ...]

Each method x seed is one run of verl's trainer (``main_ppo``'s ``run_ppo`` with ``TaskRunnerV1``, through
:func:`rlvr_recipes.launch.cpu_run.cluster_run`) on the CPU and an embedded task (``--task``; ``KEY=VALUE`` overrides
go to every run). Every run of one comparison shares one Ray cluster and one TaskRunner actor, started by the first
run, so their start-up is paid once (:func:`rlvr_recipes.launch.cpu_run.shared_task_runner`); with ``--jobs J`` the
runs are trained J at a time instead, each lane a process with a Ray cluster of its own (:func:`run_in_lanes`;
docs/lab.md, "Lanes"). Seed ``s`` sets the data order
(``data.seed``), the mini-batch order (``actor.data_loader_seed``) and the rollout sampling
(``rollout.seed``); the warm-started initial model is the same for every seed. The rollout server and the pass@k
scoring draw each sample from a stream keyed by the seed, the step, the prompt and the sample
(:mod:`rlvr_recipes.cpu_backend.sampling`), so a run of one seed replays (its answers do not depend on how requests
were batched; sums over the batch may differ in the last digits), and the runs of two methods at one seed share their
draws: the report then compares two methods seed by seed, by the paired t-test (:func:`diff_verdict`; docs/lab.md,
"Shared draws"). Runs made before the keyed draws (no ``keyed_draws`` in their ``done.json``) are independent
samples and are compared by Welch's test. A run that finished (its
``done.json`` exists) is not repeated, so an interrupted comparison resumes where it stopped (Ctrl-C or SIGTERM ends it
within seconds, lanes included, saying how many runs are kept); a run whose workers
lost the race for their rendezvous port is run again (:func:`rlvr_recipes.launch.cpu_run.cluster_run`).

pass@k (k = 1, 2, 4, ... up to ``--passk-samples``) is the unbiased estimator of :mod:`rlvr_recipes.launch.passk` on the held-out
problems, from ``--passk-samples`` samples per problem at temperature 1.0, of the initial model (once per seed) and
of each run's final weights (saved by verl as a Hugging Face model at the last step). The report pairs each run with
its own seed's sample of the initial model: the change of pass@1 and of pass@k at the largest k, with the paired
t-test's interval (:func:`paired_change`).

Writes ``<out>/report.md`` (plots first, then the tables and the claims), ``curves.png``, ``passk.png``,
``acr_vs_group_size.png``, ``summary.json`` and one folder per run under ``<out>/runs/<method>/seed<s>/``. Each
claim in ``summary.json`` keeps the per-seed figures its verdict was taken on, and for a paired test the difference by
seed (:func:`claims`), so a verdict can be checked, or a seed looked at, from the summary alone.
``--publish DOC`` then copies the report into a document between its two marker lines (:func:`publish_report`; ``make
lab`` does it through ``launch.replay --publish --report-into``, only where the runs are the committed experiment's,
and checks the document's markers before the runs with ``--check-publish DOC``), so the committed report is what the
command wrote.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import shlex
import shutil
import signal
import statistics
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional, Sequence

import numpy as np

from rlvr_recipes import runs_dir
from rlvr_recipes.launch.cpu_plot import is_val_accuracy, read_metrics, read_rollout_dump
from rlvr_recipes.launch.passk import default_ks, pass_at_k

DEFAULT_METHODS = "grpo,avspo,agrae,aapo,cw_grpo,grpo_n"

#: panels of curves.png: (title, metric key or a key prefix/suffix pair for the held-out accuracy)
CURVES: list[tuple[str, str]] = [
    ("training reward", "critic/score/mean"),
    ("held-out greedy accuracy", "val"),
    ("ACR", "acr/acr"),
    ("effective ACR", "acr/effective_acr"),
    ("zero-advantage fraction", "acr/zero_adv_frac"),
    ("entropy", "actor/entropy"),
    ("response length", "response_length/mean"),
]
#: each method's own figures, plotted when its runs log them
OWN_FIGURES = {"avspo": "avspo/tau_adapt", "aapo": "aapo/margin_mean", "agrae": "agrae/omega"}
#: (method, its baseline, paper, figures): the exploration claims, each against the baseline the paper compares
#: with; figures: ``entropy`` (kept above the baseline's), ``passk`` (large-k pass@k kept above the baseline's),
#: ``pass1`` (held-out pass@1 at the end above the baseline's), and ``entropy_below`` and ``passk_below`` (below it)
EXPLORATION_CLAIMS = (("agrae", "grpo", "001 Sec. 5", ("entropy", "passk")),
                      ("grpo_n", "grpo", "004 Sec. 4", ("entropy", "passk")),
                      ("gspo_n", "gspo", "004 Sec. 4", ("entropy", "passk")),
                      ("grpo_n_4mb", "grpo_4mb", "004 Sec. 4, 4 mini-batches a batch (App. B.5)", ("entropy", "passk")),
                      # W-REINFORCE, a baseline of 001 "addressing GRPO's insufficient exploration": its pass@k at
                      # large k lies above GRPO's on MATH, AIME 2025 and AMC23 (001 Table 2); 001 shows no entropy
                      ("w_reinforce", "grpo", "001 Table 2 (W-REINFORCE row)", ("passk",)),
                      # A-GRAE on DAPO (as 001 ran it: no dynamic sampling, binary reward) and on Dr.GRPO: above its
                      # base at every k of 001 Table 2, pass@1 and the largest k alike
                      ("agrae_dapo_001", "dapo_001", "001 Table 2 (DAPO + A-GRAE row)", ("pass1", "passk")),
                      ("agrae_drgrpo", "drgrpo", "001 Table 2 (Dr.GRPO + A-GRAE row)", ("pass1", "passk")),
                      # 001's Control Experiment I (Sec. 4.1-4.2, Table 1a, Fig. 2-3): GRPO with its positive
                      # advantages x 10 (positive-dominant) has the most precipitous entropy decline and falls behind
                      # at large k (k > 16); with them / 10 (negative-dominant) its entropy rises through training,
                      # "diametrically opposed" to GRPO's, and it "consistently outperforms GRPO in Pass@k metrics",
                      # pass@1 too (Table 6), more so as k grows
                      ("agrae_pos_dominant", "grpo", "001 Sec. 4.2, Fig. 2-3 (Table 1 positive-dominant)",
                       ("entropy_below", "passk_below")),
                      ("agrae_neg_dominant", "grpo", "001 Sec. 4.2, Fig. 2-3 (Table 1 negative-dominant)",
                       ("entropy", "pass1", "passk")))
#: each figure an exploration claim can name (:data:`EXPLORATION_CLAIMS`): whether the claim is that the method's
#: value lies above its baseline's (True) or below it (False)
CLAIMED_ABOVE = {"entropy": True, "entropy_below": False, "pass1": True, "passk": True, "passk_below": False}
#: (larger G, smaller G): GRPO trained at each group size with all else fixed (000 Sec. 3.4.6, Fig. 5: a larger G has
#: lower ACR during training and higher final accuracy); grpo's G is cpu.yaml's 8
GROUP_SIZE_CLAIMS = (("grpo", "grpo_g4"), ("grpo_g4", "grpo_g2"))
#: the group size each of those methods trains at
GROUP_SIZES = {"grpo": 8, "grpo_g4": 4, "grpo_g2": 2}
#: (method, its baseline, figure claimed higher in the method's runs): GRPO trained on a third of the RL prompts split
#: by the warm start's solve rate (cpu_run.TRAIN_LEVELS), all else fixed. 000 Sec. 3.4.3, Fig. 2: mean ACR rises with
#: difficulty (0.305 at Level 4, 0.410 at Level 6), "too easy or too hard problems lead to homogeneous outcomes ...
#: which increases ACR", and final accuracy peaks at medium difficulty (0.630 at Level 4, 0.420 at Level 6)
DIFFICULTY_CLAIMS = (("grpo_hard", "grpo_medium", "ACR"), ("grpo_easy", "grpo_medium", "ACR"),
                     ("grpo_medium", "grpo_hard", "accuracy"), ("grpo_medium", "grpo_easy", "accuracy"),
                     # each run scored on its own level's third of the held-out prompts, as the paper scores each
                     # level on its subset of MATH-500 (score_own_levels)
                     ("grpo_medium", "grpo_hard", "own-level accuracy"),
                     ("grpo_medium", "grpo_easy", "own-level accuracy"),
                     # both runs scored on the base's own third of the held-out prompts: the middle third's run
                     # against each end's on that end's third. Not the paper's figure but its reading of Fig. 2
                     # ("medium-level problems ... generating diverse outcomes and thus reducing ACR while boosting
                     # accuracy"); the lab's figures at 382-387 suggested it, so it was written before the seeds
                     # that test it ran (docs/lab.md, "... on a third set (388-393), each end's run against ...")
                     ("grpo_medium", "grpo_hard", "accuracy on the base's third"),
                     ("grpo_medium", "grpo_easy", "accuracy on the base's third"))
#: the third of the prompts each of those methods trains on, as the claims name it
LEVEL_NAMES = {"grpo_easy": "the easiest third", "grpo_medium": "the middle third", "grpo_hard": "the hardest third"}
#: (baseline, paper): CW-GRPO's accuracy claims
CW_GRPO_BASELINES = (("grpo", "003 Table 2"), ("clip_cov", "003 Table 2"))  # Table 2: GRPO, Clip-Cov, CW-GRPO
#: the step in the keys of pass@k scoring's draws (the rollout server's keys use the trainer steps, -1 before the first
#: weight sync), so that scoring never reuses a rollout's stream
SCORING_STEP = -2


def val_key(data: dict[str, float]) -> Optional[str]:
    """The held-out greedy accuracy key of verl's validation (``val-core/<source>/.../mean@1``), if logged."""
    return next((k for k in sorted(data) if is_val_accuracy(k)), None)


def series(steps: dict[int, dict[str, float]], key: str) -> dict[int, float]:
    """``{step: value}`` of one metric (``key="val"`` picks the held-out accuracy)."""
    out = {}
    for step, data in steps.items():
        k = val_key(data) if key == "val" else key
        if k is not None and k in data and math.isfinite(data[k]):
            out[step] = data[k]
    return out


# ---------------------------------------------------------------------------------------------------- pass@k


def load_policy(model_dir: str) -> tuple[Any, Any]:
    """``(model, tokenizer)`` of the Hugging Face model in ``model_dir``: the model in float32 and eval mode, the
    tokenizer padding on the left, for ``generate``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir, padding_side="left")
    return AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval(), tokenizer


def render_prompts(tokenizer: Any, messages: Sequence[Any]) -> list[str]:
    """Each prompt of ``messages`` (a verl parquet file's ``prompt`` column) rendered by the model's chat template with
    a generation prompt, as verl's agent loop renders it."""
    return [tokenizer.apply_chat_template(list(m), add_generation_prompt=True, tokenize=False) for m in messages]


def _continue(model: Any, tokenizer: Any, enc: Any, max_new_tokens: int,
              logits_processor: Optional[Any] = None) -> tuple[Any, list[str]]:
    """``(generated ids, their texts)``: each encoded prompt of ``enc`` continued by argmax after
    ``logits_processor`` (None: greedy; :func:`rlvr_recipes.cpu_backend.sampling.keyed_sampling`'s: a keyed draw)."""
    import torch

    with torch.no_grad():
        out = model.generate(**enc, max_new_tokens=max_new_tokens, do_sample=False, temperature=None, top_k=None,
                             top_p=None, logits_processor=logits_processor, pad_token_id=tokenizer.pad_token_id,
                             eos_token_id=tokenizer.eos_token_id)
    generated = out[:, enc["input_ids"].shape[1] :]
    return generated, tokenizer.batch_decode(generated, skip_special_tokens=True)


def _is_right(reward_fn: Callable[..., Any], df: Any, row: int, text: str) -> bool:
    """Whether ``reward_fn`` scores ``text`` 1 for row ``row`` of a verl parquet frame (its score, or a dict's
    ``"score"``)."""
    score = reward_fn(df["data_source"].iloc[row], text, df["reward_model"].iloc[row]["ground_truth"])
    return float(score["score"] if isinstance(score, dict) else score) >= 1.0


def sample_correct_counts(model_dir: str, data_path: str, reward_fn: Callable[..., Any], samples: int,
                          max_new_tokens: int, seed: int, batch_prompts: int = 64,
                          record: Optional[dict[str, list]] = None) -> np.ndarray:
    """``(P,)`` number of correct responses among ``samples`` sampled (temperature 1.0) for each held-out prompt.

    Prompts are rendered by the model's chat template with a generation prompt, as verl's agent loop does. Sample
    ``j`` of a prompt draws from the stream keyed by (``seed``, the prompt's tokens, ``j``)
    (:func:`rlvr_recipes.cpu_backend.sampling.keyed_sampling`), so two models scored with one seed share their draws
    (the same answer wherever their distributions agree) and a score does not depend on the batch. With
    ``record``, its ``"tokens"`` list gets each response's length in tokens (end-of-sequence included) and its
    ``"distinct_correct"`` list each prompt's number of distinct correct responses.
    """
    import pandas as pd

    from rlvr_recipes.cpu_backend.sampling import keyed_sampling, request_key

    model, tokenizer = load_policy(model_dir)
    df = pd.read_parquet(data_path)
    prompts = render_prompts(tokenizer, df["prompt"])
    counts = np.zeros(len(df), dtype=np.int64)
    for start in range(0, len(prompts), batch_prompts):
        chunk = prompts[start : start + batch_prompts]
        enc = tokenizer([p for p in chunk for _ in range(samples)], return_tensors="pt", padding=True,
                        add_special_tokens=False)
        keys = [request_key(seed, SCORING_STEP, ids[mask.bool()].tolist(), j % samples)
                for j, (ids, mask) in enumerate(zip(enc["input_ids"], enc["attention_mask"]))]
        processors, _ = keyed_sampling(keys, enc["input_ids"].shape[1])
        generated, texts = _continue(model, tokenizer, enc, max_new_tokens, processors)
        correct: dict[int, set[str]] = defaultdict(set)
        for j, text in enumerate(texts):
            row = start + j // samples
            if _is_right(reward_fn, df, row, text):
                counts[row] += 1
                correct[row].add(text)
        if record is not None:
            # tokens up to and including the first end-of-sequence (the rest is padding after it)
            ended = (generated == tokenizer.eos_token_id).int().cumsum(dim=1)
            record.setdefault("tokens", []).extend((ended.eq(0).sum(dim=1) + ended[:, -1].clamp(max=1)).tolist())
            record.setdefault("distinct_correct", []).extend(
                len(correct[row]) for row in range(start, min(start + batch_prompts, len(prompts))))
    return counts


def greedy_right(model_dir: str, data_path: str, reward_fn: Callable[..., Any], max_new_tokens: int,
                 batch_prompts: int = 64) -> np.ndarray:
    """``(P,)`` whether the greedy response (no sampling) to each prompt of ``data_path`` is one ``reward_fn`` scores
    1, rendered as :func:`sample_correct_counts` renders them."""
    import pandas as pd

    model, tokenizer = load_policy(model_dir)
    df = pd.read_parquet(data_path)
    prompts = render_prompts(tokenizer, df["prompt"])
    right = np.zeros(len(prompts), dtype=bool)
    for start in range(0, len(prompts), batch_prompts):
        enc = tokenizer(prompts[start : start + batch_prompts], return_tensors="pt", padding=True,
                        add_special_tokens=False)
        _, texts = _continue(model, tokenizer, enc, max_new_tokens)
        right[start : start + len(texts)] = [_is_right(reward_fn, df, row, text)
                                             for row, text in enumerate(texts, start)]
    return right


def greedy_accuracy(model_dir: str, data_path: str, reward_fn: Callable[..., Any], max_new_tokens: int,
                    batch_prompts: int = 64) -> float:
    """Fraction of the prompts of ``data_path`` whose greedy response :func:`greedy_right` finds right: on the
    held-out prompts, the trainer's validation before the first step (a summary's ``held-out acc, start``), by which
    ``launch.verdicts`` and ``launch.replay`` tell one build of the task from another."""
    right = greedy_right(model_dir, data_path, reward_fn, max_new_tokens, batch_prompts)
    return float(right.mean()) if len(right) else float("nan")


def passk_curve(counts: np.ndarray, samples: int) -> dict[int, float]:
    """``{k: mean pass@k over problems}`` for k = 1, 2, 4, ... ``samples``."""
    n = np.full_like(counts, samples)
    return {k: float(pass_at_k(n, counts, k).mean()) for k in default_ks(samples)}


# ---------------------------------------------------------------------------------------------------- levels

#: how many responses to each RL prompt rate its difficulty for :func:`write_train_levels`, and the seed of their
#: draws and of the tie-break
LEVEL_SAMPLES = 16
LEVEL_SEED = 0


def split_by_solve_rate(counts: np.ndarray, parts: int, seed: int) -> list[np.ndarray]:
    """Row indices of ``(P,)`` correct counts split into ``parts`` near-equal parts by solve rate, the most solved
    part first; rows of one count are ordered at random (``seed``), so a tie at a boundary is cut by lot. Each part's
    rows are sorted. ``np.array_split`` sizes: the first ``P % parts`` parts have one row more."""
    order = np.random.default_rng(seed).permutation(len(counts))
    ranked = order[np.argsort(-np.asarray(counts)[order], kind="stable")]
    return [np.sort(part) for part in np.array_split(ranked, parts)]


def _level_figures(rate: np.ndarray) -> dict[str, Any]:
    """A level's prompts, mean solve rate, range and expected ACR at G = 8 (the mean of p^8 + (1 - p)^8 over its
    prompts' estimated rates ``rate``, as ``launch.task_properties`` gives it for the held-out prompts)."""
    return {"prompts": int(len(rate)), "solve_rate": float(rate.mean()), "min": float(rate.min()),
            "max": float(rate.max()), "expected_acr_g8": float(np.mean(rate**8 + (1 - rate) ** 8))}


def write_train_levels(paths: dict[str, str], reward_fn: Callable[..., Any], max_new_tokens: int,
                       say: Callable[[str], None] = lambda s: None, samples: int = LEVEL_SAMPLES,
                       seed: int = LEVEL_SEED) -> dict[str, Any]:
    """Split the RL prompts (``paths["train"]``) into thirds by the warm start's solve rate and write each third
    where ``cpu_run.train_file`` looks for it, with ``train_levels.json`` beside them; split the held-out prompts
    (``paths["test"]``) into thirds the same way, each third's rows recorded, so that a level's run is scored on its
    own third as well (:func:`score_own_levels`). Kept when that record matches (same samples, seed, prompt counts
    and model weights). Returns the record: per level (``levels``; ``heldout_levels``, with ``rows``) its prompts,
    mean solve rate, range and expected ACR at G = 8 (:func:`_level_figures`).

    The ACR paper splits MATH into difficulty levels by the solve rate of a selector model (000 Sec. 3.4.3,
    App. A.1), trains on each and scores each level's run "on the corresponding subset of MATH-500"; here the
    selector is the warm start itself, sampled at temperature 1.0 as the runs sample. A level's measured rates
    regress toward the mean when sampled again (they selected its prompts).
    """
    import pandas as pd

    from rlvr_recipes.launch.cpu_run import TRAIN_LEVELS, level_file

    wanted = _levels_key(paths, samples, seed)
    kept = _kept_levels(paths, wanted)
    if kept is not None:
        return kept
    levels = list(TRAIN_LEVELS.values())
    df = pd.read_parquet(paths["train"])
    say(f"[compare] rating the {len(df)} RL prompts' and {wanted['heldout_prompts']} held-out prompts' difficulty: "
        f"{samples} responses each from the warm start")
    t0 = time.monotonic()

    def thirds(data: str) -> tuple[np.ndarray, list[np.ndarray]]:
        counts = sample_correct_counts(paths["model"], paths[data], reward_fn, samples, max_new_tokens, seed=seed)
        return counts, split_by_solve_rate(counts, len(levels), seed)

    record: dict[str, Any] = {**wanted, "levels": {}, "heldout_levels": {}}
    counts, parts = thirds("train")
    for level, rows in zip(levels, parts):
        df.iloc[rows].to_parquet(level_file(paths["train"], level))
        record["levels"][level] = _level_figures(counts[rows] / samples)
    counts, parts = thirds("test")
    for level, rows in zip(levels, parts):
        record["heldout_levels"][level] = {**_level_figures(counts[rows] / samples), "rows": rows.tolist()}
    with open(_levels_record_path(paths), "w") as f:
        json.dump(record, f, indent=1)
    for name, kind in (("levels", "RL"), ("heldout_levels", "held-out")):
        say(f"[compare] {kind} levels: " + "; ".join(
            f"{lv} {v['prompts']} prompts, solve rate {v['solve_rate']:.3f} ({v['min']:.2f}-{v['max']:.2f}), "
            f"expected ACR at G = 8 {v['expected_acr_g8']:.3f}" for lv, v in record[name].items()))
    say(f"[compare] levels rated in {time.monotonic() - t0:.0f} s")
    return record


def _levels_record_path(paths: dict[str, str]) -> str:
    return os.path.join(os.path.dirname(paths["train"]), "train_levels.json")


def _levels_key(paths: dict[str, str], samples: int, seed: int) -> dict[str, Any]:
    """What a record of :func:`write_train_levels` was made from: samples, seed, prompt counts, the weights' hash."""
    import pandas as pd

    from rlvr_recipes.tiny_task.build import file_sha256

    return {"samples": samples, "seed": seed, "prompts": len(pd.read_parquet(paths["train"])),
            "heldout_prompts": len(pd.read_parquet(paths["test"])),
            "model_sha256": file_sha256(os.path.join(paths["model"], "model.safetensors"))}


def _kept_levels(paths: dict[str, str], wanted: dict[str, Any]) -> Optional[dict[str, Any]]:
    """The record beside ``paths["train"]`` where it and every level's file are there and it was made from ``wanted``
    (:func:`_levels_key`), else None."""
    from rlvr_recipes.launch.cpu_run import TRAIN_LEVELS, level_file

    path = _levels_record_path(paths)
    if not (os.path.exists(path) and all(os.path.exists(level_file(paths["train"], lv))
                                         for lv in TRAIN_LEVELS.values())):
        return None
    with open(path) as f:
        record = json.load(f)
    return record if {k: record.get(k) for k in wanted} == wanted else None


def read_train_levels(paths: dict[str, str], samples: int = LEVEL_SAMPLES,
                      seed: int = LEVEL_SEED) -> Optional[dict[str, Any]]:
    """The record :func:`write_train_levels` wrote beside ``paths["train"]``, or None where there is none, a level's
    file is missing, or it was made from other samples, seed, prompts or weights (:func:`_levels_key`)."""
    return _kept_levels(paths, _levels_key(paths, samples, seed))


def score_own_levels(runs: dict[str, list[dict[str, Any]]], record: Optional[dict[str, Any]]) -> None:
    """Give each run its ``heldout_level_accuracy``, ``{level: accuracy}``: on each third of the held-out prompts
    (``record["heldout_levels"][level]["rows"]``) the fraction whose final greedy response was right
    (``heldout_greedy_right``, :func:`train_and_score`); and each run of a level method (``cpu_run.TRAIN_LEVELS``) its
    ``own_level_accuracy``, the figure of its own level, as 000 Sec. 3.4.3 scores each level's run on its level of
    MATH-500. A run scored before the rights were kept, or a record without held-out levels, gets neither."""
    from rlvr_recipes.launch.cpu_run import TRAIN_LEVELS

    held = (record or {}).get("heldout_levels")
    if not held:
        return
    rows = {level: np.asarray(v["rows"], dtype=np.int64) for level, v in held.items()}
    for method, rs in runs.items():
        for r in rs:
            if r.get("heldout_greedy_right") is None:
                continue
            right = np.asarray(r["heldout_greedy_right"], dtype=float)
            r["heldout_level_accuracy"] = {level: float(right[idx].mean()) for level, idx in rows.items()}
            if method in TRAIN_LEVELS:
                r["own_level_accuracy"] = r["heldout_level_accuracy"][TRAIN_LEVELS[method]]


# ---------------------------------------------------------------------------------------------------- ACR vs G


def acr_by_group_size(rollout_dir: str, sizes: Sequence[int]) -> dict[int, float]:
    """Mean ACR over the steps of one run when each prompt's group is cut to ``g`` of its responses: at each step, the
    ACR over every ``g``-response subgroup of every group (each group's subgroups weigh as much as one group), that
    is, the expected ACR of a cut to ``g`` responses drawn at random.

    Every group of the run's dumps (``trainer.rollout_data_dir``) is subsampled, so the comparison across ``g`` is
    on the same prompts and policies (000 Sec. 3.4.6 varies G across runs instead). Taking all subgroups rather than
    the first ``g`` responses makes the figure a function of each group's answers alone: the dump lists a group's
    responses in the order they came back from the rollout, which timing decides, so one cut of the first ``g`` was a
    random draw that a replay of the run did not repeat (docs/lab.md, "A seed trained again from an empty folder").
    A group with fewer than ``g`` responses is left out at ``g``.
    """
    import glob
    from itertools import combinations

    import torch

    from rlvr_recipes.advantage.diagnostics import advantage_collapse_rate

    per_size: dict[int, list[float]] = defaultdict(list)
    for path in sorted(glob.glob(os.path.join(rollout_dir, "*.jsonl"))):
        groups: dict[str, list[float]] = defaultdict(list)
        _, prompts, scores = read_rollout_dump(path)
        for prompt, score in zip(prompts, scores):
            groups[prompt].append(score)
        by_length: dict[int, list[list[float]]] = defaultdict(list)
        for group in groups.values():
            by_length[len(group)].append(group)
        for g in sizes:
            rates, weights = [], []
            for n, same in by_length.items():
                if n < g:
                    continue
                subsets = torch.tensor(list(combinations(range(n), g)))  # (C(n, g), g)
                cut = torch.tensor(same, dtype=torch.float64)[:, subsets]  # (groups, C(n, g), g)
                index = np.repeat(np.arange(cut.shape[0] * cut.shape[1]), g)
                rates.append(advantage_collapse_rate(cut.reshape(-1), index))
                weights.append(len(same))
            if weights:
                per_size[g].append(float(np.average(rates, weights=weights)))
    return {g: float(np.mean(v)) for g, v in sorted(per_size.items()) if v}


#: how :func:`acr_by_group_size` cuts a group to ``g`` responses, as a run's ``done.json`` and a summary's ``setup``
#: record it (``acr_cut``); runs made before it record nothing: their cut was the first ``g`` responses to come back
ACR_CUT = "all subgroups"
ACR_CUT_BEFORE = "first g as they came back"
#: the group sizes a run's ACR is cut to (a size above the run's group is left out)
ACR_SIZES = (2, 4, 8, 16)
#: the claim on ACR at each cut, whose values are ``{"G=g": {method: {seed: ACR}}}``
ACR_VS_G = "ACR falls as the group size G grows"
#: the claim that early ACR predicts final accuracy, one name whatever the number of runs
EARLY_ACR = "early ACR (first 20 % of steps) predicts final held-out accuracy (negative correlation)"


# ---------------------------------------------------------------------------------------------------- runs


@dataclass
class RunSpec:
    method: str
    seed: int
    steps: int
    out: str

    @property
    def final_model(self) -> str:
        return os.path.join(self.out, "checkpoints", f"global_step_{self.steps}", "actor", "huggingface")

    @property
    def done_path(self) -> str:
        """The run's ``done.json``, written when it has finished: the mark of a run that a comparison keeps."""
        return os.path.join(self.out, "done.json")

    @property
    def finished(self) -> bool:
        return os.path.exists(self.done_path)


def run_specs(methods: Sequence[str], seeds: Sequence[int], steps: int, out: str) -> list[RunSpec]:
    """The comparison's runs, seed by seed with every method in each, so that a comparison stopped early has every
    method at the seeds it finished; run ``method`` x ``seed`` lives in ``<out>/runs/<method>/seed<seed>``."""
    return [RunSpec(m, s, steps, os.path.join(out, "runs", m, f"seed{s}")) for s in seeds for m in methods]


def check_kept_run(done_path: str, settings: dict[str, Any]) -> None:
    """Raise if the finished run recorded in ``done_path`` was run with other ``settings`` than this comparison's
    (steps, task, pass@k samples, overrides, method, seed); a missing file is a run still to do.

    Raises:
        ValueError: naming the file, the first setting that differs, and what to do.
    """
    if not os.path.exists(done_path):
        return
    with open(done_path) as f:
        kept = json.load(f).get("settings")
    if kept is None:
        raise ValueError(f"{done_path}: a finished run without its settings (written by an older version); "
                         "delete its folder or pick another --out")
    for key, value in settings.items():
        if kept.get(key) != value:
            raise ValueError(f"{done_path}: kept run has {key}={kept.get(key)!r}, this comparison {value!r}; "
                             "delete the run's folder or pick another --out")


def seed_overrides(seed: int) -> list[str]:
    return [f"data.seed={seed}", f"actor_rollout_ref.actor.data_loader_seed={seed}",
            f"actor_rollout_ref.rollout.seed={seed}"]


def collect(spec: RunSpec, extra_curves: Sequence[str] = ()) -> dict[str, Any]:
    """Per-step metrics of one finished run: ``{key: {step: value}}`` for the curves (those of :data:`CURVES` and
    :data:`OWN_FIGURES`, and any metric keys in ``extra_curves``), and its step time."""
    steps = read_metrics(os.path.join(spec.out, "metrics.jsonl"))
    keys = [key for _, key in CURVES] + list(OWN_FIGURES.values()) + list(extra_curves)
    out = {key: series(steps, key) for key in keys}
    step_times = [d["timing_s/step"] for d in steps.values() if "timing_s/step" in d]
    return {"curves": out, "s_per_step": statistics.median(step_times) if step_times else float("nan")}


def load_run(spec: RunSpec, extra_curves: Sequence[str] = ()) -> dict[str, Any]:
    """One finished run as the report reads it: its curves and step time (:func:`collect`, with ``extra_curves``
    too) and what its ``done.json`` recorded (seconds, pass@k at the end, ACR by group size, whether its draws were
    keyed). A run kept from before :data:`ACR_CUT` has its ACR by group size cut again from its rollout dumps where
    they are there."""
    with open(spec.done_path) as f:
        done = json.load(f)
    acr_g, cut = {int(k): v for k, v in done["acr_by_group_size"].items()}, done.get("acr_cut", ACR_CUT_BEFORE)
    rollouts = os.path.join(spec.out, "rollouts")
    if cut != ACR_CUT and os.path.isdir(rollouts):  # a run kept from before: cut again from its dumps
        acr_g, cut = acr_by_group_size(rollouts, ACR_SIZES), ACR_CUT
    return {**collect(spec, extra_curves), "seconds": done["seconds"], "seed": spec.seed,
            "keyed_draws": bool(done.get("keyed_draws")), "acr_cut": cut,
            "passk_end": {int(k): v for k, v in done["passk_end"].items()}, "acr_by_group_size": acr_g,
            "heldout_greedy_right": done.get("heldout_greedy_right")}


def _one_acr_cut(runs: dict[str, list[dict[str, Any]]]) -> str:
    """The ``acr_cut`` of every run, or ``"mixed"`` where kept runs of an earlier cut sit beside new ones."""
    cuts = {r.get("acr_cut", ACR_CUT_BEFORE) for rs in runs.values() for r in rs}
    return cuts.pop() if len(cuts) == 1 else "mixed"


def finished_runs(out: str) -> dict[str, list[RunSpec]]:
    """``{method: [RunSpec, ...]}`` of the runs of comparison ``out`` that finished (their ``done.json``), found from
    its folders, whatever command made them."""
    runs: dict[str, list[RunSpec]] = {}
    root = os.path.join(out, "runs")
    for method in sorted(os.listdir(root)):
        for name in sorted(os.listdir(os.path.join(root, method))):
            done = os.path.join(root, method, name, "done.json")
            if not (name.startswith("seed") and os.path.exists(done)):
                continue
            with open(done) as f:
                steps = json.load(f)["settings"]["steps"]
            runs.setdefault(method, []).append(RunSpec(method, int(name[4:]), steps, os.path.join(root, method, name)))
    return runs


@dataclass(frozen=True)
class RunPlan:
    """What every run of one comparison shares: the task's files (``paths``), the run length, the overrides given to
    every run, verl's registered estimators, the settings a kept run must match (:func:`check_kept_run`), where
    verl's file logger writes, the reward that scores pass@k (module path and name, loaded where the run is scored,
    by the loader of the start's scoring, :func:`~rlvr_recipes.reward.reference.settings_reward`) and the pass@k
    sampling (samples per prompt, response length)."""
    paths: dict[str, str]
    steps: int
    extra: tuple[str, ...]
    estimators: tuple[str, ...]
    settings: dict[str, Any]
    metrics_root: str
    reward_path: Optional[str]
    reward_name: str
    passk_samples: int
    max_new: int


def train_and_score(spec: RunSpec, plan: RunPlan) -> dict[str, Any]:
    """Train run ``spec`` (:func:`rlvr_recipes.launch.cpu_run.cluster_run`, in this process's Ray cluster), move its
    metrics into its folder, score pass@k of its final weights and ACR by group size, and write its ``done.json``,
    the mark of a finished run. A folder the run left without ``done.json`` (a comparison interrupted while it trained
    or scored) is removed first: verl would resume from the checkpoint saved at the run's last step, and the metrics of
    that resumed tail would replace the run's. Returns what ``done.json`` holds.

    Raises:
        RuntimeError: naming the method and seed of a run that failed.
    """
    from rlvr_recipes.launch.cpu_run import cluster_run
    from rlvr_recipes.reward.reference import settings_reward

    experiment = f"{spec.method}-seed{spec.seed}"
    overrides = [*plan.extra, *seed_overrides(spec.seed), f"trainer.save_freq={spec.steps}",
                 "actor_rollout_ref.actor.checkpoint.save_contents=[model,optimizer,extra,hf_model]"]
    shutil.rmtree(spec.out, ignore_errors=True)
    t0 = time.monotonic()
    try:
        config = cluster_run(spec.method, spec.out, plan.paths, plan.steps, overrides, plan.estimators, experiment)
    except Exception as exc:
        raise RuntimeError(f"{spec.method} seed {spec.seed} failed: {type(exc).__name__}: {exc}") from exc
    outcome: dict[str, Any] = {"code": 0, "seconds": round(time.monotonic() - t0, 1),
                               "settings": {**plan.settings, "method": spec.method, "seed": spec.seed},
                               # rollouts and pass@k scoring drew from keyed streams (cpu_backend/sampling.py)
                               "keyed_draws": True, "acr_cut": ACR_CUT}
    os.replace(os.path.join(plan.metrics_root, str(config.trainer.project_name), f"{experiment}.jsonl"),
               os.path.join(spec.out, "metrics.jsonl"))
    reward_fn = settings_reward({"reward_path": plan.reward_path, "reward_name": plan.reward_name})
    counts = sample_correct_counts(spec.final_model, plan.paths["test"], reward_fn, plan.passk_samples, plan.max_new,
                                   seed=spec.seed)
    outcome["passk_end"] = passk_curve(counts, plan.passk_samples)
    # per held-out prompt, so that a run can be scored on a part of them (score_own_levels)
    outcome["heldout_correct_counts"] = counts.tolist()
    outcome["heldout_greedy_right"] = greedy_right(spec.final_model, plan.paths["test"], reward_fn,
                                                   plan.max_new).astype(int).tolist()
    outcome["acr_by_group_size"] = acr_by_group_size(os.path.join(spec.out, "rollouts"), ACR_SIZES)
    with open(spec.done_path, "w") as f:
        json.dump(outcome, f, indent=1)
    return outcome


def _done_line(label: str, outcome: dict[str, Any], passk_samples: int, t_all: float) -> str:
    """The progress line of a finished run: its time, pass@1 and pass@k at the largest k, the comparison's clock."""
    return (f"{label}: done in {outcome['seconds']:.0f} s, pass@1 {outcome['passk_end'][1]:.3f} "
            f"pass@{passk_samples} {outcome['passk_end'][passk_samples]:.3f} [{time.monotonic() - t_all:.0f} s]")


class TerminatedRayDriver(KeyboardInterrupt):
    """SIGTERM stopped a comparison whose runs this process drove in its own Ray cluster (one run at a time), and
    Ray is shut down. Once Ray's C++ handler has taken a SIGTERM (it prints "SIGTERM received"), the process aborts
    at interpreter exit (SIGABRT, exit code 134) even after ``ray.shutdown()``; :func:`main` ends it with
    ``os._exit`` instead, its output flushed, with the interrupt's exit code."""


def _shutdown_ray(ignore: Sequence[int] = (signal.SIGINT,)) -> None:
    """Shut this process's Ray cluster down, the signals in ``ignore`` ignored from here on: the process is ending,
    and a further Ctrl-C (a terminal sends it to every process of the group) or SIGTERM would break off the shutdown
    with a traceback. A lane's finalizer (:func:`_lane_start`) ignores Ctrl-C; the command itself, when it is Ray's
    driver (one run at a time), SIGTERM too (:func:`compare`)."""
    import ray

    if threading.current_thread() is threading.main_thread():
        for signum in ignore:
            signal.signal(signum, signal.SIG_IGN)
    if ray.is_initialized():
        ray.shutdown()


def lane_torch_threads(jobs: int, threads: int) -> int:
    """torch's threads in each of ``jobs`` lanes when one process alone would use ``threads`` (torch's default, the
    physical cores): their share, at least 1. A lane scores pass@k in its own process, and lanes tend to score at the
    same time: on 2 cores two scorers with 2 threads each took 82-132 s each, with 1 thread each 38-43 s, one alone
    with 2 threads 23.5-25.6 s (``benchmarks/bench_lane_scoring.py``; docs/lab.md, "pass@k scoring in lanes")."""
    return max(1, threads // max(1, jobs))


def _lane_start(metrics_root: str, jobs: int) -> None:
    """A lane's process, before its first run (:func:`run_in_lanes`): the CPU environment and the metrics root
    (:func:`rlvr_recipes.launch.cpu_run.start_cluster_runs`), torch's threads for its pass@k scoring
    (:func:`lane_torch_threads`), and its Ray cluster shut down when the lane ends (a process of ``multiprocessing``
    runs its finalizers at exit, not ``atexit``, where Ray's own shutdown is)."""
    import multiprocessing.util

    import torch

    from rlvr_recipes.launch.cpu_run import start_cluster_runs

    start_cluster_runs(metrics_root)
    torch.set_num_threads(lane_torch_threads(jobs, torch.get_num_threads()))
    multiprocessing.util.Finalize(None, _shutdown_ray, exitpriority=10)


def _lane_run(spec: RunSpec, plan: RunPlan, label: str, t_all: float) -> dict[str, Any]:
    """One run in a lane's process (:func:`run_in_lanes`): its label printed when it starts, then
    :func:`train_and_score`. ``t_all`` is the comparison's start on the system's monotonic clock, which every process
    of the machine shares."""
    import multiprocessing

    lane = multiprocessing.current_process().name.rsplit("-", 1)[-1]
    print(f"{label}: training {spec.steps} steps, lane {lane} [{time.monotonic() - t_all:.0f} s]", flush=True)
    return train_and_score(spec, plan)


#: Seconds the lanes get to end their runs after this process is interrupted, before each lane still running is sent
#: SIGTERM (:func:`_stop_lanes`). Ctrl-C in a terminal reaches every process of the group, the lanes included (they
#: ended within 5.3 s); a signal to this process alone (``kill``, ``timeout``) reaches none of them.
LANE_STOP_GRACE_S = 15.0


def _interrupted_by_signal(signum: int, frame: Any) -> None:
    """SIGTERM handler of the process that runs the lanes: stop as on Ctrl-C (ray.init's handler, which turns it into
    ``SystemExit`` in a process that runs Ray, is not installed here: this process does not start Ray)."""
    raise KeyboardInterrupt(f"signal {signum}")


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises ``KeyboardInterrupt`` (:func:`_interrupted_by_signal`); the handler before
    is restored after it. Off the main thread, where no handler can be set, nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _interrupted_by_signal)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _stop_lanes(pool: Any, running: Sequence[Any]) -> None:
    """After this process was interrupted (:func:`run_in_lanes`): wait up to :data:`LANE_STOP_GRACE_S` for the runs
    under way, then send SIGTERM to the lanes if any still runs, so that no lane trains on, with its Ray cluster,
    after this process is gone. A second interrupt (Ctrl-C or SIGTERM) ends the wait at once, and the lanes still
    running are sent SIGTERM then. In a lane, ray.init's handler turns SIGTERM into ``SystemExit``: the run stops and
    the lane's Ray shuts down when the pool ends the lane."""
    from concurrent.futures import wait

    try:
        _, still_running = wait(running, timeout=LANE_STOP_GRACE_S)
    except KeyboardInterrupt:  # a second Ctrl-C or SIGTERM: stop the lanes now
        still_running = [fut for fut in running if not fut.done()]
    if still_running:
        # the executor's lane processes: it has no public accessor for them before Python 3.14 (terminate_workers)
        for proc in list(getattr(pool, "_processes", {}).values()):
            if proc.is_alive():
                proc.terminate()


def run_in_lanes(todo: Sequence[tuple[str, RunSpec]], plan: RunPlan, jobs: int, say: Callable[[str], None],
                 t_all: float) -> None:
    """Train the ``(label, spec)`` runs of ``todo`` in ``jobs`` processes at once, each with a Ray cluster of its own
    (one run alone kept 2 cores 70 % busy, so a second run uses what the first leaves idle; docs/lab.md, "Lanes"). A
    lane takes the next run in ``todo`` when its run ends. After a failed run no new run starts; the runs under way
    finish (and are kept), then the failure is raised. With keyed draws a run's answers do not depend on what else
    the machine runs, so a lane gives the run it would give alone. Interrupted (Ctrl-C, or SIGTERM to this process),
    it stops the lanes (:func:`_stop_lanes`) and raises ``KeyboardInterrupt`` once they have ended.

    Raises:
        RuntimeError: the first failed run's error.
    """
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

    queue = list(todo)
    running: dict[Future, str] = {}
    failure: Optional[BaseException] = None
    # spawn, not fork: a lane starts Ray and torch's threads of its own. A run is handed to the pool only when a lane
    # is free, so after a failure nothing queued can start.
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_lane_start, initargs=(plan.metrics_root, jobs))
    with _sigterm_as_interrupt(), pool:
        try:
            while queue or running:
                while queue and failure is None and len(running) < jobs:
                    label, spec = queue.pop(0)
                    running[pool.submit(_lane_run, spec, plan, label, t_all)] = label
                if not running:
                    break
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for fut in done:
                    label = running.pop(fut)
                    if fut.exception() is not None:
                        failure = failure or fut.exception()
                        say(f"{label}: failed; no new run starts, the runs under way finish")
                        continue
                    say(_done_line(label, fut.result(), plan.passk_samples, t_all))
        except KeyboardInterrupt:
            _stop_lanes(pool, list(running))
            raise
    if failure is not None:
        raise failure if isinstance(failure, RuntimeError) else RuntimeError(f"{type(failure).__name__}: {failure}")


def compare(methods: Sequence[str], seeds: int, steps: int, out: str, extra: Sequence[str] = (),
            passk_samples: int = 64, tiny_dir: Optional[str] = None, task: str = "addition",
            say: Callable[[str], None] = lambda s: print(s, flush=True), report_only: bool = False,
            first_seed: int = 0, jobs: int = 1) -> dict[str, Any]:
    """Run (or resume) every method x seed (``first_seed`` .. ``first_seed + seeds - 1``) on ``task`` in one Ray
    cluster, score pass@k, and write the report. A ``first_seed`` above 0 gives a replication on seeds that an
    earlier comparison did not use (docs/lab.md, "A replication on new seeds"). With ``jobs`` above 1 the runs are
    trained ``jobs`` at a time, each lane a process with a Ray cluster of its own (:func:`run_in_lanes`). With
    ``report_only`` nothing is trained: the report is written from the runs finished so far (a comparison still
    running, or one stopped early), and names the runs it lacks. Returns the summary.

    Raises:
        ValueError: a kept run was made with other settings, or (``report_only``) no run has finished.
    """
    from rlvr_recipes.launch.cpu_run import (TRAIN_LEVELS, compose, embedded_task, ensure_tiny, registered,
                                             run_overrides, start_cluster_runs)
    from rlvr_recipes.reward.reference import reference_settings, settings_reward

    out = os.path.abspath(out)
    extra = [*embedded_task(task).overrides, *extra]
    paths = ensure_tiny(tiny_dir, task)
    estimators, _ = registered()
    # the held-out samples are scored by the runs' reward and cut at the runs' response length
    settings = reference_settings(compose(run_overrides("grpo", paths, out, steps, extra=extra, estimators=estimators)))
    reward_fn = settings_reward(settings)
    max_new = settings["max_response_length"]
    seed_list = range(first_seed, first_seed + seeds)
    levels = None
    if any(m in TRAIN_LEVELS for m in methods):
        levels = read_train_levels(paths) if report_only else write_train_levels(paths, reward_fn, max_new, say)
    specs = run_specs(methods, seed_list, steps, out)
    # what a kept run must have been run with: a resume with other settings would mix them in one report
    run_settings = {"task": task, "steps": steps, "passk_samples": passk_samples, "overrides": list(extra)}
    for spec in specs:
        check_kept_run(spec.done_path, {**run_settings, "method": spec.method, "seed": spec.seed})
    t_all = time.monotonic()

    start_passk: dict[int, dict[int, float]] = {}
    for s in seed_list:
        path = os.path.join(out, "passk_start", f"seed{s}-samples{passk_samples}.json")
        if not os.path.exists(path):
            counts = sample_correct_counts(paths["model"], paths["test"], reward_fn, passk_samples, max_new, seed=s)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                json.dump(passk_curve(counts, passk_samples), f)
        with open(path) as f:
            start_passk[s] = {int(k): v for k, v in json.load(f).items()}

    metrics_root = os.path.join(out, "metrics")
    plan = RunPlan(paths=paths, steps=steps, extra=tuple(extra), estimators=tuple(estimators), settings=run_settings,
                   metrics_root=metrics_root, reward_path=settings["reward_path"],
                   reward_name=settings["reward_name"], passk_samples=passk_samples, max_new=max_new)
    missing = [spec for spec in specs if not spec.finished]
    if report_only:
        if len(missing) == len(specs):
            raise ValueError(f"{out}: no finished run to report on; run the comparison without --report-only")
        specs = [spec for spec in specs if spec not in missing]
    todo: list[tuple[str, RunSpec]] = []
    for i, spec in enumerate([] if report_only else specs, 1):
        label = f"[compare] run {i}/{len(specs)}: {spec.method} seed {spec.seed}"
        if spec in missing:
            todo.append((label, spec))
        else:
            say(f"{label}: finished earlier, kept")
    t_train = time.monotonic()
    in_lanes = jobs > 1 and len(todo) > 1
    try:
        if in_lanes:
            run_in_lanes(todo, plan, jobs, say, t_all)
        else:
            start_cluster_runs(metrics_root)  # one Ray cluster for every run below, started by the first
            for label, spec in todo:
                say(f"{label}: training {steps} steps [{time.monotonic() - t_all:.0f} s]")
                say(_done_line(label, train_and_score(spec, plan), passk_samples, t_all))
    except (KeyboardInterrupt, SystemExit) as exc:  # Ctrl-C; SIGTERM, which ray.init's handler turns into SystemExit
        kept = sum(spec.finished for spec in specs)
        if todo:  # what --report-only names as the command that trained the finished runs
            write_training_record(out, training_record(jobs, todo, time.monotonic() - t_train, interrupted=True))
        say(f"[compare] interrupted after {time.monotonic() - t_all:.0f} s: {kept} of {len(specs)} runs finished "
            f"and are kept in {out}; the same command resumes with the others")
        if not in_lanes:
            _shutdown_ray((signal.SIGINT, signal.SIGTERM))  # this process is Ray's driver
        if isinstance(exc, SystemExit):
            # its code cannot tell a SIGTERM from a run's own exit: after SIGTERM this process saw SystemExit(1)
            interrupt = KeyboardInterrupt if in_lanes else TerminatedRayDriver
            raise interrupt(f"SystemExit({exc.code})") from None
        raise

    runs = defaultdict(list)
    for spec in specs:
        runs[spec.method].append(load_run(spec))
    score_own_levels(runs, levels)
    summary = summarise(runs, start_passk)
    record = training_record(jobs, todo, 0.0 if report_only else time.monotonic() - t_train)
    run_s = [r["seconds"] for rs in runs.values() for r in rs]
    step_s = [r["s_per_step"] for rs in runs.values() for r in rs if math.isfinite(r["s_per_step"])]
    summary["setup"] = {"task": task, "methods": list(methods), "seeds": seeds, "first_seed": first_seed,
                        "steps": steps, "passk_samples": passk_samples,
                        # what a step costs with each run's start-up in it, against the median step of the runs
                        "cost_per_step_s": round(statistics.median(run_s) / steps, 2) if run_s else None,
                        "median_step_s": round(statistics.median(step_s), 2) if step_s else None,
                        "overrides": list(extra), "machine": f"{platform.machine()}, {os.cpu_count()} cores",
                        "command": this_command(),
                        "runs_s": round(sum(r["seconds"] for rs in runs.values() for r in rs), 1),
                        "missing_runs": [f"{spec.method} seed {spec.seed}" for spec in missing] if report_only else [],
                        # how ACR at a smaller group size was cut (acr_by_group_size), where every run says the same
                        "acr_cut": _one_acr_cut(runs),
                        # this command's training: how many runs, in how many lanes, in how much wall time
                        **record}
    if levels:  # the difficulty levels' figures (write_train_levels), without the held-out rows
        summary["setup"]["levels"] = {name: {lv: {k: v for k, v in figs.items() if k != "rows"}
                                             for lv, figs in levels.get(name, {}).items()}
                                      for name in ("levels", "heldout_levels")}
    if todo:
        write_training_record(out, record)
    if report_only:
        summary["setup"] = keep_training_record(summary["setup"], out)
    write_report(out, runs, start_passk, summary)
    say(f"[compare] report {os.path.join(out, 'report.md')} [{time.monotonic() - t_all:.0f} s]")
    return summary


#: The keys of a summary's ``setup`` that record how its runs were trained; ``--report-only`` trains nothing.
TRAINING_RECORD = ("command", "jobs", "trained_runs", "trained_wall_s", "interrupted")
#: The training record of the last command that trained runs under ``out``, written when it ends, whether it finished
#: or was interrupted (then it writes no summary): what ``--report-only`` names as the command behind its runs.
TRAINING_FILE = "training.json"


#: the arguments :func:`main` was given, while it runs: another module that calls it (``launch.replay --train``) runs
#: a command line of its own, which is not this comparison's
_MAIN_ARGV: Optional[list[str]] = None


def this_command() -> str:
    """The command line of this comparison, as a user would type it again."""
    argv = sys.argv[1:] if _MAIN_ARGV is None else _MAIN_ARGV
    return shlex.join(["python", "-m", "rlvr_recipes.launch.compare", *argv])


def training_record(jobs: int, todo: Sequence[tuple[str, RunSpec]], wall_s: float,
                    interrupted: bool = False) -> dict[str, Any]:
    """This command's training (:data:`TRAINING_RECORD`): the runs of ``todo`` that finished (all of them, unless
    ``interrupted``), trained ``jobs`` at a time in ``wall_s`` seconds of wall time."""
    finished = sum(spec.finished for _, spec in todo) if interrupted else len(todo)
    return {"command": this_command(), "jobs": jobs, "trained_runs": finished, "trained_wall_s": round(wall_s, 1),
            "interrupted": interrupted}


def write_training_record(out: str, record: dict[str, Any]) -> None:
    """``record`` as ``out``/:data:`TRAINING_FILE`, replacing the record of an earlier command that trained runs."""
    with open(os.path.join(out, TRAINING_FILE), "w") as f:
        json.dump(record, f, indent=1)


def keep_training_record(setup: dict[str, Any], out: str) -> dict[str, Any]:
    """``setup`` of a ``--report-only`` report, with the training record (:data:`TRAINING_RECORD`: the command that
    trained the runs, its lanes, runs and wall time, and whether it was interrupted) of the last command that trained
    runs under ``out``, so that the report goes on naming the command that reproduces its runs; the report-only
    command is kept as ``report_command``. The record is read from :data:`TRAINING_FILE`, which the training command
    writes when it finishes or is interrupted, else (a comparison made before that file) from the ``setup`` of the
    summary written before. Without either holding a record, ``setup`` is returned as it is."""
    for path, key in ((os.path.join(out, TRAINING_FILE), None), (os.path.join(out, "summary.json"), "setup")):
        try:
            with open(path) as f:
                before = json.load(f)
            before = before.get(key) if key else before
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(before, dict) and "command" in before and "--report-only" not in before["command"].split():
            return {**setup, **{k: before[k] for k in TRAINING_RECORD if k in before},
                    "report_command": setup["command"]}
    return setup


# ---------------------------------------------------------------------------------------------------- figures


def _tail_mean(curve: dict[int, float], frac: float = 0.2) -> float:
    """Mean over the last ``frac`` of the logged steps (at least one)."""
    if not curve:
        return float("nan")
    steps = sorted(curve)
    tail = steps[-max(1, round(len(steps) * frac)) :]
    return float(np.mean([curve[s] for s in tail]))


def _head_mean(curve: dict[int, float], frac: float = 0.2) -> float:
    if not curve:
        return float("nan")
    steps = sorted(curve)
    return float(np.mean([curve[s] for s in steps[: max(1, round(len(steps) * frac))]]))


def _mean_std(values: Sequence[float]) -> tuple[float, float]:
    vals = [v for v in values if math.isfinite(v)]
    if not vals:
        return float("nan"), float("nan")
    return float(np.mean(vals)), float(np.std(vals, ddof=1)) if len(vals) > 1 else 0.0


def final_figures(run: dict[str, Any], start_passk: dict[int, dict[int, float]], kmax: int) -> dict[str, float]:
    """One run's figures of the summary's table, by name (NaN where its curve is empty): reward and entropy over the
    last 20 % of steps, held-out greedy accuracy at the first and last validation, mean ACR and effective ACR, the
    entropy's std over steps, pass@1 and pass@``kmax`` at the end, pass@1's change from its own seed's start sample,
    seconds a step."""
    curves = run["curves"]
    val = curves["val"]
    mean_of = lambda key: float(np.mean(list(curves[key].values()))) if curves[key] else float("nan")  # noqa: E731
    return {
        "reward (last 20%)": _tail_mean(curves["critic/score/mean"]),
        "held-out acc, start": val[min(val)] if val else float("nan"),
        "held-out acc, end": val[max(val)] if val else float("nan"),
        "ACR (mean)": mean_of("acr/acr"),
        "effective ACR (mean)": mean_of("acr/effective_acr"),
        "entropy (last 20%)": _tail_mean(curves["actor/entropy"]),
        "entropy std over steps": float(np.std(list(curves["actor/entropy"].values())))
        if curves["actor/entropy"] else float("nan"),
        "pass@1 end": run["passk_end"][1],
        "pass@1 change": passk_change([run], start_passk, 1)[0],
        f"pass@{kmax} end": run["passk_end"][kmax],
        "s/step": run["s_per_step"],
    }


def summarise(runs: dict[str, list[dict[str, Any]]], start_passk: dict[int, dict[int, float]]) -> dict[str, Any]:
    """Per method: mean and std over seeds of the final figures (:func:`final_figures`), and each run's figures by
    seed (``figures_by_seed``: ``{method: {figure: {seed: value}}}``, finite values only), so that any two methods
    can be compared seed by seed on any figure from the summary alone; the claims' verdicts; where runs were scored on
    each third of the held-out prompts (:func:`score_own_levels`), ``heldout_level_accuracy``: ``{method: {level:
    {seed: accuracy}}}``."""
    table: dict[str, dict[str, tuple[float, float]]] = {}
    by_seed: dict[str, dict[str, dict[str, float]]] = {}
    for method, rs in runs.items():
        figures = [final_figures(r, start_passk, max(rs[0]["passk_end"])) for r in rs]
        table[method] = {name: _mean_std([f[name] for f in figures]) for name in figures[0]}
        by_seed[method] = {name: {str(r["seed"]): float(f[name]) for r, f in zip(rs, figures)
                                  if math.isfinite(f[name])} for name in figures[0]}
    kmax = max(next(iter(start_passk.values())))
    start = {k: _mean_std([p[k] for p in start_passk.values()]) for k in (1, kmax)}
    out = {"table": table, "figures_by_seed": by_seed, "start_passk": {str(k): v for k, v in start.items()},
           "change_from_start": {m: {f"pass@{k}": paired_change(passk_change(rs, start_passk, k)) for k in (1, kmax)}
                                 for m, rs in runs.items()},
           "claims": claims(runs, table, kmax), "paired_by_seed": paired_by_seed(runs)}
    by_level: dict[str, dict[str, dict[str, float]]] = {}
    for method, rs in runs.items():
        for r in rs:
            for level, acc in (r.get("heldout_level_accuracy") or {}).items():
                by_level.setdefault(method, {}).setdefault(level, {})[str(r["seed"])] = acc
    if by_level:
        out["heldout_level_accuracy"] = by_level
    return out


def paired_by_seed(runs: dict[str, list[dict[str, Any]]]) -> bool:
    """Whether every run drew from keyed streams, so that runs of one seed share their draws and two methods are
    compared seed by seed (:func:`diff_verdict`). Runs made before the keyed draws (no ``keyed_draws`` in their
    ``done.json``) were drawn from one stream per batch, and are independent samples."""
    return bool(runs) and all(r.get("keyed_draws") for rs in runs.values() for r in rs)


def passk_change(rs: list[dict[str, Any]], start_passk: dict[int, dict[int, float]], k: int = 1) -> list[float]:
    """Held-out pass@k at the end minus at the start, per run (seed), each against its own seed's start sample."""
    return [r["passk_end"][k] - start_passk[r["seed"]][k] for r in rs]


def paired_change(diffs: Sequence[float], level: float = 0.95) -> dict[str, Any]:
    """Mean of per-seed changes (a run's end minus its own seed's start) with its two-sided ``level`` interval and
    p-value by the one-sample t-test of mean 0 (the paired t-test of end against start), ``df`` = n - 1
    (:func:`_t_interval`).

    Returns ``{"by_seed", "mean", "se", "low", "high", "p"}`` (``se``: the mean's standard error, sd with ddof 1 over
    sqrt(n)); with one seed ``se``, the interval and p are NaN (no noise estimate); with all changes equal the interval
    is the point and p is 1 for 0, else 0.
    """
    d = [float(x) for x in diffs if math.isfinite(x)]
    mean = float(np.mean(d)) if d else float("nan")
    if len(d) < 2:
        return {"by_seed": d, "mean": mean, "se": float("nan"), "low": float("nan"), "high": float("nan"),
                "p": float("nan")}
    se = float(np.std(d, ddof=1)) / math.sqrt(len(d))
    return {"by_seed": d, "mean": mean, "se": se, **_t_interval(mean, se, len(d) - 1, level)}


def _t_interval(d: float, se: float, df: float, level: float) -> dict[str, float]:
    """The two-sided ``level`` interval ``[low, high]`` = d -/+ t_{(1+level)/2, df} * se of an estimate ``d`` with
    standard error ``se`` on ``df`` degrees of freedom, and the two-sided p-value of d = 0. With ``se`` 0 the interval
    is the point ``d`` and p is 1 for d = 0, else 0."""
    from scipy import stats

    if se == 0.0:
        return {"low": d, "high": d, "p": 1.0 if d == 0 else 0.0}
    half = float(stats.t.ppf((1 + level) / 2, df)) * se
    return {"low": d - half, "high": d + half, "p": float(2 * stats.t.sf(abs(d) / se, df))}


def welch_test(a: Sequence[float], b: Sequence[float], level: float = 0.95) -> dict[str, float]:
    """Welch's two-sample t-test of mean(a) - mean(b) with seeds as samples (unequal variances).

    Returns the difference ``d``, its standard error ``se`` = sqrt(var_a/n_a + var_b/n_b) (variances with ddof 1), the
    Welch-Satterthwaite degrees of freedom ``df``, the two-sided ``level`` interval ``[low, high]`` = d -/+
    t_{(1+level)/2, df} * se, and the two-sided p-value. With both variances 0, ``se`` is 0, ``df`` is inf and the
    interval is the point ``d``. Needs two or more values on each side.
    """
    na, nb = len(a), len(b)
    d = float(np.mean(a) - np.mean(b))
    va, vb = float(np.var(a, ddof=1)) / na, float(np.var(b, ddof=1)) / nb
    se = math.sqrt(va + vb)
    df = math.inf if se == 0.0 else (va + vb) ** 2 / (va**2 / (na - 1) + vb**2 / (nb - 1))
    return {"d": d, "se": se, "df": df, **_t_interval(d, se, df, level)}


def diff_verdict(a: Sequence[float], b: Sequence[float], higher: bool, paired: bool = False) -> tuple[str, str]:
    """Whether mean(a) beats mean(b) in the claimed direction: ``held`` when the whole 95 % interval of the difference
    lies on the claimed side of 0, ``did not hold`` when it lies on the other side, otherwise (or with a single seed)
    ``cannot be judged``.

    The interval is Welch's (:func:`welch_test`, seeds as independent samples), or with ``paired`` the paired t-test's
    (:func:`paired_change` of ``a[i] - b[i]``; ``a`` and ``b`` aligned by seed): runs of one seed that share their
    random draws (keyed rollouts and scoring, :mod:`rlvr_recipes.cpu_backend.sampling`) are pairs, not independent
    samples, and the difference within a seed is what their noise leaves of the methods' difference."""
    if paired:
        if len(a) != len(b):
            raise ValueError(f"a paired test needs one value per seed on each side, got {len(a)} and {len(b)}")
        kept = [(x, y) for x, y in zip(a, b) if math.isfinite(x) and math.isfinite(y)]
        a, b = [x for x, _ in kept], [y for _, y in kept]
    a = [x for x in a if math.isfinite(x)]
    b = [x for x in b if math.isfinite(x)]
    if not a or not b:
        return "cannot be judged", "not logged"
    detail = f"{np.mean(a):.3f} vs {np.mean(b):.3f}"
    if len(a) < 2 or len(b) < 2:
        return "cannot be judged", detail + " (one seed: no noise estimate)"
    if paired:
        c = paired_change([x - y for x, y in zip(a, b)])
        d, low, high = c["mean"], c["low"], c["high"]
        test = f"paired t-test by seed, df {len(a) - 1}, p = {c['p']:.3g}, {len(a)} seeds with shared draws"
    else:
        t = welch_test(a, b)
        d, low, high = t["d"], t["low"], t["high"]
        df = "inf" if math.isinf(t["df"]) else f"{t['df']:.1f}"
        test = f"Welch t-test, df {df}, p = {t['p']:.3g}, {len(a)} and {len(b)} seeds"
    detail += f": difference {d:+.3f}, 95 % interval [{low:+.3f}, {high:+.3f}] ({test})"
    low, high = (low, high) if higher else (-high, -low)
    if low > 0:
        return "held", detail
    if high < 0:
        return "did not hold", detail
    return "cannot be judged", detail + ": the interval holds 0"


def paired_claim(claim: str, source: str, method: str, mine: dict[str, float], base: str, theirs: dict[str, float],
                 higher: bool) -> dict[str, Any]:
    """``claim``, that ``method``'s figure lies above ``base``'s (``higher``) or below it, tested seed by seed on the
    seeds both have (``mine`` and ``theirs``: each one's figure by seed, seeds as strings) by :func:`diff_verdict`'s
    paired t-test: ``{"claim", "source", "verdict", "evidence", "values", "higher"}``, where ``values`` keeps each
    side's figures on those seeds and their ``"difference by seed"``, and ``higher`` the claimed side, which a claim
    that cannot be judged does not tell and ``launch.verdicts`` pools on."""
    seeds = sorted(set(mine) & set(theirs), key=int)
    verdict, evidence = diff_verdict([mine[s] for s in seeds], [theirs[s] for s in seeds], higher, paired=True)
    return {"claim": claim, "source": source, "verdict": verdict, "evidence": evidence,
            "values": {method: {s: mine[s] for s in seeds}, base: {s: theirs[s] for s in seeds},
                       "difference by seed": {s: mine[s] - theirs[s] for s in seeds}}, "higher": higher}


def early_acr_claim(values: dict[str, dict[str, dict[str, float]]]) -> dict[str, Any]:
    """000 Sec. 3.4.2, Fig. 1: early ACR predicts final held-out accuracy, a negative correlation across runs.

    ``values``: ``{"early ACR": {method: {seed: value}}, "final held-out accuracy": {method: {seed: value}}}``, each
    run's mean ACR over its first 20 % of steps and its last held-out greedy accuracy. Pearson's r over the runs with
    both figures finite, two-sided test of r = 0 at 5 %: ``held`` for a significant negative r, ``did not hold`` for a
    significant positive one; fewer than 4 runs, or a figure without spread, cannot be judged. Returns the claim's
    record (``{"claim", "source", "verdict", "evidence", "values"}``), ``values`` as given."""
    pairs = [(e, values["final held-out accuracy"].get(m, {}).get(s, float("nan")))
             for m, by_seed in values["early ACR"].items() for s, e in by_seed.items()]
    pairs = [(e, f) for e, f in pairs if math.isfinite(e) and math.isfinite(f)]
    if len(pairs) < 4 or np.std([p[0] for p in pairs]) == 0 or np.std([p[1] for p in pairs]) == 0:
        verdict, evidence = "cannot be judged", "fewer than 4 runs or no spread"
    else:
        from scipy import stats

        r, p = (float(x) for x in stats.pearsonr([e for e, _ in pairs], [f for _, f in pairs]))
        verdict = "cannot be judged" if p >= 0.05 else ("held" if r < 0 else "did not hold")
        evidence = f"Pearson r = {round(r, 2) + 0.0:.2f} over {len(pairs)} runs, p = {p:.3g} (two-sided test of r = 0)"
    return {"claim": EARLY_ACR, "source": "000 Sec. 3.4.2, Fig. 1", "verdict": verdict, "evidence": evidence,
            "values": values}


def claims(runs: dict[str, list[dict[str, Any]]], table: dict[str, Any], kmax: int) -> list[dict[str, Any]]:
    """One line per paper claim the runs can speak to: ``{"claim", "source", "verdict", "evidence", "values"}``, and
    for a comparison of two methods ``"higher"``: whether the claim is that the method's figure lies above the base's.

    ``values`` holds the figures the verdict was taken on, per method and seed (``{method: {seed: value}}``, seeds as
    strings, a run's index where it has no seed), so that a reader of the summary can redo a test or look at a seed
    without the runs: for a comparison of two methods also ``"difference by seed"`` (method minus base) when the test
    is paired; for the early-ACR correlation each run's early ACR and final held-out accuracy; for ACR against G each
    run's ACR at each G.
    """
    out: list[dict[str, Any]] = []

    def add(claim: str, source: str, verdict: tuple[str, str], values: dict[str, Any],
            higher: Optional[bool] = None) -> None:
        out.append({"claim": claim, "source": source, "verdict": verdict[0], "evidence": verdict[1],
                    "values": values, **({} if higher is None else {"higher": higher})})

    def by_seed(method: str, fn: Callable[[dict[str, Any]], float]) -> dict[str, float]:
        return {str(r.get("seed", i)): float(fn(r)) for i, r in enumerate(runs.get(method, []))}

    paired = paired_by_seed(runs)

    def versus(method: str, base: str, fn: Callable[[dict[str, Any]], float],
               higher: bool) -> tuple[tuple[str, str], dict[str, Any], bool]:
        mine, theirs = by_seed(method, fn), by_seed(base, fn)
        values: dict[str, Any] = {method: mine, base: theirs}
        if not paired:
            return diff_verdict(list(mine.values()), list(theirs.values()), higher), values, higher
        seeds = sorted(set(mine) & set(theirs), key=int)
        values["difference by seed"] = {s: mine[s] - theirs[s] for s in seeds}
        return diff_verdict([mine[s] for s in seeds], [theirs[s] for s in seeds], higher, paired=True), values, higher

    mean_of = lambda key: (lambda r: float(np.mean(list(r["curves"][key].values()))) if r["curves"][key] else float("nan"))  # noqa: E731
    tail_of = lambda key: (lambda r: _tail_mean(r["curves"][key]))  # noqa: E731

    # 000 Sec. 3.4.6: ACR falls as G grows (within every run, groups cut to 2, 4, 8, ...). Within one run this holds by
    # arithmetic: for any group, the chance that g of its responses drawn at random all agree cannot rise with g (a
    # value held by m of n responses contributes C(m, g) / C(n, g), and C(m, g+1) / C(m, g) <= C(n, g+1) / C(n, g)),
    # so only a run with no mixed group leaves it undecided; GROUP_SIZE_CLAIMS below test the paper's claim, each G
    # trained at its own G
    by_g: dict[int, list[float]] = defaultdict(list)
    for rs in runs.values():
        for r in rs:
            for g, v in r["acr_by_group_size"].items():
                by_g[g].append(v)
    sizes = sorted(by_g)
    means = [float(np.mean(by_g[g])) for g in sizes]
    if len(sizes) >= 2:
        falls = all(b < a for a, b in zip(means, means[1:]))
        add(ACR_VS_G, "000 Sec. 3.4.6, Fig. 5",
            ("held" if falls else "did not hold",
             ", ".join(f"G={g}: {m:.3f}" for g, m in zip(sizes, means)) + " (each run's groups cut to G)"),
            {f"G={g}": {m: by_seed(m, lambda r, g=g: r["acr_by_group_size"].get(g, float("nan"))) for m in runs}
             for g in sizes})

    # 000 Sec. 3.4.2: early ACR predicts final accuracy (negative correlation across runs)
    early_of = lambda r: _head_mean(r["curves"]["acr/acr"])  # noqa: E731
    final_of = lambda r: (lambda v: v[max(v)] if v else float("nan"))(r["curves"]["val"])  # noqa: E731
    out.append(early_acr_claim({"early ACR": {m: by_seed(m, early_of) for m in runs},
                                "final held-out accuracy": {m: by_seed(m, final_of) for m in runs}}))

    # the claims below each need their method and its baseline among the runs (GSPO-N against GSPO needs no GRPO)
    # 000 Sec. 3.4.6, Fig. 5: trained at a larger G, GRPO has lower ACR during training (left) and higher final
    # held-out accuracy (right)
    for large, small in GROUP_SIZE_CLAIMS:
        if large in runs and small in runs:
            g_large, g_small = GROUP_SIZES[large], GROUP_SIZES[small]
            add(f"GRPO trained at G = {g_large} has lower ACR than at G = {g_small}", "000 Sec. 3.4.6, Fig. 5",
                *versus(large, small, mean_of("acr/acr"), higher=False))
            add(f"GRPO trained at G = {g_large} ends with higher held-out accuracy than at G = {g_small}",
                "000 Sec. 3.4.6, Fig. 5", *versus(large, small, final_of, higher=True))
    # 000 Sec. 3.4.3, Fig. 2: ACR and final accuracy across difficulty levels, each level trained on its own
    from rlvr_recipes.launch.cpu_run import TRAIN_LEVELS

    for method, base, figure in DIFFICULTY_CLAIMS:
        if method in runs and base in runs:
            mine, theirs = LEVEL_NAMES[method], LEVEL_NAMES[base]
            if figure == "ACR":
                add(f"GRPO trained on {mine} of the prompts has higher ACR than on {theirs}", "000 Sec. 3.4.3, Fig. 2",
                    *versus(method, base, mean_of("acr/acr"), higher=True))
            elif figure == "accuracy":
                add(f"GRPO trained on {mine} of the prompts ends with higher held-out accuracy than on {theirs}",
                    "000 Sec. 3.4.3, Fig. 2", *versus(method, base, final_of, higher=True))
            elif figure == "own-level accuracy":
                if all("own_level_accuracy" in r for r in runs[method] + runs[base]):
                    add(f"GRPO trained on {mine} of the prompts ends with higher accuracy on {mine} of the held-out "
                        f"prompts than trained on {theirs} on {theirs}", "000 Sec. 3.4.3, Fig. 2",
                        *versus(method, base, lambda r: r["own_level_accuracy"], higher=True))
            elif all(TRAIN_LEVELS[base] in r.get("heldout_level_accuracy", {}) for r in runs[method] + runs[base]):
                # "accuracy on the base's third": both runs scored on the base's own held-out third
                add(f"GRPO trained on {mine} of the prompts ends with higher accuracy on {theirs} of the held-out "
                    f"prompts than trained on {theirs}", "000 Sec. 3.4.3, reading of Fig. 2",
                    *versus(method, base, lambda r, level=TRAIN_LEVELS[base]: r["heldout_level_accuracy"][level],
                            higher=True))
    if "avspo" in runs and "grpo" in runs:
        add("AVSPO lowers the effective ACR against GRPO at equal rollouts", "000 Table 1",
            *versus("avspo", "grpo", mean_of("acr/effective_acr"), higher=False))
    # each figure an exploration claim can name: (the claim's wording, the run's value); its direction is
    # CLAIMED_ABOVE's
    entropy_of, passk_of = tail_of("actor/entropy"), (lambda r: r["passk_end"][kmax])
    exploration_figures: dict[str, tuple[str, Callable[[dict[str, Any]], float]]] = {
        "entropy": ("keeps entropy above", entropy_of),
        "entropy_below": ("ends with entropy below", entropy_of),
        "pass1": ("ends with pass@1 above", lambda r: r["passk_end"][1]),
        "passk": (f"keeps large-k pass@{kmax} above", passk_of),
        "passk_below": (f"ends with large-k pass@{kmax} below", passk_of),
    }
    for method, base, source, figures in EXPLORATION_CLAIMS:
        if method in runs and base in runs:
            for figure, (wording, per_run) in exploration_figures.items():
                if figure in figures:
                    add(f"{method} {wording} {base}", source,
                        *versus(method, base, per_run, higher=CLAIMED_ABOVE[figure]))
    if "cw_grpo" in runs:
        std_of = lambda r: float(np.std(list(r["curves"]["actor/entropy"].values())))  # noqa: E731
        if "grpo" in runs:
            add("CW-GRPO keeps entropy more stable than GRPO (smaller std over steps)", "003 Sec. 3",
                *versus("cw_grpo", "grpo", std_of, higher=False))
        final_val = lambda r: _tail_mean(r["curves"]["val"])  # noqa: E731
        names = {"grpo": "GRPO", "clip_cov": "Clip-Cov"}
        for base, source in CW_GRPO_BASELINES:
            if base in runs:
                add(f"CW-GRPO ends with higher held-out accuracy than {names[base]}", source,
                    *versus("cw_grpo", base, final_val, higher=True))
    if "aapo" in runs and "grpo" in runs:
        gap = lambda r: mean_of("acr/acr")(r) - mean_of("acr/effective_acr")(r)  # noqa: E731
        add("AAPO's margin gives non-zero advantages in collapsed groups (ACR minus effective ACR above GRPO's)",
            "002 Fig. 1-2", *versus("aapo", "grpo", gap, higher=True))
    return out


def _band(ax: Any, curves: list[dict[int, float]], label: str, color: Any) -> None:
    steps = sorted(set().union(*curves)) if curves else []
    if not steps:
        return
    vals = np.array([[c.get(s, np.nan) for s in steps] for c in curves], dtype=float)
    mean = np.nanmean(vals, axis=0)
    ax.plot(steps, mean, label=label, lw=1.4, color=color)
    if len(curves) > 1:
        std = np.nanstd(vals, axis=0)
        ax.fill_between(steps, mean - std, mean + std, color=color, alpha=0.2, lw=0)


def _save(fig: Any, ax: Any, xlabel: str, ylabel: str, path: str) -> None:
    import matplotlib.pyplot as plt

    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    # beside the axes, not on them: with the lab's 17 methods a legend inside covers the curves
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def method_colors(methods: Sequence[str]) -> dict[str, Any]:
    """One colour per method, distinct for up to 18 methods: matplotlib's tab10, then black, then Dark2's (the lab has
    11 methods, and tab10 alone would draw the 11th in the 1st's colour)."""
    import matplotlib

    palette = [*matplotlib.colormaps["tab10"].colors, (0.0, 0.0, 0.0), *matplotlib.colormaps["Dark2"].colors[1:]]
    return {m: palette[i % len(palette)] for i, m in enumerate(methods)}


def _seed_range(setup: dict[str, Any]) -> str:
    """`` (seeds 5-9)`` for a comparison that does not start at seed 0 (older summaries lack the key)."""
    first = setup.get("first_seed", 0)
    return f" (seeds {first}-{first + setup['seeds'] - 1})" if first else ""


def write_report(out: str, runs: dict[str, list[dict[str, Any]]], start_passk: dict[int, dict[int, float]],
                 summary: dict[str, Any]) -> None:
    """curves.png, passk.png, acr_vs_group_size.png, summary.json and report.md under ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = method_colors(list(runs))
    own = [(m, key) for m, key in OWN_FIGURES.items() if m in runs]
    panels = CURVES + [(f"{m}: {key}", key) for m, key in own]
    cols = 3
    fig, axes = plt.subplots(math.ceil(len(panels) / cols), cols, figsize=(5 * cols, 3.2 * math.ceil(len(panels) / cols)))
    for ax, (title, key) in zip(axes.flat, panels):
        for method, rs in runs.items():
            if any(r["curves"][key] for r in rs):
                _band(ax, [r["curves"][key] for r in rs], method, colors[method])
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(panels) :]:
        ax.axis("off")
    fig.suptitle("mean over seeds, band = +/- 1 std")
    # the top half inch kept for the title: tight_layout alone sets the panels' titles under it
    fig.tight_layout(rect=(0.0, 0.0, 1.0, 1.0 - 0.5 / fig.get_figheight()))
    fig.legend(*axes.flat[0].get_legend_handles_labels(), fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 0.95))
    fig.savefig(os.path.join(out, "curves.png"), dpi=110, bbox_inches="tight")
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 4))
    ks = sorted(next(iter(start_passk.values())))
    start = np.array([[p[k] for k in ks] for p in start_passk.values()])
    ax.plot(ks, start.mean(0), "k--", label="initial model")
    for method, rs in runs.items():
        vals = np.array([[r["passk_end"][k] for k in ks] for r in rs])
        ax.plot(ks, vals.mean(0), marker="o", ms=3, label=method, color=colors[method])
        if len(rs) > 1:
            ax.fill_between(ks, vals.mean(0) - vals.std(0), vals.mean(0) + vals.std(0), color=colors[method],
                            alpha=0.15, lw=0)
    ax.set_xscale("log", base=2)
    _save(fig, ax, "k", "pass@k (held-out)", os.path.join(out, "passk.png"))

    fig, ax = plt.subplots(figsize=(5, 3.5))
    for method, rs in runs.items():
        sizes = sorted(rs[0]["acr_by_group_size"])
        ax.plot(sizes, [np.mean([r["acr_by_group_size"].get(g, np.nan) for r in rs]) for g in sizes], marker="o",
                label=method, color=colors[method])
    _save(fig, ax, "group size G (each run's groups cut to G)", "mean ACR", os.path.join(out, "acr_vs_group_size.png"))

    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1, default=str)

    setup = summary["setup"]
    table = summary["table"]
    one_seed = setup["seeds"] < 2
    grpo_step = table.get("grpo", {}).get("s/step", (float("nan"), 0))[0]
    fmt = lambda m, s: "n/a" if not math.isfinite(m) else (f"{m:.3f}" if one_seed else f"{m:.3f} +/- {s:.3f}")  # noqa: E731
    missing = setup.get("missing_runs") or []
    lines = [
        f"# Methods side by side on verl's trainer (CPU, {summary['setup'].get('task', 'addition')} task)", "",
        *([f"**Partial report**: {len(missing)} run(s) not finished yet: {', '.join(missing)}. Figures and "
           "verdicts below are over the finished runs only.", ""] if missing else []),
        f"`{setup['command']}`  ",
        *([f"(interrupted after {setup['trained_wall_s'] / 60:.1f} min of wall time, with {setup['trained_runs']} "
           "run(s) finished)  "] if setup.get("interrupted") else []),
        *([f"(this report rewritten from its finished runs by `{setup['report_command']}`)  "]
          if setup.get("report_command") else []),
        f"{setup['seeds']} seed(s){_seed_range(setup)} x {setup['steps']} steps per method; {setup['machine']}; "
        f"{setup['runs_s'] / 60:.1f} min of training runs in all (start-up included, "
        f"{'one Ray cluster per lane' if _lanes_sentence(setup) else 'one Ray cluster'}); a step "
        f"costs {setup.get('cost_per_step_s')} s with each run's start-up in it, against a median step of "
        f"{setup.get('median_step_s')} s." + _lanes_sentence(setup),
        "", "![curves](curves.png)", "", "![pass@k](passk.png)", "", "![ACR vs G](acr_vs_group_size.png)", "",
        "## Final figures" + ("" if one_seed else " (mean +/- std over seeds)"),
    ]
    cols = list(next(iter(table.values())))
    for title, group in (("Learning", [c for c in cols if "acc" in c or "pass@" in c or "reward" in c]),
                         ("Dynamics and cost", [c for c in cols if not ("acc" in c or "pass@" in c or "reward" in c)])):
        # the step time against GRPO's, when GRPO is one of the methods
        extra = ["step time vs GRPO"] if "s/step" in group and math.isfinite(grpo_step) and grpo_step > 0 else []
        lines += ["", f"**{title}**", "", "| method | " + " | ".join(group + extra) + " |",
                  "|---" * (len(group) + len(extra) + 1) + "|"]
        for method, row in table.items():
            cells = [fmt(*row[c]) for c in group]
            if extra:
                cells.append(f"{row['s/step'][0] / grpo_step:.2f}x")
            lines.append(f"| {method} | " + " | ".join(cells) + " |")
    start = summary["start_passk"]
    lines += ["", "Initial model: " + ", ".join(f"pass@{k} {m:.3f}" for k, (m, _) in start.items())]
    lines += _change_table(summary["change_from_start"])
    lines += _levels_table(summary.get("heldout_level_accuracy") or {},
                           (setup.get("levels") or {}).get("heldout_levels") or {})
    lines += ["",
              "## The papers' claims at this scale", "",
              "A claim held when the 95 % interval of the difference ("
              + ("the paired t-test by seed: every run drew its rollouts and its pass@k samples from keyed streams, "
                 "so the runs of one seed share their draws" if summary.get("paired_by_seed")
                 else "Welch's t-test, seeds as samples")
              + ") lies on the claimed side of 0, did not hold when it lies on the other side, and cannot be judged "
              "when it holds 0. "
              "Each claim is one test at the 5 % level; with this many claims in one report, about one in twenty "
              "verdicts on a true null would come out decided by chance.", "",
              "| claim | paper | here | evidence |", "|---|---|---|---|"]
    lines += [f"| {c['claim']} | {c['source']} | {c['verdict']} | {c['evidence']} |" for c in summary["claims"]]
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


def _lanes_sentence(setup: dict[str, Any]) -> str:
    """The report's word on lanes, when this command trained runs in more than one (nothing otherwise)."""
    if setup.get("jobs", 1) <= 1 or setup.get("trained_runs", 0) <= 1:
        return ""
    if setup.get("interrupted"):  # its wall time holds the runs it stopped too: no cost per step trained
        return (f" This command trained {setup['trained_runs']} runs {setup['jobs']} at a time (one Ray cluster per "
                "lane) before it was interrupted.")
    per_step = setup["trained_wall_s"] / (setup["trained_runs"] * setup["steps"])
    return (f" This command trained {setup['trained_runs']} runs {setup['jobs']} at a time (one Ray cluster per lane) "
            f"in {setup['trained_wall_s'] / 60:.1f} min of wall time: {per_step:.2f} s per step trained, each run's "
            "start-up and pass@k scoring included.")


def _change_table(changes: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    """The report's lines for held-out pass@1 and pass@k_max at the end against the initial model, paired by seed."""
    if not changes:
        return []
    figures = list(next(iter(changes.values())))

    def cell(c: dict[str, Any]) -> str:
        seeds = ", ".join(f"{d:+.3f}" for d in c["by_seed"])
        if not math.isfinite(c["low"]):
            return f"{c['mean']:+.3f} ({seeds})"
        return f"{c['mean']:+.3f} [{c['low']:+.3f}, {c['high']:+.3f}], p = {c['p']:.2g} ({seeds})"

    lines = ["", "**Held-out pass@k at the end against the initial model**, paired by seed (each run against its own "
             "seed's sample of the initial model): the mean change, its 95 % interval and p by the paired t-test, "
             "then each seed's change. The lab's target for GRPO is a pass@1 rise of +0.15 or more in every seed. "
             "001 (Sec. 4.2) reports GRPO's large-k pass@k falling below the base model's; this table is what the "
             "runs did, not one of the claims below.", "",
             "| method | " + " | ".join(f"{f} change" for f in figures) + " |", "|---" * (len(figures) + 1) + "|"]
    lines += [f"| {m} | " + " | ".join(cell(c[f]) for f in figures) + " |" for m, c in changes.items()]
    return lines


def _levels_table(by_level: dict[str, dict[str, dict[str, float]]], heldout_levels: dict[str, dict[str, Any]]
                  ) -> list[str]:
    """The report's lines for each run's greedy accuracy on each third of the held-out prompts (``by_level``, the
    summary's ``heldout_level_accuracy``: ``{method: {level: {seed: accuracy}}}``), mean and std over seeds, each
    third's prompt count from ``heldout_levels`` (the levels' record); nothing when no run was scored so."""
    from rlvr_recipes.launch.cpu_run import TRAIN_LEVELS

    if not by_level:
        return []
    levels = [lv for lv in TRAIN_LEVELS.values() if any(lv in v for v in by_level.values())]

    def cell(values: dict[str, float]) -> str:
        mean, std = _mean_std(list(values.values()))
        return f"{mean:.3f}" + (f" +/- {std:.3f}" if len(values) > 1 else "")

    heads = [f"{lv} third" + (f" ({heldout_levels[lv]['prompts']})" if "prompts" in heldout_levels.get(lv, {}) else "")
             for lv in levels]
    lines = ["", "**Greedy accuracy on each third of the held-out prompts** (split by the warm start's solve rate, as "
             "the RL prompts are; mean +/- std over seeds, std with ddof 1; a level's run on its own third is 000 Sec. "
             "3.4.3's protocol)", "", "| method | " + " | ".join(heads) + " |", "|---" * (len(levels) + 1) + "|"]
    lines += [f"| {m} | " + " | ".join(cell(v[lv]) if lv in v else "n/a" for lv in levels) + " |"
              for m, v in by_level.items()]
    return lines


#: the committed copy of a report sits between these two lines of its document (``--publish``)
PUBLISH_START = "<!-- compare report: start (written by launch.compare --publish; edits inside are lost) -->"
PUBLISH_END = "<!-- compare report: end -->"
REPORT_FIGURES = ("curves.png", "passk.png", "acr_vs_group_size.png")


def publish_target(doc: str, start_marker: str = PUBLISH_START, end_marker: str = PUBLISH_END,
                   what: str = "report") -> tuple[str, int, int]:
    """The text of ``doc`` and the offsets of its two markers (by default the report's), checked before anything is
    written between them.

    Raises:
        ValueError: ``doc`` is missing, or lacks the markers in that order; the message names the file and says that
            the ``what`` goes between them.
    """
    if not os.path.isfile(doc):
        raise ValueError(f"--publish {doc}: no such file")
    with open(doc) as f:
        text = f.read()
    start, end = text.find(start_marker), text.find(end_marker)
    if start < 0 or end < start:
        raise ValueError(f"{doc}: needs the line {start_marker!r} and, after it, {end_marker!r}, to mark where the "
                         f"{what} goes")
    return text, start, end


def write_between_markers(doc: str, content: str, start_marker: str = PUBLISH_START, end_marker: str = PUBLISH_END,
                          what: str = "report") -> None:
    """Replace what lies between the two markers of ``doc`` (:func:`publish_target`) by ``content``, set off by blank
    lines; the rest of ``doc`` is kept."""
    text, start, end = publish_target(doc, start_marker, end_marker, what)
    with open(doc, "w") as f:
        f.write(text[: start + len(start_marker)] + "\n\n" + content.strip() + "\n\n" + text[end:])


def check_report_publishable(out: str, doc: str) -> str:
    """The path of ``<out>/report.md``, once it is there and ``doc`` holds the report's two markers: the checks
    :func:`publish_report` makes before it writes anything, for a caller that must make them before writing elsewhere
    (``launch.replay --publish --report-into`` makes them before it writes the summary).

    Raises:
        ValueError: ``out`` holds no report, or ``doc`` is missing or lacks the two markers (in that order).
    """
    report_path = os.path.join(out, "report.md")
    if not os.path.exists(report_path):
        raise ValueError(f"{report_path}: no report to publish; run the comparison first")
    publish_target(doc)
    return report_path


def publish_report(out: str, doc: str) -> str:
    """Copy ``<out>/report.md`` into the document ``doc`` between :data:`PUBLISH_START` and :data:`PUBLISH_END`: its
    headings two levels down (it sits under a section of ``doc``), its figures copied to ``img/<name of out>/`` beside
    ``doc`` and linked from there. Returns the folder the figures went to.

    Raises:
        ValueError: ``doc`` lacks the two markers (in that order), or ``out`` holds no report.
    """
    import shutil

    report_path = check_report_publishable(out, doc)  # both checked before a figure is copied
    rel = f"img/{os.path.basename(os.path.normpath(out))}"
    img_dir = os.path.join(os.path.dirname(os.path.abspath(doc)), rel)
    os.makedirs(img_dir, exist_ok=True)
    with open(report_path) as f:
        report = f.read()
    for name in REPORT_FIGURES:
        if os.path.exists(os.path.join(out, name)):
            shutil.copyfile(os.path.join(out, name), os.path.join(img_dir, name))
        report = report.replace(f"]({name})", f"]({rel}/{name})")
    report = "\n".join("##" + line if line.startswith("#") else line for line in report.splitlines())
    write_between_markers(doc, report)
    return img_dir


# ---------------------------------------------------------------------------------------------------- cli


def main(argv: Optional[Sequence[str]] = None) -> int:
    global _MAIN_ARGV
    _MAIN_ARGV = list(sys.argv[1:] if argv is None else argv)
    try:
        return _main(_MAIN_ARGV)
    finally:
        _MAIN_ARGV = None


def _main(argv: list[str]) -> int:
    from rlvr_recipes.launch.cpu_run import TINY_DIR_HELP

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--methods", default=DEFAULT_METHODS, help=f"comma-separated (default {DEFAULT_METHODS})")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--first-seed", type=int, default=0,
                        help="seeds FIRST .. FIRST+SEEDS-1 (default 0): a replication on seeds not used before")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--out", default=os.path.join(runs_dir(), "compare"))
    parser.add_argument("--passk-samples", type=int, default=64, help="samples per held-out problem (max k)")
    parser.add_argument("--task", default="addition", help="embedded task: addition or countdown (docs/lab.md)")
    parser.add_argument("--tiny-dir", default=None, help=TINY_DIR_HELP)
    parser.add_argument("--jobs", type=int, default=1,
                        help="runs trained at once, each in a process with a Ray cluster of its own (default 1; "
                             "each holds one run's processes, about 4.3 GB)")
    parser.add_argument("--report-only", action="store_true",
                        help="train nothing: write the report from the runs finished so far")
    parser.add_argument("--publish", metavar="DOC", default=None,
                        help="copy the report into DOC between its report markers, figures to img/<out name>/ beside it")
    parser.add_argument("--check-publish", metavar="DOC", default=None,
                        help="check before any run that DOC holds the report markers, and write nothing into it: for "
                             "a report that a later step publishes (make lab: launch.replay --report-into)")
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    args = parser.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    methods = [m for m in args.methods.split(",") if m]
    if args.seeds < 1 or args.steps < 1 or args.passk_samples < 1:
        print("error: --seeds, --steps and --passk-samples must be >= 1", file=sys.stderr)
        return 2
    if args.jobs < 1:
        print(f"error: --jobs must be >= 1, got {args.jobs}", file=sys.stderr)
        return 2
    if args.first_seed < 0:
        print(f"error: --first-seed must be >= 0, got {args.first_seed}", file=sys.stderr)
        return 2
    try:
        from rlvr_recipes.launch.cpu_run import cpu_environment, method_overrides, registered

        env = cpu_environment()  # before verl is imported here: the cpu platform, as in every run's processes
        os.environ.update({k: env[k] for k in ("VERL_PLATFORM", "VERL_USE_EXTERNAL_MODULES")})
        estimators, _ = registered()
        for m in methods:
            method_overrides(m, estimators)
        for doc in filter(None, (args.publish, args.check_publish)):
            publish_target(doc)  # before hours of runs, not after
        compare(methods, args.seeds, args.steps, args.out, extra, args.passk_samples, args.tiny_dir, args.task,
                report_only=args.report_only, first_seed=args.first_seed, jobs=args.jobs)
        if args.publish:
            img_dir = publish_report(args.out, args.publish)
            print(f"[compare] report copied into {args.publish}, figures into {img_dir}", flush=True)
    except (ValueError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, ValueError) else 1
    except TerminatedRayDriver:  # compare() said what is kept and shut Ray down: end before the C++ abort at exit
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)
    except KeyboardInterrupt:  # compare() said what is kept; the shell's code for a Ctrl-C, without a traceback
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
