"""Run verl's real trainer on the embedded tiny task, on the CPU: one method with progress output, or many in a row.

    python -m rlvr_recipes.launch.cpu_run train  [METHOD] [--task addition|countdown] [--steps N] [--seeds N]
                                                 [--ranks R] [--out DIR] [-- KEY=VALUE ...]
    python -m rlvr_recipes.launch.cpu_run suite  METHOD[,METHOD...] [--task ...] [--steps N] [--out DIR]

``--task`` picks one of the embedded tasks (:data:`TASKS`): ``addition`` (the quick default, under ``runs/tiny``) or
``countdown`` (the CPU lab's task, docs/lab.md, under ``runs/tiny_countdown``).

``train`` builds the tiny model and data if needed (``rlvr_recipes.tiny_task.build``, under ``runs/tiny``), checks the
composed config before anything starts (:func:`preflight`: an unknown method, estimator, loss or option fails in
seconds with the key named), then runs ``python -m verl.trainer.main_ppo --config-name cpu ...`` under a timeout,
writing verl's console output to ``train.log``, its file logger to ``metrics.jsonl`` and the rollouts to
``rollouts/``, printing one line per step, and finally plotting reward and ACR (``curves.png``, :mod:`rlvr_recipes.launch.cpu_plot`)
and printing one summary line (:func:`run_summary`: start-up, s/step, reward and held-out accuracy first vs last).
``--seeds N`` runs seeds 0..N-1 one after another and plots the mean and the band across them.

``suite`` runs several methods one after another in one driver process and one Ray cluster (what ``main_ppo`` does,
minus its start-up, for each), a few steps each, and writes ``suite.json`` with each method's outcome; the
end-to-end tests use it to amortise start-up.

A METHOD is a baseline of ``rlvr_recipes/configs/baseline`` (``grpo``, ``dapo``, ``drgrpo``, ``gspo``), ``gspo_n``, any registered
advantage estimator (``agrae``, ``avspo``, ``grpo_n``, ... and verl's), or a policy loss of this package
(``cw_grpo``; ``aapo`` selects AAPO's estimator and loss together). Every run uses the trainer extension
(``trainer.v1.trainer_mode=rlvr``, set in ``rlvr_recipes/configs/cpu.yaml``) so that ``acr/*`` is logged.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from rlvr_recipes import CONFIG_DIR, IMPORT_ROOT, runs_dir

CONFIG_NAME = "cpu"
DEFAULT_TINY_DIR = os.path.join(runs_dir(), "tiny")
#: The addition warm start stops once one sample at temperature 1 is right this often on a probe of training problems.
#: 0.45 gives a start like the earlier build's (held-out greedy 0.56, sampled 0.47), on which the run's settings were
#: chosen: greedy 0.51-0.64, sampled 0.49-0.54 on the builds measured since (docs/cpu.md, "The embedded default";
#: over 12 warm-start seeds standing in for CPUs it stops at greedy 0.44-0.66:
#: benchmarks/addition_warm_start_spread.py).
WARM_START_TARGET = 0.45
#: The countdown warm start runs a fixed number of steps (``CountdownSpec.warm_start_steps``); a target above 0 only
#: switches it on, and stays 0.3 so that builds made before stay valid.
COUNTDOWN_WARM_START = 0.3
#: Steps of the default run. From the earlier build's warm start the held-out greedy accuracy peaked around step 20
#: and then drifted down (0.56 -> 0.85 -> 0.80 at steps 0/20/30), and 20 steps at lr 3e-4 rose +0.25..+0.30 in eight
#: runs; from later builds +0.01..+0.17 (nine runs, starts 0.58 and 0.64) and +0.18..+0.28 (nine runs, start 0.51), lr
#: 5e-4 no better (docs/cpu.md, "Why the rise differs from machine to machine"). Under 3 minutes on 2 cores.
DEFAULT_STEPS = 20

#: DAPO as the A-GRAE paper ran it for Table 2 (baseline/dapo_001: no dynamic sampling, binary reward; 001 App. C.2),
#: on the CPU config's settings (baseline/dapo_001 itself also sets completion 2048, 20 epochs and test_freq 7)
DAPO_001 = ["baseline=dapo", "algorithm.filter_groups.enable=false",
            "reward.reward_kwargs.overlong_buffer_cfg.enable=false"]
#: Baselines: the bodies of rlvr_recipes/configs/baseline/ (and GSPO-N, the GSPO body with the grpo_n estimator).
BASELINES: dict[str, list[str]] = {
    "grpo": ["baseline=grpo"],
    "dapo": ["baseline=dapo"],
    "drgrpo": ["baseline=drgrpo"],
    "gspo": ["baseline=gspo"],
    "gspo_n": ["baseline=gspo", "algorithm.adv_estimator=grpo_n"],
    # A-GRAE on DAPO as rlvr_recipes/configs/agrae_dapo.yaml: shaping on, dynamic sampling off (001 App. C.2), p and omega from
    # accuracy; a 3-token overlong buffer (expected length 2) so that 3- and 4-token answers are penalised here
    "agrae_dapo": ["baseline=dapo", "algorithm.adv_estimator=agrae", "algorithm.filter_groups.enable=false",
                   "algorithm.agrae.success_key=acc", "reward.reward_kwargs.overlong_buffer_cfg.len=3"],
    # 001's DAPO, and A-GRAE on it and on Dr.GRPO (001 Table 2's "+ A-GRAE" rows; alpha = 1, base/rlvr.yaml)
    "dapo_001": DAPO_001,
    "agrae_dapo_001": [*DAPO_001, "algorithm.adv_estimator=agrae"],
    "agrae_drgrpo": ["baseline=drgrpo", "algorithm.adv_estimator=agrae"],
    # GRPO and GRPO-N with 4 policy updates per batch (mini-batches of 4 of the 16 prompts): the ratio of the
    # 004 paper's batch to its mini-batch (1024 / 256, App. B.5), so later updates are off-policy and clipped
    "grpo_4mb": ["baseline=grpo", "actor_rollout_ref.actor.ppo_mini_batch_size=4"],
    "grpo_n_4mb": ["baseline=grpo", "algorithm.adv_estimator=grpo_n", "actor_rollout_ref.actor.ppo_mini_batch_size=4"],
    # GRPO trained at group sizes 4 and 2 with all else as grpo's (G = 8): the ACR paper varies G so (000 Sec. 3.4.6)
    "grpo_g4": ["baseline=grpo", "actor_rollout_ref.rollout.n=4"],
    "grpo_g2": ["baseline=grpo", "actor_rollout_ref.rollout.n=2"],
    # GRPO trained on one third of the RL prompts (TRAIN_LEVELS), with all else as grpo's: the ACR paper trains on
    # each difficulty level of MATH (000 Sec. 3.4.2-3.4.3)
    "grpo_easy": ["baseline=grpo"],
    "grpo_medium": ["baseline=grpo"],
    "grpo_hard": ["baseline=grpo"],
}
#: the methods that train on a difficulty level of the RL prompts, and their level: a third of the prompts, split by
#: the warm start's solve rate (``launch.compare.write_train_levels`` writes them beside ``train.parquet``; 000 Sec.
#: 3.4.3 splits MATH into levels by a selector model's solve rate, App. A.1), easiest first
TRAIN_LEVELS: dict[str, str] = {"grpo_easy": "easy", "grpo_medium": "medium", "grpo_hard": "hard"}
#: Policy losses by name: this package's (AAPO's loss goes with its estimator) and verl's Clip-Cov.
LOSSES: dict[str, list[str]] = {
    "cw_grpo": ["actor_rollout_ref.actor.policy_loss.loss_mode=cw_grpo"],
    "aapo": ["algorithm.adv_estimator=aapo", "actor_rollout_ref.actor.policy_loss.loss_mode=aapo"],
    # verl's Clip-Cov, the baseline CW-GRPO is compared with (003 Table 2), with verl's defaults
    "clip_cov": ["actor_rollout_ref.actor.policy_loss.loss_mode=clip_cov"],
}


@dataclass(frozen=True)
class EmbeddedTask:
    """One embedded task: where it is built, what it is called in plots, and the overrides that fit
    ``rlvr_recipes/configs/cpu.yaml`` to it (placed after the method's, so they win)."""

    name: str
    title: str
    tiny_dir: str
    overrides: tuple[str, ...] = ()


TASKS: dict[str, EmbeddedTask] = {
    "addition": EmbeddedTask("addition", "the tiny addition task", DEFAULT_TINY_DIR),
    # answers of up to 4 numbers fully parenthesised are at most 22 tokens with the end-of-sequence token; 32 leaves
    # room for longer tries and DAPO's overlong buffer (8 tokens: the penalty starts after 24)
    "countdown": EmbeddedTask("countdown", "the countdown task", os.path.join(runs_dir(), "tiny_countdown"), (
        "reward.custom_reward_function.path=pkg://rlvr_recipes.reward.countdown",
        "data.max_response_length=32",
        "reward.reward_kwargs.overlong_buffer_cfg.len=8",
        # cpu.yaml's 3e-4 (tuned on addition) lowers held-out accuracy here; 1e-4 raised held-out pass@1 by
        # 0.16-0.18 in 40 GRPO steps in each of 3 seeds (benchmarks/lab_countdown_lr.py; docs/lab.md, "GRPO on the
        # task: the learning rate")
        "actor_rollout_ref.actor.optim.lr=1e-4",
    )),
}


def embedded_task(name: str) -> EmbeddedTask:
    """The task called ``name``.

    Raises:
        ValueError: naming the task and listing the known ones.
    """
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; known: {', '.join(TASKS)}")
    return TASKS[name]


def transfer_queue_threads() -> int:
    """The thread cap TransferQueue applies to its puts and gets on this machine: its ``TQ_NUM_THREADS`` default, 8,
    lowered to the physical cores where there are fewer. TransferQueue lowers it so itself, but then logs a warning
    at every put and get (``target_num_threads 8 should not exceed total physical CPU cores 2``, from
    ``limit_pytorch_auto_parallel_threads``): about 20,600 in a comparison of two 20-step countdown runs on 2 cores,
    a sixth of its log (docs/cpu.md, "Where a step goes"). Passed as ``TQ_NUM_THREADS``, the same cap raises no
    warning."""
    import psutil

    return min(8, psutil.cpu_count(logical=False) or 1)


def cpu_environment(base: Optional[dict[str, str]] = None) -> dict[str, str]:
    """``base`` (default: this process's environment) plus what a CPU run needs in every process.

    ``VERL_PLATFORM=cpu`` activates :mod:`cpu_backend` through the plugin; ``VERL_USE_EXTERNAL_MODULES`` loads it
    before any other plugin, so the ``cpu`` platform exists before anything asks verl for its platform.
    ``TQ_NUM_THREADS`` (unless set) is :func:`transfer_queue_threads`.
    """
    env = dict(os.environ if base is None else base)
    env["VERL_PLATFORM"] = "cpu"
    modules = [m for m in env.get("VERL_USE_EXTERNAL_MODULES", "").split(",") if m and m != "rlvr_recipes.cpu_backend.plugin"]
    env["VERL_USE_EXTERNAL_MODULES"] = ",".join(["rlvr_recipes.cpu_backend.plugin", *modules])
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    env.setdefault("RAY_DEDUP_LOGS", "1")
    env.setdefault("TQ_NUM_THREADS", str(transfer_queue_threads()))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (IMPORT_ROOT, env.get("PYTHONPATH", "")) if p)
    return env


