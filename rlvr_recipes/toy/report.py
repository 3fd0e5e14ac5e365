"""Run the toy bandit and the population simulator for every method; write plots and a markdown table.

    python -m rlvr_recipes.toy.report --out docs/img            # full (about a minute on 2 cores)
    python -m rlvr_recipes.toy.report --out /tmp/toy --quick
"""

from __future__ import annotations

import argparse
import json
import os
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from rlvr_recipes.toy.bandit import BanditSetting, run_many  # noqa: E402
from rlvr_recipes.toy.simulator import effective_acr, expected_acr, population, theorem2_weights  # noqa: E402

METHODS = ["grpo", "grpo_n", "agrae", "agrae_neg_dominant", "agrae_pos_dominant", "avspo", "aapo"]


def bandit_report(out: str, seeds: int, steps: int) -> list[str]:
    setting = BanditSetting(steps=steps)
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    rows = ["| method | p(optimal) at 50 / 150 / end | entropy mean over steps 10-60 | ACR first / last 50 steps |",
            "| --- | --- | --- | --- |"]
    for name in METHODS:
        t0 = time.time()
        c = run_many(name, setting, seeds=seeds)
        x = np.arange(steps)
        for ax, key in zip(axes, ("p_opt", "entropy", "acr")):
            m, s = c[key].mean(0), c[key].std(0)
            ax.plot(x, m, label=name)
            ax.fill_between(x, m - s, m + s, alpha=0.15)
        p, e, a = c["p_opt"].mean(0), c["entropy"].mean(0), c["acr"].mean(0)
        rows.append(f"| `{name}` | {p[min(50, steps - 1)]:.2f} / {p[min(150, steps - 1)]:.2f} / {p[-1]:.2f} | "
                    f"{e[10:60].mean():.3f} | {a[:50].mean():.2f} / {a[-50:].mean():.2f} |")
        print(f"[bandit] {name:<20} {time.time() - t0:5.1f}s  p_opt end {p[-1]:.2f}", flush=True)
    for ax, title in zip(axes, ("probability of the optimal action", "policy entropy", "ACR")):
        ax.set_title(title)
        ax.set_xlabel("step")
    axes[0].legend(fontsize=8)
    fig.suptitle(f"Toy softmax bandit (rewards {setting.rewards}, init {setting.init_probs}, G={setting.group_size}, "
                 f"Adam lr {setting.lr}, {setting.prompts} prompts x {seeds} seeds, mean ± std)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "bandit.png"), dpi=90)
    plt.close(fig)
    return rows


def simulator_report(out: str, prompts: int, steps: int) -> list[str]:
    rng = np.random.default_rng(0)
    sizes = [2, 4, 8, 16, 32]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    rows = ["| G | ACR sampled | ACR closed form | " + " | ".join(f"eff. ACR `{m}`" for m in METHODS) + " |",
            "| --- | --- | --- | " + " | ".join("---" for _ in METHODS) + " |"]
    p = population(prompts, 0, 0.0, rng)
    for g in sizes:
        eff = {m: effective_acr(m, p, g, rng, steps=steps) for m in METHODS}
        acr = eff["grpo"][0]
        rows.append(f"| {g} | {acr:.3f} | {expected_acr(p, g):.3f} | "
                    + " | ".join(f"{eff[m][1]:.3f}" for m in METHODS) + " |")
        print(f"[simulator] G={g:<3} ACR {acr:.3f} closed form {expected_acr(p, g):.3f}", flush=True)
    for g in sizes:
        measured, closed = theorem2_weights(p, g, rng)
        rows.append(f"\nTheorem 2 (A-GRAE Eq. 10), G={g}: max over {len(p)} groups of |sum_i |Â_i| - 2G sqrt(p(1-p))| "
                    f"= {np.abs(measured - closed).max():.2e}")
        print(f"[simulator] Theorem 2 G={g}: max abs deviation {np.abs(measured - closed).max():.2e}", flush=True)
    axes[0].plot(sizes, [expected_acr(p, g) for g in sizes], "k-", label="closed form")
    axes[0].plot(sizes, [float(r.split("|")[2]) for r in rows[2:2 + len(sizes)]], "o", label="sampled")
    axes[0].set_xscale("log", base=2)
    axes[0].set_title("ACR vs group size")
    axes[0].set_xlabel("G")
    axes[0].legend()
    drift_steps = np.arange(0, 60, 5)
    for g in (4, 8, 16):
        axes[1].plot(drift_steps, [expected_acr(population(prompts, t, 0.08, np.random.default_rng(1)), g)
                                   for t in drift_steps], label=f"G={g}")
    axes[1].set_title("expected ACR as the policy improves (logit drift 0.08/step)")
    axes[1].set_xlabel("step")
    axes[1].legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "simulator.png"), dpi=90)
    plt.close(fig)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="docs/img")
    parser.add_argument("--quick", action="store_true", help="fewer seeds, steps and prompts")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    seeds, steps, prompts, sim_steps = (2, 150, 256, 2) if args.quick else (5, 300, 1024, 5)
    bandit_rows = bandit_report(args.out, seeds, steps)
    sim_rows = simulator_report(args.out, prompts, sim_steps)
    table = "\n".join(["## Toy bandit", "", *bandit_rows, "", "## Simulator", "", *sim_rows, ""])
    with open(os.path.join(args.out, "toy_report.md"), "w") as f:
        f.write(table)
    with open(os.path.join(args.out, "toy_report.json"), "w") as f:
        json.dump({"bandit": bandit_rows, "simulator": sim_rows, "quick": args.quick}, f, indent=1)
    print(table)
    print(f"wrote {args.out}/bandit.png, simulator.png, toy_report.md")


if __name__ == "__main__":
    main()
