"""GRPO on the countdown task at two model sizes or more, each from its own warm start: 000 Sec. 3.4.4, Fig. 3.

000 Sec. 3.4.4 trains GRPO on models of 0.5B to 14B parameters at one difficulty level and reads two trends off
Fig. 3: larger models keep a lower and more stable ACR during training, and reach a higher final accuracy. A
comparison of ``launch.compare`` shares one initial model across its methods, so the lab runs one comparison a size,
each on its own build of the task (``--tiny-dir``), and this script takes them together. ``build`` makes the
countdown task with its model's shape (4 layers, 4 heads, intermediate 4 x hidden) at another hidden size,
warm-started on this machine by the task's own recipe (``CountdownSpec.warm_start_steps`` supervised steps on the
warm start's problems, the RL prompts unseen); the default size (hidden 128: 1.1M parameters) keeps its shipped warm
start. The lab's set runs it with hidden 64 (0.27M parameters; its build 3.6 minutes on 2 cores) and hidden 192 (2.4M;
9.5 minutes, 7.6 of them the warm start's 850 steps); hidden 256 (4.2M) was left out: alone on the 2 cores its build
had not reached warm-start step 100 after 2.7 minutes (over 1 s a step: over 14 minutes for the 850), and its RL
steps would cost more again.

    python benchmarks/lab_model_scale.py build --hidden-size 64 --out runs/tiny_countdown_h64
    python benchmarks/lab_model_scale.py build --hidden-size 192 --out runs/tiny_countdown_h192
    python -m rlvr_recipes.launch.compare --task countdown --methods grpo --seeds 8 --first-seed 394 --steps 50 \\
        --passk-samples 64 --tiny-dir runs/tiny_countdown_h64 --out runs/lab_model_scale_394_h64
    python -m rlvr_recipes.launch.compare --task countdown --methods grpo --seeds 8 --first-seed 394 --steps 50 \\
        --passk-samples 64 --tiny-dir runs/tiny_countdown_h192 --out runs/lab_model_scale_394_h192
    python -m rlvr_recipes.launch.compare --task countdown --methods grpo --seeds 8 --first-seed 394 --steps 50 \\
        --passk-samples 64 --out runs/lab_model_scale_394_h128
    python benchmarks/lab_model_scale.py combine runs/lab_model_scale_394_h64 runs/lab_model_scale_394_h192 \\
        runs/lab_model_scale_394_h128 --json benchmarks/lab_model_scale_394_summary.json \\
        --figure docs/img/lab_model_scale_394/curves.png

(``make lab-model-scale-394`` runs all of it.) ``build --warm-start-steps N`` stops the warm start at step N (it runs
at a constant learning rate, so the same run stopped earlier): ``make lab-model-scale-matched-394`` builds hidden 192
at 400 steps, where it starts as the hidden-64 model does, and takes its comparison together with hidden 64's;
``make lab-model-scale-matched3-394`` adds hidden 128 at 400 steps, so that the three sizes start alike;
``make lab-model-scale-same-steps-402`` gives hidden 64 the 400 steps too, so that the three share one warm-start
length.
``combine`` reads each comparison's ``summary.json`` and its runs, names each comparison's GRPO by its model's parameter
count (``grpo_0.27M``; ``grpo_2.4M_ws400`` for a build of another warm start, :func:`run_label`), and writes one summary
in ``launch.compare``'s shape, which ``launch.verdicts`` reads: the figures by seed (with each run's ACR std over its
steps, and the parts of its ACR, the groups all right and all wrong, from its logged metrics: :data:`COLLAPSE_PARTS`),
and the claims, each model against the next smaller one, paired by seed (every run of a seed draws its prompts in the
same order; the models differ). Claims: ACR (mean over steps) lower, its std over steps lower, final held-out greedy
accuracy higher, and early ACR against final accuracy over all the runs (000 Sec. 3.4.2, Fig. 1, whose 140 runs span
model sizes too).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, NamedTuple, Optional, Sequence

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from rlvr_recipes.launch.compare import (EARLY_ACR, early_acr_claim, finished_runs, load_run,  # noqa: E402
                                         method_colors, paired_claim, _band)
from rlvr_recipes.tiny_task.build import task_from_settings  # noqa: E402

SOURCE = "000 Sec. 3.4.4, Fig. 3"
#: the figures by seed each claim reads (``launch.compare``'s summary names, and the one this script adds) and
#: whether the claim puts the larger model's figure above the smaller's
SCALE_CLAIMS = (("ACR (mean)", "has lower ACR", False),
                ("ACR std over steps", "keeps ACR more stable (smaller std over steps)", False),
                ("held-out acc, end", "ends with higher held-out accuracy", True))
#: the two kinds of collapsed group each run logs (``advantage.diagnostics.batch_diagnostics``), as fractions of a
#: step's groups: all right and all wrong; with a binary reward their sum is the step's ACR
COLLAPSE_PARTS = (("groups all right (mean)", "acr/all_correct_frac"),
                  ("groups all wrong (mean)", "acr/all_wrong_frac"))


def build_size(hidden_size: int, out: str, warm_start_steps: Optional[int] = None) -> dict[str, str]:
    """The countdown task built under ``out`` with the task's model shape at ``hidden_size`` (4 layers, 4 heads,
    intermediate 4 x hidden), warm-started on this machine by the task's recipe (``warm_start_steps`` supervised
    steps, else the recipe's own ``CountdownSpec.warm_start_steps``), with the reference cache sampled as the CPU runs
    sample; ``launch.compare --tiny-dir out`` then uses it as it is. Returns the build's paths."""
    from rlvr_recipes.launch.cpu_run import COUNTDOWN_WARM_START, compose, embedded_task
    from rlvr_recipes.reward.reference import reference_settings
    from rlvr_recipes.tiny_task.build import COUNTDOWN_MODEL, TinyModelSpec, build
    from rlvr_recipes.tiny_task.countdown import CountdownSpec

    model = TinyModelSpec(hidden_size=hidden_size, intermediate_size=4 * hidden_size,
                          num_hidden_layers=COUNTDOWN_MODEL.num_hidden_layers,
                          num_attention_heads=COUNTDOWN_MODEL.num_attention_heads,
                          num_key_value_heads=COUNTDOWN_MODEL.num_key_value_heads,
                          max_position_embeddings=COUNTDOWN_MODEL.max_position_embeddings)
    ref_settings = reference_settings(compose(list(embedded_task("countdown").overrides)))
    task = CountdownSpec() if warm_start_steps is None else CountdownSpec(warm_start_steps=warm_start_steps)
    return build(out, model, task, warm_start_target=COUNTDOWN_WARM_START, ref_settings=ref_settings,
                 train_warm_start=True)