def method_overrides(method: str, estimators: Sequence[str]) -> list[str]:
    """Hydra overrides selecting ``method`` on top of ``rlvr_recipes/configs/cpu.yaml``.

    Raises:
        ValueError: naming the method and listing the known ones.
    """
    if method in BASELINES:
        return list(BASELINES[method])
    if method in LOSSES:
        return ["baseline=grpo", *LOSSES[method]]
    if method in estimators:
        return ["baseline=grpo", f"algorithm.adv_estimator={method}"]
    known = sorted(set(BASELINES) | set(LOSSES) | set(estimators))
    raise ValueError(f"unknown method {method!r}: not a baseline, loss or registered estimator; known: {', '.join(known)}")


def registered() -> tuple[list[str], list[str]]:
    """Names of verl's advantage estimators and policy losses, this package's included (imports verl)."""
    import verl  # noqa: F401  (plugins register at import)
    from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY, POLICY_LOSS_REGISTRY

    return sorted(ADV_ESTIMATOR_REGISTRY), sorted(POLICY_LOSS_REGISTRY)


def level_file(train_path: str, level: str) -> str:
    """Where the RL prompts of difficulty ``level`` (:data:`TRAIN_LEVELS`) lie: beside ``train_path``."""
    return os.path.join(os.path.dirname(train_path), f"train_{level}.parquet")


