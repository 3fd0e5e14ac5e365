"""Reward and ACR over the steps of one run, from verl's file logger (and its rollout dumps for ACR if needed).

ACR (advantage collapse rate, METHODS.md) is the fraction of prompt groups whose rewards have population standard
deviation below 1e-6. The trainer extension logs it as ``acr/acr``; for a run without it, :func:`acr_from_rollouts`
computes it from the per-step rollout dumps verl writes with ``trainer.rollout_data_dir`` (one JSON line per
response, ``uid`` = ``<prompt uid>_<sample>_<turn>``).

    python -m rlvr_recipes.launch.cpu_plot RUN_DIR        # reads RUN_DIR/metrics.jsonl (+ RUN_DIR/rollouts/), writes curves.png
"""

from __future__ import annotations

import glob
import json
import os
import sys
from collections import defaultdict
from typing import Optional

REWARD_KEY = "critic/score/mean"
ACR_KEY = "acr/acr"


def read_metrics(path: str) -> dict[int, dict[str, float]]:
    """``{step: {metric: value}}`` from a verl file-logger JSONL (later lines for a step update earlier ones)."""
    steps: dict[int, dict[str, float]] = defaultdict(dict)
    with open(path) as f:
        for line in f:
            if line.strip():
                rec = json.loads(line)
                steps[int(rec["step"])].update(
                    {k: float(v) for k, v in rec["data"].items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
                )
    return dict(steps)


def read_rollout_dump(path: str) -> tuple[Optional[int], list[str], list[float]]:
    """``(step, prompt, score)`` of one verl rollout dump (``<step>.jsonl``): the step and, per response, its
    prompt's id (the ``uid`` without verl's ``_{session}_{index}`` suffix) and its score. ``step`` is None for an
    empty file."""
    step, prompts, scores = None, [], []
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            rec = json.loads(line)
            step = int(rec.get("step", os.path.basename(path).split(".")[0]))
            uid = str(rec.get("uid", rec.get("input")))
            prompts.append(uid.rsplit("_", 2)[0] if uid.count("_") >= 2 else uid)
            scores.append(float(rec["score"]))
    return step, prompts, scores


def acr_from_rollouts(rollout_dir: str) -> dict[int, float]:
    """``{step: ACR}`` from verl's rollout dumps (``<step>.jsonl``), grouping responses by prompt uid.

    The rate itself is :func:`rlvr_recipes.advantage.diagnostics.advantage_collapse_rate`, the one the trainer extension logs.
    """
    import torch

    from rlvr_recipes.advantage.diagnostics import advantage_collapse_rate

    out: dict[int, float] = {}
    for path in glob.glob(os.path.join(rollout_dir, "*.jsonl")):
        step, prompts, scores = read_rollout_dump(path)
        if step is not None:
            out[step] = advantage_collapse_rate(torch.tensor(scores, dtype=torch.float64), prompts)
    return out


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def is_val_accuracy(key: str) -> bool:
    """Whether ``key`` is verl's held-out greedy accuracy, ``val-core/<source>/.../mean@1``."""
    return key.startswith("val-core/") and key.endswith("/mean@1")


def val_accuracy(metrics: dict[int, dict[str, float]]) -> list[tuple[int, float]]:
    """``[(step, held-out greedy accuracy)]`` from verl's ``val-core/<source>/.../mean@1``, in step order."""
    return sorted((s, v) for s, d in metrics.items() for k, v in d.items() if is_val_accuracy(k))


def rolling_band(values: list[float], window: int) -> tuple[list[float], list[float], list[float]]:
    """Trailing ``window``-step mean and mean -/+ one population standard deviation, at every step."""
    mean, low, high = [], [], []
    for i in range(len(values)):
        chunk = values[max(0, i - window + 1) : i + 1]
        m = _mean(chunk)
        sd = (sum((x - m) ** 2 for x in chunk) / len(chunk)) ** 0.5
        mean.append(m)
        low.append(m - sd)
        high.append(m + sd)
    return mean, low, high


def plot_run(run_dir: str, title: Optional[str] = None, window: int = 5) -> tuple[str, str]:
    """Write ``<run_dir>/curves.png`` (reward with validation accuracy; ACR) and return it with a one-line summary.

    The summary compares the mean of the first and last ``window`` steps (reward, ACR) and the first and last
    validation accuracy.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = read_metrics(os.path.join(run_dir, "metrics.jsonl"))
    train_steps = sorted(s for s, d in metrics.items() if REWARD_KEY in d)
    reward = [metrics[s][REWARD_KEY] for s in train_steps]
    val = val_accuracy(metrics)
    acr_source = "acr/acr (trainer extension)"
    acr = {s: metrics[s][ACR_KEY] for s in train_steps if ACR_KEY in metrics[s]}
    if not acr:
        acr, acr_source = acr_from_rollouts(os.path.join(run_dir, "rollouts")), "from rollout dumps"
    acr_steps = sorted(acr)

    fig, (ax_r, ax_a) = plt.subplots(1, 2, figsize=(9, 3.4))
    ax_r.plot(train_steps, reward, color="tab:blue", linewidth=0.8, alpha=0.4, label="train reward (batch mean)")
    if reward:
        smooth, low, high = rolling_band(reward, window)
        ax_r.fill_between(train_steps, low, high, color="tab:blue", alpha=0.15, linewidth=0)
        ax_r.plot(train_steps, smooth, color="tab:blue", linewidth=2,
                  label=f"train reward ({window}-step mean, band +/- 1 sd)")
    if val:
        ax_r.plot([s for s, _ in val], [v for _, v in val], "o-", color="tab:green", label="val accuracy (greedy)")
    ax_r.set_xlabel("step")
    ax_r.set_ylim(0, 1)
    ax_r.set_title("reward", fontsize=9)
    ax_r.grid(alpha=0.3)
    ax_r.legend(fontsize=7)
    ax_a.plot(acr_steps, [acr[s] for s in acr_steps], color="tab:red", linewidth=1.5)
    ax_a.set_xlabel("step")
    ax_a.set_ylim(0, 1)
    ax_a.set_title(f"ACR, groups with reward std < 1e-6\n({acr_source})", fontsize=9)
    ax_a.grid(alpha=0.3)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    png = os.path.join(run_dir, "curves.png")
    fig.savefig(png, dpi=90)
    plt.close(fig)

    k = min(window, max(1, len(reward) // 2))
    parts = [f"reward {_mean(reward[:k]):.2f} (first {k} steps) -> {_mean(reward[-k:]):.2f} (last {k})"]
    if val:
        parts.append(f"val accuracy {val[0][1]:.2f} (step {val[0][0]}) -> {val[-1][1]:.2f} (step {val[-1][0]})")
    if acr_steps:
        a = [acr[s] for s in acr_steps]
        parts.append(f"ACR {_mean(a[:k]):.2f} -> {_mean(a[-k:]):.2f}")
    return png, "; ".join(parts)


def plot_seeds(run_dirs: list[str], png: str, title: Optional[str] = None, window: int = 5) -> tuple[str, str]:
    """Write ``png``: training reward and held-out accuracy of several seeds of one method, as the mean across seeds
    with a min-max band, and return it with a one-line summary (first vs last, mean and range across seeds)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = [read_metrics(os.path.join(d, "metrics.jsonl")) for d in run_dirs]
    fig, (ax_r, ax_v) = plt.subplots(1, 2, figsize=(9, 3.4))
    parts = [f"{len(runs)} seeds"]
    for ax, name, series in (
        (ax_r, "train reward", [[(s, m[s][REWARD_KEY]) for s in sorted(m) if REWARD_KEY in m[s]] for m in runs]),
        (ax_v, "held-out greedy accuracy", [val_accuracy(m) for m in runs]),
    ):
        if name == "train reward":  # per-seed trailing mean first, so that the band is across seeds, not batches
            series = [list(zip([s for s, _ in r], rolling_band([v for _, v in r], window)[0])) for r in series]
        steps = sorted(set.intersection(*[{s for s, _ in r} for r in series])) if series else []
        if not steps:
            continue
        table = [dict(r) for r in series]
        mean = [_mean([t[s] for t in table]) for s in steps]
        ax.fill_between(steps, [min(t[s] for t in table) for s in steps], [max(t[s] for t in table) for s in steps],
                        alpha=0.2, linewidth=0, label="min-max across seeds")
        ax.plot(steps, mean, "o-" if name != "train reward" else "-", linewidth=2, label="mean across seeds")
        ax.set_title(name + (f" ({window}-step mean per seed)" if name == "train reward" else ""), fontsize=9)
        ax.set_xlabel("step")
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        first, last = [t[steps[0]] for t in table], [t[steps[-1]] for t in table]
        rise = [b - a for a, b in zip(first, last)]
        parts.append(f"{name} {_mean(first):.2f} (step {steps[0]}) -> {_mean(last):.2f} (step {steps[-1]}), "
                     f"rise per seed {min(rise):+.2f}..{max(rise):+.2f}")
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(png, dpi=90)
    plt.close(fig)
    return png, "; ".join(parts)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m rlvr_recipes.launch.cpu_plot RUN_DIR")
    print(*plot_run(sys.argv[1]), sep="\n")