def parameter_count(model_dir: str) -> int:
    """The parameters of the model saved in ``model_dir`` (tied embeddings counted once)."""
    from transformers import AutoConfig, AutoModelForCausalLM

    model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(model_dir))
    return sum(p.numel() for p in model.parameters())


def size_label(params: int) -> str:
    """``"0.27M"``, ``"1.1M"``, ``"4.2M"``: the parameter count in millions to two significant digits."""
    return f"{float(f'{params / 1e6:.2g}'):g}M"


def run_label(params: int, warm_start_steps: int) -> str:
    """A size's name in the combined summary: ``"grpo_2.4M"``, or ``"grpo_2.4M_ws400"`` for a build whose warm start
    ran other than the task recipe's ``CountdownSpec.warm_start_steps`` steps."""
    from rlvr_recipes.tiny_task.countdown import CountdownSpec

    steps = "" if warm_start_steps == CountdownSpec().warm_start_steps else f"_ws{warm_start_steps}"
    return f"grpo_{size_label(params)}{steps}"


def model_words(label: str) -> str:
    """``"grpo_2.4M"`` -> ``"2.4M-parameter model"``; ``"grpo_2.4M_ws400"`` -> ``"2.4M-parameter model (400
    warm-start steps)"``: how a claim names the model of :func:`run_label`."""
    size, _, steps = label[len("grpo_"):].partition("_ws")
    return f"{size}-parameter model" + (f" ({steps} warm-start steps)" if steps else "")


def tiny_dir_of(setup: dict[str, Any]) -> str:
    """The build a comparison ran on: its command's ``--tiny-dir``, else the task's default folder (relative to the
    working folder where it lies under it, as the lab's commands name it)."""
    import shlex

    from rlvr_recipes.launch.cpu_run import embedded_task

    option = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    option.add_argument("--tiny-dir")
    given = option.parse_known_args(shlex.split(setup["command"]))[0].tiny_dir
    if given:
        return given
    default = embedded_task(setup.get("task", "countdown")).tiny_dir
    relative = os.path.relpath(default)
    return default if relative.startswith("..") else relative