def train_file(method: str, paths: dict[str, str]) -> str:
    """The RL prompts ``method`` trains on: its level's third (:data:`TRAIN_LEVELS`) or all of ``paths["train"]``.

    Raises:
        ValueError: the level's file is not written yet (naming it and the command that writes it).
    """
    if method not in TRAIN_LEVELS:
        return paths["train"]
    path = level_file(paths["train"], TRAIN_LEVELS[method])
    if not os.path.exists(path):
        raise ValueError(f"{path}: the {TRAIN_LEVELS[method]} prompts {method} trains on are not written yet; "
                         f"python -m rlvr_recipes.launch.compare --task countdown --methods {method} writes them")
    return path


def run_overrides(
    method: str,
    paths: dict[str, str],
    out: str,
    steps: int,
    ranks: int = 1,
    extra: Sequence[str] = (),
    estimators: Sequence[str] = (),
) -> list[str]:
    """Every override of one run: the method, the data and model, sizes, logging and checkpoint folders."""
    return [
        *method_overrides(method, estimators),
        f"actor_rollout_ref.model.path={paths['model']}",
        f"data.train_files={train_file(method, paths)}",
        f"data.val_files={paths['test']}",
        f"trainer.total_training_steps={steps}",
        f"trainer.n_gpus_per_node={ranks}",
        f"trainer.experiment_name={method}",
        f"trainer.default_local_dir={os.path.join(out, 'checkpoints')}",
        f"trainer.rollout_data_dir={os.path.join(out, 'rollouts')}",
        *extra,
    ]


