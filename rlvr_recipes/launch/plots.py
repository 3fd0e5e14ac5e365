"""Figures of an evaluation: pass@k curves (001 Fig. 7-8, 004 Fig. 1 style) and training curves of a run."""

from __future__ import annotations

from typing import Any, Mapping, Optional

from rlvr_recipes.launch.training_log import Curves, DEFAULT_PANELS, pick_panels


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_pass_at_k(summary: Mapping[str, Any], path: str, title: Optional[str] = None) -> None:
    """pass@k against k (log2 axis), one line per benchmark and a dashed line for the problem-weighted overall."""
    plt = _pyplot()
    ks = summary["k"]
    series = [(name, entry) for name, entry in summary["benchmarks"].items()]
    if len(series) > 1:
        series.append(("overall (weighted)", summary["overall"]["weighted"]))
    fig, ax = plt.subplots(figsize=(5.6, 3.8))
    for name, entry in series:
        xs = [k for k in ks if f"pass@{k}" in entry]
        if not xs:
            continue
        problems = f" ({entry['problems']})" if "problems" in entry else ""
        overall = name.startswith("overall")
        ax.plot(xs, [100 * entry[f"pass@{k}"] for k in xs], marker="o", markersize=3, label=f"{name}{problems}",
                linestyle="--" if overall else "-", color="black" if overall else None)
    if len(ks) > 1:
        ax.set_xscale("log", base=2)
    ax.set_xticks(ks)
    ax.set_xticklabels([str(k) for k in ks])
    ax.set_xlabel("k")
    ax.set_ylabel("pass@k (%)")
    ax.set_ylim(0, 100)
    ax.grid(alpha=0.3)
    ax.set_title(title or "unbiased pass@k")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def plot_training_curves(runs: Mapping[str, Curves], path: str,
                         panels: Mapping[str, tuple[str, ...]] = DEFAULT_PANELS) -> dict[str, dict[str, str]]:
    """One panel per quantity (reward, ACR, entropy by default), one line per run.

    Returns:
        ``{run: {panel: metric name used}}``; raises ``ValueError`` if no run logs any panel's metric.
    """
    chosen = {run: pick_panels(curves, dict(panels)) for run, curves in runs.items()}
    labels = [p for p in panels if any(p in c for c in chosen.values())]
    if not labels:
        wanted = sorted({n for names in panels.values() for n in names})
        raise ValueError(f"no run logs any of {wanted}")
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(labels), figsize=(3.6 * len(labels), 2.9), squeeze=False)
    for ax, label in zip(axes[0], labels):
        names = set()
        for run, curves in runs.items():
            name = chosen[run].get(label)
            if name is None:
                continue
            names.add(name)
            steps, values = zip(*sorted(curves[name]))
            ax.plot(steps, values, label=run, linewidth=1.2)
        ax.set_title(f"{label} ({', '.join(sorted(names))})", fontsize=8)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        if len(runs) > 1:
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return chosen