def acr_std_by_seed(runs: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Each run's std of ACR over its steps (population std, as the summary's entropy std), by seed."""
    return {str(r["seed"]): float(np.std(list(r["curves"]["acr/acr"].values())))
            for r in runs if r["curves"]["acr/acr"]}


def scale_claims(by_seed: dict[str, dict[str, dict[str, float]]],
                 early: dict[str, dict[str, dict[str, float]]]) -> list[dict[str, Any]]:
    """The claims of 000 Sec. 3.4.4 (Fig. 3) for runs of GRPO at several model sizes: for each size against the next
    smaller one, :data:`SCALE_CLAIMS` tested seed by seed (``launch.compare.paired_claim``), then early ACR against
    final accuracy over all the runs (``launch.compare.early_acr_claim``).

    ``by_seed``: ``{label: {figure: {seed: value}}}``, labels ``"grpo_<size>"`` (:func:`run_label`) from the smallest
    model up;
    ``early``: ``{"early ACR": {label: {seed: value}}, "final held-out accuracy": {label: {seed: value}}}``.
    """
    labels = list(by_seed)
    out = []
    for small, big in zip(labels, labels[1:]):
        for figure, wording, higher in SCALE_CLAIMS:
            out.append(paired_claim(
                f"GRPO on the {model_words(big)} {wording} than on the {model_words(small)}", SOURCE,
                big, by_seed[big][figure], small, by_seed[small][figure], higher))
    return out + [early_acr_claim(early)]


def collapse_parts_by_seed(runs: Sequence[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Each run's mean over its steps of the groups all right and of those all wrong (:data:`COLLAPSE_PARTS`, curves
    its ``load_run`` kept), by seed: what a model's ACR is made of. A run that logged neither is left out of that
    figure."""
    return {figure: {str(r["seed"]): float(np.mean(list(r["curves"][key].values())))
                     for r in runs if r["curves"].get(key)}
            for figure, key in COLLAPSE_PARTS}


class SizeRuns(NamedTuple):
    """One model size's comparison as ``combine`` reads it."""

    params: int  # the model's parameters
    warm_start_steps: int  # its warm start's supervised steps (the build's build.json)
    out: str  # the comparison's folder
    tiny: str  # the build it ran on
    summary: dict[str, Any]  # its summary.json
    runs: list[dict[str, Any]]  # its finished runs (``launch.compare.load_run``, with the curves of COLLAPSE_PARTS)