def compose(overrides: Sequence[str]) -> Any:
    """``rlvr_recipes/configs/cpu.yaml`` with ``overrides``, composed as ``main_ppo`` would (Hydra compose API)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
        return hydra_compose(config_name=CONFIG_NAME, overrides=list(overrides))


def preflight(config: Any) -> None:
    """Check ``config`` the way a run would fail late: unknown estimator, loss, option or file, invalid values, a data
    file without verl's columns or with a row lacking its ground truth (:func:`rlvr_recipes.trainer.checks.check_data_config`).

    Raises:
        ValueError: naming the bad key (``algorithm.adv_estimator``, ``algorithm.agrae.alpha``, ...).
    """
    from omegaconf import OmegaConf

    from rlvr_recipes.advantage.estimators import AAPOOptions, AGRAEOptions, AVSPOOptions, SignOptions, WReinforceOptions
    from rlvr_recipes.advantage.options import read_options
    from rlvr_recipes.trainer.checks import check_data_config
    from rlvr_recipes.trainer.extension import CWGRPOOptions, DiagnosticsOptions, EstimatorStateOptions
    from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY, POLICY_LOSS_REGISTRY
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    est = config.algorithm.adv_estimator
    if est not in ADV_ESTIMATOR_REGISTRY and est != "gae":
        raise ValueError(f"algorithm.adv_estimator={est!r} is not registered; known: {', '.join(sorted(ADV_ESTIMATOR_REGISTRY))}")
    loss = config.actor_rollout_ref.actor.policy_loss.loss_mode
    if loss not in POLICY_LOSS_REGISTRY:
        raise ValueError(
            f"actor_rollout_ref.actor.policy_loss.loss_mode={loss!r} is not registered; "
            f"known: {', '.join(sorted(POLICY_LOSS_REGISTRY))}"
        )
    for cls, section in ((AGRAEOptions, "agrae"), (AVSPOOptions, "avspo"), (AAPOOptions, "aapo"),
                         (SignOptions, "grpo_n"), (WReinforceOptions, "w_reinforce"),
                         (CWGRPOOptions, "cw_grpo"), (DiagnosticsOptions, "diagnostics"),
                         (EstimatorStateOptions, "estimator_state")):
        read_options(cls, config.algorithm, section)
    model = OmegaConf.select(config, "actor_rollout_ref.model.path")
    if not os.path.exists(str(model)):
        raise ValueError(f"actor_rollout_ref.model.path={model!r} does not exist")
    check_data_config(config)  # every train/val file: readable, verl's columns, a ground truth in every row
    validate_config(config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))


TINY_DIR_HELP = ("where the task is built (default: runs/tiny for addition, runs/tiny_countdown for countdown); a build "
                 "there with its own task or model settings (python -m rlvr_recipes.tiny_task.build) is used as it is")


def default_build(task: str) -> tuple[Any, Any, float]:
    """``(model, task_spec, warm_start_target)`` of ``task``'s default build, the one :func:`ensure_tiny` makes and
    whose warm start ships: a :class:`rlvr_recipes.tiny_task.build.TinyModelSpec`, a ``TaskSpec`` or
    ``CountdownSpec``, and the warm-start target."""
    from rlvr_recipes.tiny_task.build import COUNTDOWN_MODEL, TinyModelSpec
    from rlvr_recipes.tiny_task.countdown import CountdownSpec
    from rlvr_recipes.tiny_task.task import TaskSpec

    if task == "countdown":
        return COUNTDOWN_MODEL, CountdownSpec(), COUNTDOWN_WARM_START
    return TinyModelSpec(), TaskSpec(), WARM_START_TARGET


def ensure_tiny(tiny_dir: Optional[str] = None, task: str = "addition", train_warm_start: bool = False
                ) -> dict[str, str]:
    """The tiny model (warm-started), tokenizer and data of ``task`` under ``tiny_dir`` (default: the task's
    folder), built on first use with the task's defaults.

    Each task's default warm start ships with the package and is loaded, not trained
    (:func:`rlvr_recipes.tiny_task.build.shipped_warm_start`); ``train_warm_start`` trains it on this machine
    instead, giving this CPU's own build.

    A build already in ``tiny_dir`` whose task or model settings are not the defaults (one made with
    ``python -m rlvr_recipes.tiny_task.build`` or :func:`rlvr_recipes.tiny_task.build.build`, say a larger task or a
    smaller test build) is used with its own settings; only AAPO's reference cache is redone if the runs sample
    otherwise. A build with the default task and model but an older recipe is rebuilt with the defaults.

    Raises:
        ValueError: ``tiny_dir`` holds a build of another task (naming its ``build.json``).
    """
    from rlvr_recipes.reward.reference import reference_settings
    from rlvr_recipes.tiny_task.build import TinyModelSpec, build, build_settings, task_from_settings

    spec = embedded_task(task)
    # AAPO's reference cache sampled and scored as the CPU runs sample and score (the trainer refuses a mismatch)
    ref_settings = reference_settings(compose(list(spec.overrides)))
    model, task_spec, target = default_build(task)
    tiny_dir = tiny_dir or spec.tiny_dir
    stamp_path = os.path.join(tiny_dir, "build.json")
    if os.path.exists(stamp_path):
        with open(stamp_path) as f:
            stamp = json.load(f)
        kind, own_task = task_from_settings(stamp)
        if kind != task:
            raise ValueError(f"{stamp_path} holds a build of the {kind} task, not of {task}: pass --task {kind}, "
                             "or another --tiny-dir")
        defaults = build_settings(model, task_spec)
        if (stamp["model"], stamp["task"]) != (defaults["model"], defaults["task"]):
            print(f"[tiny] {tiny_dir}: a build with its own settings, used as it is", flush=True)
            return build(tiny_dir, TinyModelSpec(**stamp["model"]), own_task,
                         warm_start_target=stamp["warm_start_target"], ref_samples=stamp["ref_samples"],
                         ref_settings=ref_settings, train_warm_start=train_warm_start)
    return build(tiny_dir, model, task_spec, warm_start_target=target, ref_settings=ref_settings,
                 train_warm_start=train_warm_start)


# ---------------------------------------------------------------------------------------------------- train


def _summary_line(step: int, data: dict[str, Any], total: int, t0: float) -> str:
    parts = [f"step {step:3d}/{total}"]
    for label, key in (("reward", "critic/score/mean"), ("acr", "acr/acr"), ("entropy", "actor/entropy")):
        if key in data:
            parts.append(f"{label} {float(data[key]):.3f}")
    from rlvr_recipes.launch.cpu_plot import is_val_accuracy

    val = next((v for k, v in data.items() if is_val_accuracy(k)), None)
    if val is not None:
        parts.append(f"val acc {float(val):.3f}")
    if "timing_s/step" in data:
        parts.append(f"{float(data['timing_s/step']):.1f} s/step")
    parts.append(f"[{time.monotonic() - t0:.0f} s]")
    return "  ".join(parts)


def run_summary(metrics: dict[int, dict[str, float]], startup_s: Optional[float], window: int = 5) -> str:
    """The one line printed at the end of a run: start-up, median s/step, training reward and held-out greedy
    accuracy first vs last.

    ``metrics`` is :func:`rlvr_recipes.launch.cpu_plot.read_metrics`'s ``{step: {key: value}}``. Reward: mean of the first and
    of the last ``min(window, steps // 2)`` training steps; accuracy: the first and the last validation.
    """
    from rlvr_recipes.launch.cpu_plot import REWARD_KEY, val_accuracy

    parts = [f"start-up {startup_s:.0f} s" if startup_s is not None else "start-up ? s"]
    step_s = [d["timing_s/step"] for d in metrics.values() if "timing_s/step" in d]
    if step_s:
        parts.append(f"{statistics.median(step_s):.2f} s/step (median of {len(step_s)})")
    reward = [metrics[s][REWARD_KEY] for s in sorted(metrics) if REWARD_KEY in metrics[s]]
    if reward:
        k = min(window, max(1, len(reward) // 2))
        parts.append(f"reward {sum(reward[:k]) / k:.2f} (first {k} steps) -> {sum(reward[-k:]) / k:.2f} (last {k})")
    val = val_accuracy(metrics)
    if val:
        (s0, v0), (s1, v1) = val[0], val[-1]
        parts.append(f"held-out greedy accuracy {v0:.2f} (step {s0}) -> {v1:.2f} (step {s1}), {v1 - v0:+.2f}")
    return "; ".join(parts)


_MILESTONES = (
    ("Started a local Ray instance", "ray started"),
    ("dataloader initialized", "data loaded"),
    ("actor and ref model engine initialized", "actor/ref engines (FSDP2) initialised"),
    ("LLMServerManager:", "rollout servers up"),
    ("all initialize finished", "ready to train"),
    ("Saving checkpoint to", "checkpoint saved"),
)


def _pump(stream: Any, lines: "queue.Queue[Optional[str]]") -> None:
    """Copy ``stream`` line by line into ``lines``, then put ``None``."""
    for line in stream:
        lines.put(line)
    lines.put(None)


def _trainer_cmd(overrides: Sequence[str]) -> list[str]:
    """``python -m verl.trainer.main_ppo`` on ``rlvr_recipes/configs/cpu.yaml`` with ``overrides``."""
    return [sys.executable, "-m", "verl.trainer.main_ppo", "--config-path", CONFIG_DIR, "--config-name", CONFIG_NAME,
            *overrides]


def _start_trainer(cmd: Sequence[str], env: dict[str, str], cwd: str) -> tuple[subprocess.Popen,
                                                                              "queue.Queue[Optional[str]]"]:
    """Start ``cmd`` in its own process group, its output read line by line into a queue by a thread (so that a
    trainer that hangs without printing, e.g. waiting for Ray resources that never come, is still stopped at the
    deadline)."""
    proc = subprocess.Popen(list(cmd), cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            bufsize=1, start_new_session=True)
    lines: "queue.Queue[Optional[str]]" = queue.Queue()
    threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True).start()
    return proc, lines


def _stop_held(gate: str, proc: subprocess.Popen) -> None:
    """Stop a trainer held at the start gate ``gate`` (:mod:`rlvr_recipes.launch.start_gate`): the ``stop`` verdict, then its
    process group, in case it had not reached the gate yet."""
    from rlvr_recipes.launch import start_gate

    start_gate.open_gate(gate, start_gate.STOP)
    _terminate(proc)


def _terminate(proc: subprocess.Popen) -> None:
    """Stop the trainer's process group: SIGINT (lets Ray shut down), then SIGTERM, then SIGKILL."""
    for sig, wait in ((signal.SIGINT, 20), (signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        if proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
        except subprocess.TimeoutExpired:
            continue


def train(
    method: str,
    out: str,
    steps: int = DEFAULT_STEPS,
    ranks: int = 1,
    extra: Sequence[str] = (),
    tiny_dir: Optional[str] = None,
    timeout_s: float = 1800.0,
    plot: bool = True,
    quiet: bool = False,
    task: str = "addition",
) -> int:
    """Run ``python -m verl.trainer.main_ppo`` for ``method`` on ``task`` and return its exit code (124 on timeout).

    Progress goes to stdout (one line per step), the full console output to ``<out>/train.log``, metrics to
    ``<out>/metrics.jsonl``; the plot to ``<out>/curves.png``. The config is checked first (:func:`preflight`).
    """
    from rlvr_recipes.launch import start_gate
    from rlvr_recipes.tiny_task.build import tiny_paths

    spec = embedded_task(task)
    tiny_dir = tiny_dir or spec.tiny_dir
    extra = [*spec.overrides, *extra]

    env = cpu_environment()
    os.environ.update({k: env[k] for k in ("VERL_PLATFORM", "VERL_USE_EXTERNAL_MODULES")})
    say = (lambda *a: None) if quiet else (lambda *a: print(*a, flush=True))
    # start-up is counted from here: importing verl (~10 s) and checking the config are part of what a user waits for
    t0 = time.monotonic()
    out = os.path.abspath(out)
    os.makedirs(out, exist_ok=True)
    metrics_path = os.path.join(out, "metrics.jsonl")
    log_path = os.path.join(out, "train.log")
    env["VERL_FILE_LOGGER_PATH"] = metrics_path
    gate = os.path.join(out, ".start_gate")
    for stale in (gate, f"{gate}.tmp"):
        if os.path.exists(stale):
            os.remove(stale)
    stamp = os.path.join(tiny_dir, "build.json")
    stamp_before = os.path.getmtime(stamp) if os.path.exists(stamp) else None
    early: Optional[tuple[list[str], subprocess.Popen, "queue.Queue[Optional[str]]"]] = None
    if stamp_before is not None:
        # the tiny task is built: start the trainer now, held at the start gate (after its imports, before Ray)
        # while this process checks the config, so that the two imports of verl overlap (rlvr_recipes/launch/start_gate.py).
        # A METHOD that is no baseline or loss is taken for an estimator here; the check below decides.
        guess = run_overrides(method, tiny_paths(tiny_dir), out, steps, ranks, extra, estimators=[method])
        early = (guess, *_start_trainer(_trainer_cmd(guess), {**env, **start_gate.environment(gate)}, out))
    try:
        paths = ensure_tiny(tiny_dir, task)
        if os.path.getmtime(stamp) != stamp_before:
            t0 = time.monotonic()  # the tiny model and data were built (set-up, once): not part of the run
        estimators, _ = registered()
        overrides = run_overrides(method, paths, out, steps, ranks, extra, estimators)
        preflight(compose(overrides))
    except BaseException:
        if early is not None:
            _stop_held(gate, early[1])
        raise
    cmd = _trainer_cmd(overrides)
    if early is not None and early[0] != overrides:  # the guess above went wrong: start the checked command instead
        _stop_held(gate, early[1])
        early = None
    if early is None:
        proc, lines = _start_trainer(cmd, env, out)
    else:
        _, proc, lines = early
        start_gate.open_gate(gate, start_gate.GO)
    say(f"[quickstart] {method} on {spec.title}: {steps} steps, {ranks} rank(s); log {log_path}")
    say("[quickstart] " + " ".join(shlex.quote(c) for c in cmd[1:]))
    say(f"[quickstart] config checked [{time.monotonic() - t0:.0f} s]")
    ready_s: Optional[float] = None
    printed = 0

    def report_new_steps() -> None:
        nonlocal printed
        if not os.path.exists(metrics_path):
            return
        with open(metrics_path) as f:
            rows = [x for x in f.readlines() if x.endswith("\n")]
        for rec in map(json.loads, rows[printed:]):
            say("[quickstart] " + _summary_line(rec["step"], rec["data"], steps, t0))
        printed = len(rows)

    with open(log_path, "w") as log:
        try:
            while True:
                remaining = timeout_s - (time.monotonic() - t0)
                if remaining <= 0:
                    raise TimeoutError
                try:
                    line = lines.get(timeout=min(remaining, 5.0))
                except queue.Empty:
                    continue
                if line is None:  # the trainer closed its output: it is exiting
                    break
                log.write(line)
                for needle, label in _MILESTONES:
                    if needle in line:
                        say(f"[quickstart] {label} [{time.monotonic() - t0:.0f} s]")
                if ready_s is None and "all initialize finished" in line:
                    ready_s = time.monotonic() - t0
                if "step:" in line or "Training Progress" in line:
                    report_new_steps()
            code = proc.wait(timeout=max(1.0, timeout_s - (time.monotonic() - t0)))
            report_new_steps()
        except (TimeoutError, subprocess.TimeoutExpired):
            say(f"[quickstart] timed out after {timeout_s:.0f} s; stopping the trainer (a run that stops printing "
                "is usually waiting for Ray resources: ray_kwargs.ray_init.num_cpus/num_gpus, "
                "transfer_queue.backend.SimpleStorage.num_data_storage_units; see docs/cpu.md)")
            _terminate(proc)
            code = 124
        except KeyboardInterrupt:
            _terminate(proc)
            raise
    if os.path.exists(gate):
        os.remove(gate)
    if code != 0:
        with open(log_path) as f:
            tail = f.readlines()[-40:]
        say(f"[quickstart] the trainer exited with code {code}; last lines of {log_path}:")
        say("".join(tail))
        return code
    if os.path.exists(metrics_path):
        from rlvr_recipes.launch.cpu_plot import plot_run, read_metrics

        with open(os.path.join(out, "startup.json"), "w") as f:
            json.dump({"startup_s": ready_s, "total_s": time.monotonic() - t0}, f)
        if plot:
            png, _ = plot_run(out, title=f"{method} on {spec.title} (CPU)")
            say(f"[quickstart] plot {png}; metrics {metrics_path}")
        say(f"[quickstart] done in {time.monotonic() - t0:.0f} s: {run_summary(read_metrics(metrics_path), ready_s)}")
    return code


def train_seeds(method: str, out: str, seeds: int, steps: int = DEFAULT_STEPS, ranks: int = 1,
                extra: Sequence[str] = (), tiny_dir: Optional[str] = None, timeout_s: float = 1800.0,
                task: str = "addition") -> int:
    """:func:`train` once per seed ``0..seeds-1`` (``data.seed`` = ``actor_rollout_ref.rollout.seed`` = seed; the
    warm start is shared) into ``<out>/seed<k>``, then ``<out>/curves.png`` with the mean and the min-max band
    across seeds. Returns the first non-zero exit code, else 0."""
    from rlvr_recipes.launch.cpu_plot import plot_seeds

    runs = []
    for seed in range(seeds):
        run_dir = os.path.join(out, f"seed{seed}")
        print(f"[quickstart] seed {seed + 1}/{seeds}", flush=True)
        code = train(method, run_dir, steps, ranks, [f"data.seed={seed}", f"actor_rollout_ref.rollout.seed={seed}",
                                                     *extra], tiny_dir, timeout_s, task=task)
        if code != 0:
            return code
        runs.append(run_dir)
    png, summary = plot_seeds(runs, os.path.join(out, "curves.png"),
                              title=f"{method} on {embedded_task(task).title} (CPU), {seeds} seeds")
    print(f"[quickstart] {summary}", flush=True)
    print(f"[quickstart] plot {png}", flush=True)
    return 0


# ---------------------------------------------------------------------------------------------------- suite


def _release_run_resources(timeout_s: float = 60.0) -> None:
    """After one run of a suite: remove the placement groups it left (they outlive its TaskRunner) and wait until
    its rollout servers are gone and every logical GPU is free again, so that the next run can be placed."""
    import ray
    from ray.util.placement_group import PlacementGroup, remove_placement_group

    for pg_id, info in ray.util.placement_group_table().items():
        if info.get("state") != "REMOVED":
            remove_placement_group(PlacementGroup(ray.PlacementGroupID(bytes.fromhex(pg_id))))
    deadline = time.monotonic() + timeout_s
    total_gpus = ray.cluster_resources().get("GPU", 0)
    while time.monotonic() < deadline:
        servers = [a for a in ray.util.list_named_actors() if a.startswith("hf_server")]
        if not servers and ray.available_resources().get("GPU", 0) >= total_gpus:
            return
        time.sleep(0.5)


#: Tries of a run whose workers lost the race for their rendezvous port, before its error is raised. verl picks the
#: port in a Ray task (``get_master_addr_port``: bind port 0, close) and the trainer's worker binds it later; in
#: between another process can take it, and torch's ``TCPStore`` then fails with EADDRINUSE at the run's start.
#: It stopped a comparison at its fifth run (docs/lab.md, "pass@k up to k = 256"), so a run in a cluster retries.
PORT_RACE_TRIES = 3


def lost_port_race(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception it was raised from) is torch's failure to listen on a port already in use;
    a Ray task error carries the remote traceback in its text."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        text = f"{type(exc).__name__}: {exc}"
        if "EADDRINUSE" in text or "address already in use" in text.lower():
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def run_with_port_retry(train: Callable[[], Any], clean: Callable[[], None], say: Callable[[str], None], label: str,
                        tries: int = PORT_RACE_TRIES) -> Any:
    """``train()``, run again (after ``clean()`` removes what the failed try left) when it fails because its workers
    lost the race for their rendezvous port (:func:`lost_port_race`), at most ``tries`` times in all; any other
    error, or the last try's, is raised."""
    for attempt in range(1, tries + 1):
        try:
            return train()
        except Exception as exc:
            if attempt == tries or not lost_port_race(exc):
                raise
            say(f"{label}: try {attempt} of {tries} failed, the workers' rendezvous port was taken by another "
                "process (EADDRINUSE); running it again")
            clean()
    raise AssertionError("unreachable")


def run_then_release(run: Callable[[], None], release: Callable[[], None]) -> None:
    """``run()``, then ``release()`` the cluster's resources for the next run or a retry, whether the run ended or
    failed. Not after an interrupt (Ctrl-C, ``SystemExit``): the process is ending and Ray's shutdown takes the run's
    actors with it, while :func:`_release_run_resources` would wait its full minute for rollout servers that the
    interrupted TaskRunner still holds (measured: Ctrl-C took 64 s to end a comparison)."""
    try:
        run()
    except Exception:
        release()
        raise
    release()


#: This process's one TaskRunner actor and the Ray node it lives on (:func:`shared_task_runner`); empty until a run.
_SHARED_RUNNER: dict[str, Any] = {}


def _reusable_task_runner_class() -> type:
    """verl's ``TaskRunnerV1`` that can run again: after each run it drops the trainer and the agent-loop manager, so
    that the actors they hold (trainer workers, rollout servers, agent-loop and reward workers) lose their last
    handle and Ray ends them, as it did when the TaskRunner's process ended with its run."""
    import gc

    from verl.trainer.main_ppo import TaskRunnerV1

    class ReusableTaskRunner(TaskRunnerV1.__ray_actor_class__):  # type: ignore[name-defined,misc]
        def run(self, config: Any) -> None:
            try:
                super().run(config)
            finally:
                self.trainer = self.agent_loop_manager = self.config = None
                gc.collect()

    return ReusableTaskRunner


def shared_task_runner() -> Any:
    """The TaskRunner actor every run of this process's Ray cluster runs in (one started per cluster).

    ``main_ppo`` starts a TaskRunner actor for each run. Its process is a Ray worker that imports verl before it
    can take the run's config: 11 s of every run's 47 s start-up on the 2-core machine (docs/lab.md, "Where a lab
    run's time goes"). Sharing one keeps the imports and pays that once. A seed stays a replay: a run draws from
    generators seeded by its config, not from the process's global state (``tests/test_e2e_cpu.py``: the methods on
    GRPO's body that run after GRPO, in its TaskRunner, draw GRPO's step-1 answers). A run that fails ends the actor
    (:func:`drop_shared_task_runner`), so that the next run or a retry starts from a fresh process."""
    import ray

    node = ray.get_runtime_context().get_node_id()
    if _SHARED_RUNNER.get("node") != node:
        _SHARED_RUNNER.update(node=node, actor=ray.remote(_reusable_task_runner_class()).remote())
    return _SHARED_RUNNER["actor"]


def drop_shared_task_runner() -> None:
    """End the shared TaskRunner actor, if any; Ray ends the actors of its run with it (they are owned by it)."""
    import ray

    actor = _SHARED_RUNNER.pop("actor", None)
    _SHARED_RUNNER.clear()
    if actor is not None and ray.is_initialized():
        ray.kill(actor)


class SharedTaskRunner:
    """What ``run_ppo`` takes as ``task_runner_class``: its ``remote()`` hands out :func:`shared_task_runner`."""

    @staticmethod
    def remote() -> Any:
        return shared_task_runner()


def start_cluster_runs(metrics_root: str) -> None:
    """Prepare this process to run trainers in one Ray cluster (:func:`cluster_run`): the CPU environment, and verl's
    file logger writing ``<metrics_root>/<project>/<experiment>.jsonl``. Call before the first run (Ray starts
    with it and keeps this environment)."""
    env = cpu_environment()
    os.environ.update({k: env[k] for k in ("VERL_PLATFORM", "VERL_USE_EXTERNAL_MODULES", "TOKENIZERS_PARALLELISM",
                                        "TQ_NUM_THREADS")})
    os.environ["VERL_FILE_LOGGER_ROOT"] = os.path.abspath(metrics_root)


def cluster_run(method: str, run_dir: str, paths: dict[str, str], steps: int, extra: Sequence[str],
                estimators: Sequence[str], experiment: str) -> Any:
    """One training run in this process: ``main_ppo``'s ``run_ppo`` on the composed, checked config, in the cluster's
    shared TaskRunner actor (:func:`shared_task_runner`). The first run starts Ray and that actor; later runs reuse
    both, so their start-up is paid once. Afterwards the
    run's placement groups and servers are released (:func:`_release_run_resources`). Metrics go to verl's file
    logger under the root given to :func:`start_cluster_runs`, as ``<project>/<experiment>.jsonl``. A run whose
    workers lost the race for their rendezvous port is run again from an empty ``run_dir``
    (:func:`run_with_port_retry`). Returns the composed config."""
    from verl.trainer.main_ppo import run_ppo
    from verl.utils.device import auto_set_device

    config = compose(run_overrides(method, paths, run_dir, steps, 1, [*extra, f"trainer.experiment_name={experiment}"],
                                   estimators))
    auto_set_device(config)
    preflight(config)

    def train() -> None:
        try:
            run_then_release(lambda: run_ppo(config, task_runner_class=SharedTaskRunner), _release_run_resources)
        except Exception:
            drop_shared_task_runner()
            raise

    # a retry starts from an empty run_dir: verl would resume from a checkpoint the failed try left there (its
    # metrics file is opened for writing afresh by verl's file logger)
    run_with_port_retry(train, lambda: shutil.rmtree(run_dir, ignore_errors=True), lambda s: print(s, flush=True),
                        f"[cluster run] {experiment}")
    return config


def suite(methods: Sequence[str], out: str, steps: int = 2, extra: Sequence[str] = (),
          tiny_dir: Optional[str] = None, task: str = "addition") -> dict[str, dict[str, Any]]:
    """Run every method in ``methods`` for ``steps`` steps in this process (one Ray cluster), in order.

    Each run is :func:`cluster_run`; its metrics go to ``<out>/rlvr-cpu/<method>.jsonl``. Returns (and writes to
    ``<out>/suite.json``) ``{method: {"ok", "seconds", "error", "metrics"}}``; a failing method is recorded and the
    next one runs.
    """
    out = os.path.abspath(out)
    os.makedirs(out, exist_ok=True)
    start_cluster_runs(out)
    paths = ensure_tiny(tiny_dir, task)
    extra = [*embedded_task(task).overrides, *extra]
    estimators, _ = registered()

    results: dict[str, dict[str, Any]] = {}
    for method in methods:
        t0 = time.monotonic()
        entry: dict[str, Any] = {"ok": False, "error": None, "metrics": None}
        try:
            print(f"[suite] {method}: start", flush=True)
            cluster_run(method, os.path.join(out, method), paths, steps, extra, estimators, experiment=method)
            entry["ok"] = True
        except Exception as exc:  # recorded, the suite goes on
            entry["error"] = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=8)}"
        metrics = os.path.join(out, "rlvr-cpu", f"{method}.jsonl")
        entry["metrics"] = metrics if os.path.exists(metrics) else None
        entry["seconds"] = round(time.monotonic() - t0, 1)
        results[method] = entry
        print(f"[suite] {method}: {'ok' if entry['ok'] else 'FAILED'} in {entry['seconds']} s", flush=True)
        with open(os.path.join(out, "suite.json"), "w") as f:
            json.dump(results, f, indent=1)
    return results


# ---------------------------------------------------------------------------------------------------- cli


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_train = sub.add_parser("train", help="one method, with progress output and a plot")
    p_train.add_argument("method", nargs="?", default="grpo")
    p_train.add_argument("--steps", type=int, default=DEFAULT_STEPS)
    p_train.add_argument("--ranks", type=int, default=1, help="FSDP2 ranks (gloo), one logical GPU each")
    p_train.add_argument("--out", default=None, help="default: runs/quickstart/<method> (countdown: runs/countdown/<method>)")
    p_train.add_argument("--task", default="addition", choices=sorted(TASKS), help="embedded task (default: addition)")
    p_train.add_argument("--tiny-dir", default=None, help=TINY_DIR_HELP)
    p_train.add_argument("--timeout", type=float, default=1800.0, help="seconds before the trainer is stopped")
    p_train.add_argument("--seeds", type=int, default=1,
                         help="runs with seeds 0..N-1 under <out>/seed<k>, plotted with a band across seeds")
    p_suite = sub.add_parser("suite", help="several methods, few steps each, one driver")
    p_suite.add_argument("methods", help="comma-separated")
    p_suite.add_argument("--steps", type=int, default=2)
    p_suite.add_argument("--out", required=True)
    p_suite.add_argument("--task", default="addition", choices=sorted(TASKS))
    p_suite.add_argument("--tiny-dir", default=None, help=TINY_DIR_HELP)
    argv = list(sys.argv[1:] if argv is None else argv)
    # Hydra overrides: everything after "--", and any KEY=VALUE word
    overrides = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    overrides = [a for a in argv if "=" in a and not a.startswith("-")] + overrides
    args = parser.parse_args([a for a in argv if not ("=" in a and not a.startswith("-"))])
    args.overrides = overrides
    try:
        if args.cmd == "train":
            folder = "quickstart" if args.task == "addition" else args.task
            out = args.out or os.path.join(runs_dir(), folder, args.method)
            if args.seeds > 1:
                return train_seeds(args.method, out, args.seeds, args.steps, args.ranks, args.overrides,
                                   args.tiny_dir, args.timeout, task=args.task)
            return train(args.method, out, args.steps, args.ranks, args.overrides, args.tiny_dir, args.timeout,
                         task=args.task)
        results = suite([m for m in args.methods.split(",") if m], args.out, args.steps, args.overrides,
                        args.tiny_dir, task=args.task)
        return 0 if all(r["ok"] for r in results.values()) else 1
    except ValueError as exc:  # a bad method, key or value: say which, no traceback
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