def combine(comparisons: Sequence[str], command: str) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """One summary of the comparisons (each of GRPO alone, on its own build, the same seeds and steps), and their
    runs by label, smallest model first.

    Raises:
        ValueError: a comparison without a summary, not of GRPO alone, or with other seeds or steps than the first,
            naming it.
    """
    sizes = []
    for out in comparisons:
        path = os.path.join(out, "summary.json")
        if not os.path.exists(path):
            raise ValueError(f"{path}: no summary (run launch.compare --out {out} first)")
        with open(path) as f:
            summary = json.load(f)
        setup = summary["setup"]
        if setup.get("methods") != ["grpo"]:
            raise ValueError(f"{path}: a comparison of {setup.get('methods')}, not of grpo alone")
        tiny = tiny_dir_of(setup)
        with open(os.path.join(tiny, "build.json")) as f:
            kind, task = task_from_settings(json.load(f))
        if kind != "countdown":
            raise ValueError(f"{os.path.join(tiny, 'build.json')}: a build of the {kind} task, not of countdown")
        sizes.append(SizeRuns(parameter_count(os.path.join(tiny, "model")), task.warm_start_steps, out, tiny, summary,
                              [load_run(spec, [key for _, key in COLLAPSE_PARTS])
                               for spec in finished_runs(out)["grpo"]]))
    first = sizes[0].summary["setup"]
    for size in sizes[1:]:
        for key in ("seeds", "first_seed", "steps", "passk_samples", "task"):
            if size.summary["setup"].get(key) != first.get(key):
                raise ValueError(f"{size.out}: {key} {size.summary['setup'].get(key)!r}, where {sizes[0].out} has "
                                 f"{first.get(key)!r}")
    by_label = {run_label(size.params, size.warm_start_steps): size
                for size in sorted(sizes, key=lambda size: (size.params, size.warm_start_steps))}
    if len(by_label) != len(sizes):
        raise ValueError(f"two comparisons of one model size and warm start: {', '.join(s.out for s in sizes)}")
    by_seed = {label: {**size.summary["figures_by_seed"]["grpo"], "ACR std over steps": acr_std_by_seed(size.runs),
                       **collapse_parts_by_seed(size.runs)}
               for label, size in by_label.items()}
    early: dict[str, dict[str, dict[str, float]]] = {"early ACR": {}, "final held-out accuracy": {}}
    for label, size in by_label.items():
        values = next(c["values"] for c in size.summary["claims"] if c["claim"] == EARLY_ACR)
        for figure in early:
            early[figure][label] = values[figure]["grpo"]
    models = {label: {"parameters": size.params, "warm_start_steps": size.warm_start_steps, "comparison": size.out,
                      "tiny_dir": size.tiny,
                      "start_passk": size.summary["start_passk"],
                      "change_from_start": size.summary["change_from_start"]["grpo"],
                      **{key: size.summary["setup"].get(key) for key in ("command", "runs_s", "cost_per_step_s",
                                                                         "median_step_s")}}
              for label, size in by_label.items()}
    setup = {key: first[key] for key in ("task", "seeds", "first_seed", "steps", "passk_samples", "overrides",
                                         "machine") if key in first}
    combined = {"setup": {**setup, "methods": list(by_label), "command": command, "models": models},
                "table": {label: size.summary["table"]["grpo"] for label, size in by_label.items()},
                "figures_by_seed": by_seed, "claims": scale_claims(by_seed, early),
                "paired_by_seed": all(size.summary["paired_by_seed"] for size in sizes)}
    return combined, {label: size.runs for label, size in by_label.items()}


def plot(runs: dict[str, list[dict[str, Any]]], path: str) -> None:
    """Fig. 3's two panels at this scale, a band per model size: ACR and held-out greedy accuracy over the steps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = method_colors(list(runs))
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, (title, key) in zip(axes, (("ACR", "acr/acr"), ("held-out greedy accuracy", "val"))):
        for label, rs in runs.items():
            _band(ax, [r["curves"][key] for r in rs], label, colors[label])
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle("GRPO by model size: mean over seeds, band = +/- 1 std")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="build the countdown task with the model at another hidden size")
    b.add_argument("--hidden-size", type=int, required=True, help="hidden size (intermediate: 4 x hidden)")
    b.add_argument("--out", required=True, help="the build's folder, for launch.compare --tiny-dir")
    b.add_argument("--warm-start-steps", type=int, help="supervised warm-start steps (default: the task's recipe, 850)")
    c = sub.add_parser("combine", help="take comparisons of GRPO on builds of different model sizes together")
    c.add_argument("comparisons", nargs="+", help="launch.compare --out folders, one a model size")
    c.add_argument("--json", required=True, help="write the combined summary here")
    c.add_argument("--figure", help="write the ACR and accuracy curves by model size here")
    args = parser.parse_args(argv)
    if args.command == "build":
        if args.warm_start_steps is not None and args.warm_start_steps < 1:
            parser.error(f"--warm-start-steps {args.warm_start_steps}: give 1 or more")
        paths = build_size(args.hidden_size, args.out, args.warm_start_steps)
        print(f"[scale] hidden {args.hidden_size}: {parameter_count(paths['model']):,} parameters in {args.out}")
        return 0
    if len(args.comparisons) < 2:
        parser.error("combine needs two comparisons or more")
    try:
        summary, runs = combine(args.comparisons, "python benchmarks/lab_model_scale.py combine "
                                + " ".join(sys.argv[2:] if argv is None else argv[1:]))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    with open(args.json, "w") as f:
        json.dump(summary, f, indent=1)
    if args.figure:
        plot(runs, args.figure)
    for label, model in summary["setup"]["models"].items():
        row = summary["table"][label]
        print(f"{label}: {model['parameters']:,} parameters, held-out greedy {row['held-out acc, start'][0]:.3f} -> "
              f"{row['held-out acc, end'][0]:.3f}, ACR {row['ACR (mean)'][0]:.3f}")
    for claim in summary["claims"]:
        print(f"{claim['verdict']:>16}: {claim['claim']}: {claim['evidence']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
