"""Pre-flight for a cluster shape: will a recipe start on ``nnodes`` x ``gpus-per-node`` GPUs?

    python -m rlvr_recipes.launch.preflight --recipe aapo --nnodes 2 --gpus-per-node 8 [-- KEY=VALUE ...]

Composes the recipe as verl's ``main_ppo`` composes it, with ``trainer.nnodes`` and ``trainer.n_gpus_per_node`` set
to the shape, and checks it without Ray or a GPU:

1. verl's own ``validate_config`` (verl/utils/config.py:88; it runs in ``main_ppo``'s driver before Ray starts),
   called, not re-implemented: the total batch against the GPU count (config.py:120-127), the actor's batch sizes
   (workers/config/actor.py:222-241), the micro-batch keys;
2. the batch arithmetic verl 0.9.1's workers apply at the first step, which ``validate_config`` does not check
   (re-implemented here, each rule citing the line of verl that asserts it): the batch padded to a multiple of
   lcm(data-parallel size, mini-batch rows) (trainer/ppo/v1/trainer_base.py:1589-1621), the mini-batch split over
   the data-parallel ranks (workers/engine_workers.py:267-270), each rank's rows split into micro-batches of
   ``*_micro_batch_size_per_gpu`` (workers/engine/utils.py:122-127) for the old log-probs, the reference log-probs and
   the actor update, the token budget of dynamic micro-batches (utils/seqlen_balancing.py:384), the rollout's
   tensor-parallel groups (workers/engine_workers.py:655-661, workers/rollout/replica.py:113-116);
3. verl's installed version against the one this package was written for
   (:func:`rlvr_recipes.launch.verl_version.check_verl_version`).

Prints ``pass`` (with a line per warning: verl pads the batch with filler rows) or one line per failure naming the
key, its value and a value that works, then the overrides that make the recipe start on that shape (checked again by
the same functions). Exit status 0 on pass, 1 on a failure, 2 on bad input. The launchers run it before anything is
submitted (``--nnodes``/``--gpus-per-node``; ``PREFLIGHT=0`` skips it). Model, data and reward files are not read:
paths are the cluster's.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import math
import os
import sys
import warnings
from dataclasses import dataclass
from typing import Any, Optional, Sequence

#: the paths the recipes read from the environment; placeholders when unset (the pre-flight reads no file)
PATH_VARIABLES = ("MODEL_PATH", "TRAIN_FILES", "VAL_FILES")
#: overrides applied to find a working shape, at most this many rounds
FIX_ROUNDS = 4

ACTOR = "actor_rollout_ref.actor"
ROLLOUT = "actor_rollout_ref.rollout"
REF = "actor_rollout_ref.ref"


@dataclass(frozen=True)
class Finding:
    """One check's outcome: ``key`` holds ``value``; ``fix`` works (None: no single value does); ``fatal`` stops
    verl at start (else a warning)."""

    key: str
    value: Any
    fix: Any
    message: str
    fatal: bool = True

    def line(self) -> str:
        head = "FAIL" if self.fatal else "warning"
        tail = f"; set {self.key}={self.fix}" if self.fix is not None else ""
        return f"{head}: {self.message}{tail}"


# --------------------------------------------------------------------------------------------------------------
# composing


def compose(recipe: str, overrides: Sequence[str] = ()) -> Any:
    """The recipe composed as ``main_ppo`` composes it (Hydra's compose API on the package's config directory)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    from rlvr_recipes import CONFIG_DIR

    for name in PATH_VARIABLES:
        os.environ.setdefault(name, f"<{name} on the cluster>")
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
        return hydra_compose(config_name=recipe, overrides=list(overrides))


def shape_overrides(nnodes: int, gpus_per_node: int) -> list[str]:
    """The overrides the launchers pass for a shape."""
    return [f"trainer.nnodes={nnodes}", f"trainer.n_gpus_per_node={gpus_per_node}"]


def updated(config: Any, values: dict[str, Any]) -> Any:
    """A copy of ``config`` with ``values`` (dotted key -> value) set."""
    from omegaconf import OmegaConf, open_dict

    config = copy.deepcopy(config)  # the caller's config stays as it was
    with open_dict(config):
        for key, value in values.items():
            OmegaConf.update(config, key, value, merge=True)
    return config


# --------------------------------------------------------------------------------------------------------------
# checks


def verl_validate(config: Any) -> Optional[str]:
    """verl's ``validate_config`` exactly as ``main_ppo`` calls it (trainer/main_ppo.py:177); its message or None."""
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    try:
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # need_critic's "Disabled critic" notice
            validate_config(config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))
    except (AssertionError, ValueError, TypeError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def largest_divisor(count: int, at_most: int) -> int:
    """The largest divisor of ``count`` that is at most ``at_most`` (a micro-batch size that splits ``count``)."""
    return max(d for d in range(1, max(1, min(count, at_most)) + 1) if count % d == 0)


def _get(config: Any, key: str, default: Any = None) -> Any:
    from omegaconf import OmegaConf

    return OmegaConf.select(config, key, default=default)


def _micro(key: str, rows: int, micro: Optional[int], where: str, cite: str) -> list[Finding]:
    if micro is None or int(micro) <= 0 or rows % int(micro) == 0:
        return []
    return [Finding(key, micro, largest_divisor(rows, int(micro)),
                    f"{where}: {rows} rows per GPU do not split into micro-batches of {key}={micro} ({cite})")]


def worker_batch_checks(config: Any) -> list[Finding]:
    """The batch arithmetic verl 0.9.1's FSDP workers apply at the first step (not in ``validate_config``)."""
    from verl.trainer.ppo.utils import need_critic, need_reference_policy

    findings: list[Finding] = []
    n_gpus = int(config.trainer.nnodes) * int(config.trainer.n_gpus_per_node)
    actor = config.actor_rollout_ref.actor
    if str(actor.strategy) not in ("fsdp", "fsdp2"):
        return [Finding(f"{ACTOR}.strategy", actor.strategy, None,
                        "the worker batch arithmetic is replayed for FSDP only; not checked", fatal=False)]
    n = int(config.actor_rollout_ref.rollout.n)
    dynamic = bool(actor.use_dynamic_bsz)
    # data-parallel size of the actor: world size / Ulysses sequence-parallel size (engine/fsdp/transformer_impl.py:652)
    sp = int(_get(config, f"{ACTOR}.ulysses_sequence_parallel_size", 1) or 1)
    sp = max(sp, int(_get(config, f"{ACTOR}.fsdp_config.ulysses_sequence_parallel_size", 1) or 1))
    if n_gpus % sp:
        return [Finding(f"{ACTOR}.ulysses_sequence_parallel_size", sp, largest_divisor(n_gpus, sp),
                        f"{n_gpus} GPUs do not split into sequence-parallel groups of {sp}")]
    dp = n_gpus // sp
    rows = int(config.data.train_batch_size) * n
    mini_rows = int(actor.ppo_mini_batch_size) * n  # trainer_base.py:1829-1830
    # trainer_base.py:1589-1606, 1621: the batch is padded with filler rows to a multiple of lcm(dp, mini rows)
    multiple = math.lcm(dp, mini_rows)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        critic = need_critic(config)
    if critic:
        findings.append(Finding("critic.enable", True, None, "critic batch sizes are not replayed here", fatal=False))
        multiple = math.lcm(multiple, int(config.critic.ppo_mini_batch_size) * n)
    padded = -(-rows // multiple) * multiple
    if padded != rows and rows % n_gpus == 0:  # else validate_config already stops the run (config.py:124)
        findings.append(Finding(
            "data.train_batch_size", config.data.train_batch_size, None,
            f"verl pads each step's {rows} rows with {padded - rows} filler rows to {padded}, a multiple of "
            f"lcm({dp} data-parallel ranks, {mini_rows} mini-batch rows) (trainer/ppo/v1/trainer_base.py:1589-1621)",
            fatal=False))
    # engine_workers.py:267-270: the mini-batch splits evenly over the data-parallel ranks
    if mini_rows % dp:
        step = dp // math.gcd(n, dp)  # mini-batch prompts whose rows split over dp
        findings.append(Finding(
            f"{ACTOR}.ppo_mini_batch_size", actor.ppo_mini_batch_size,
            max(step, round(int(actor.ppo_mini_batch_size) / step) * step),
            f"{mini_rows} mini-batch rows ({actor.ppo_mini_batch_size} prompts x {n}) do not split over {dp} "
            f"data-parallel ranks (verl/workers/engine_workers.py:267)"))
        return findings
    per_rank = padded // dp
    mini_per_rank = mini_rows // dp
    cite = "verl/workers/engine/utils.py:124"
    bypass = bool(_get(config, "algorithm.rollout_correction.bypass_mode", False))
    if not dynamic:
        if not bypass:  # old log-probs of every row (trainer_base.py:1634-1657), micro-batches engine_workers.py:623
            findings += _micro(f"{ROLLOUT}.log_prob_micro_batch_size_per_gpu", per_rank,
                               config.actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu,
                               "old log-probs", cite)
        if need_reference_policy(config):  # reference log-probs (engine_workers.py:546-549, 582-584)
            findings += _micro(f"{REF}.log_prob_micro_batch_size_per_gpu", per_rank,
                               config.actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu,
                               "reference log-probs", cite)
        findings += _micro(f"{ACTOR}.ppo_micro_batch_size_per_gpu", mini_per_rank, actor.ppo_micro_batch_size_per_gpu,
                           "actor update", cite)
    else:  # utils/seqlen_balancing.py:384: a micro-batch's token budget holds the longest sequence
        longest = int(config.data.max_prompt_length) + int(config.data.max_response_length)
        budgets = [(f"{ACTOR}.ppo_max_token_len_per_gpu", actor.ppo_max_token_len_per_gpu)]
        if not bypass:
            budgets.append((f"{ROLLOUT}.log_prob_max_token_len_per_gpu",
                            config.actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu))
        if need_reference_policy(config):
            budgets.append((f"{REF}.log_prob_max_token_len_per_gpu",
                            config.actor_rollout_ref.ref.log_prob_max_token_len_per_gpu))
        for key, budget in budgets:
            if budget is not None and int(budget) * sp < longest:
                findings.append(Finding(key, budget, -(-longest // sp),
                                        f"a dynamic micro-batch of {budget} x {sp} tokens cannot hold a sequence of "
                                        f"{longest} tokens (verl/utils/seqlen_balancing.py:384)"))
    # rollout: tensor x data x pipeline parallel groups tile the GPUs (engine_workers.py:655-661, replica.py:113-116)
    rollout = config.actor_rollout_ref.rollout
    tp = int(rollout.tensor_model_parallel_size)
    group = tp * int(_get(config, f"{ROLLOUT}.data_parallel_size", 1) or 1)
    group *= int(_get(config, f"{ROLLOUT}.pipeline_model_parallel_size", 1) or 1)
    per_node = int(config.trainer.n_gpus_per_node)
    if n_gpus % group or group % min(per_node, group):
        findings.append(Finding(f"{ROLLOUT}.tensor_model_parallel_size", tp, largest_divisor(per_node, tp),
                                f"rollout groups of {group} GPUs do not tile {config.trainer.nnodes} x {per_node} GPUs "
                                "(verl/workers/engine_workers.py:660, verl/workers/rollout/replica.py:114)"))
    return findings


def _batch_fix(config: Any, message: str) -> list[Finding]:
    """validate_config's total-batch assertion (config.py:124) as a change of ``data.train_batch_size``: the nearest
    prompt count whose rows split over the GPUs (the mini-batch follows when it equals the batch)."""
    n_gpus = int(config.trainer.nnodes) * int(config.trainer.n_gpus_per_node)
    n = int(config.actor_rollout_ref.rollout.n)
    tb, mini = int(config.data.train_batch_size), int(config.actor_rollout_ref.actor.ppo_mini_batch_size)
    step = n_gpus // math.gcd(n, n_gpus)  # prompts whose rows divide by n_gpus are the multiples of this
    fix = max(step, round(tb / step) * step)
    findings = [Finding("data.train_batch_size", tb, fix,
                        f"verl's validate_config: {message.split(': ', 1)[-1]} ({tb} prompts x {n})")]
    if mini == tb:
        findings.append(Finding(f"{ACTOR}.ppo_mini_batch_size", mini, fix, "one mini-batch per step, as the recipe"))
    return findings


def check(config: Any) -> list[Finding]:
    """Every finding for the (already shaped) ``config``: verl's ``validate_config``, then the worker arithmetic."""
    findings: list[Finding] = []
    message = verl_validate(config)
    if message is not None:
        if "real_train_batch_size" in message:  # the workers' split of a batch verl refuses is moot
            return _batch_fix(config, message)
        else:
            findings.append(Finding("(validate_config)", None, None, f"verl's validate_config: {message}"))
    try:
        findings += worker_batch_checks(config)
    except (AttributeError, TypeError, ValueError) as exc:  # a key this check reads is missing or not a number
        findings.append(Finding("(worker batch arithmetic)", None, None, f"cannot replay: {exc}"))
    return findings


def working_overrides(config: Any, findings: list[Finding]) -> tuple[list[str], list[Finding]]:
    """Apply the fixes the findings name, re-check, repeat; the overrides and what still fails."""
    fixes: dict[str, Any] = {}
    for _ in range(FIX_ROUNDS):
        fatal = [f for f in findings if f.fatal]
        if not fatal or any(f.fix is None for f in fatal):
            break
        for f in fatal:
            fixes[f.key] = f.fix
        findings = check(updated(config, fixes))
    return [f"{k}={v}" for k, v in fixes.items()], [f for f in findings if f.fatal]


def verl_version_problem(recipe: str, allow_other: bool) -> Optional[str]:
    """The installed verl against the version the recipe was checked against
    (:func:`rlvr_recipes.launch.verl_version.check_verl_version`: it raises on a mismatch, and warns instead with
    ``allow_other`` or ``RLVR_ALLOW_VERL_VERSION=1``); the message, or None."""
    from rlvr_recipes.launch.verl_version import VerlVersionError, check_verl_version

    try:
        check_verl_version(recipe, allow_other)
    except (VerlVersionError, KeyError, FileNotFoundError, ValueError) as exc:
        return str(exc.args[0] if exc.args else exc)
    return None


def run(recipe: str, nnodes: int, gpus_per_node: int, overrides: Sequence[str] = (), allow_other_verl: bool = False,
        config: Any = None, out=None, check_version: bool = True) -> int:
    """The pre-flight of ``recipe`` on ``nnodes`` x ``gpus_per_node``; prints the verdict, returns the exit status.

    ``config``: the recipe already composed with ``overrides`` (tests compose once and vary the shape); else it is
    composed here with ``overrides`` and the shape, as the launchers' command line composes it."""
    out = out or sys.stdout
    problem = verl_version_problem(recipe, allow_other_verl) if check_version else None
    if problem:
        print(f"FAIL: {problem}", file=out)
        return 1
    if config is None:
        shaped = compose(recipe, [*overrides, *shape_overrides(nnodes, gpus_per_node)])
    else:
        shaped = updated(config, {"trainer.nnodes": nnodes, "trainer.n_gpus_per_node": gpus_per_node})
    findings = check(shaped)
    shape = f"{recipe} on {nnodes} x {gpus_per_node} GPUs"
    for f in findings:
        print(f"{f.line()}", file=out)
    if not any(f.fatal for f in findings):
        print(f"pass: {shape}", file=out)
        return 0
    fixes, left = working_overrides(shaped, findings)
    if fixes and not left:
        print(f"fix: {shape} starts with: {' '.join(fixes)}", file=out)
    else:
        print(f"no single change found for {shape}; see the lines above", file=out)
    return 1


#: the shapes of the table in docs/cluster.md (nodes, GPUs per node)
TABLE_SHAPES = ((1, 1), (1, 4), (1, 8), (2, 8), (4, 8), (8, 8))
#: what every launcher adds to the command line (rlvr_recipes/launch/common.sh: --tp, default 1)
LAUNCHER_OVERRIDES = ("actor_rollout_ref.rollout.tensor_model_parallel_size=1",)


def verdict(recipe: str, config: Any, nnodes: int, gpus_per_node: int) -> tuple[str, str]:
    """``pass``, or the last part of the first failing key, and the pre-flight's report (verl version not checked)."""
    shaped = updated(config, {"trainer.nnodes": nnodes, "trainer.n_gpus_per_node": gpus_per_node})
    findings = check(shaped)
    out = io.StringIO()
    status = run(recipe, nnodes, gpus_per_node, config=config, out=out, check_version=False)
    fatal = [f for f in findings if f.fatal]
    return ("pass" if status == 0 else fatal[0].key.split(".")[-1]), out.getvalue()


def recipe_names() -> list[str]:
    """Every recipe config (rlvr_recipes/configs/*.yaml but the CPU overlay), sorted."""
    from rlvr_recipes import CONFIG_DIR

    return sorted(f[:-5] for f in os.listdir(CONFIG_DIR) if f.endswith(".yaml") and f != "cpu.yaml")


def shapes_table(recipes: Sequence[str]) -> str:
    """The markdown table of docs/cluster.md: each recipe (as the launchers compose it) on :data:`TABLE_SHAPES`."""
    head = "| recipe | " + " | ".join(f"{n} x {g}" for n, g in TABLE_SHAPES) + " |"
    lines = [head, "| --- |" + " --- |" * len(TABLE_SHAPES)]
    for recipe in recipes:
        config = compose(recipe, LAUNCHER_OVERRIDES)
        cells = [verdict(recipe, config, n, g)[0] for n, g in TABLE_SHAPES]
        lines.append(f"| `{recipe}` | " + " | ".join(c if c == "pass" else f"`{c}`" for c in cells) + " |")
    return "\n".join(lines)


def quiet_import_verl() -> None:
    """``import verl`` (which loads this package's plugin) without its notices about engines and accelerators this
    machine lacks: the pre-flight needs neither."""
    import logging

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        previous = logging.root.manager.disable
        logging.disable(logging.WARNING)
        try:
            import verl  # noqa: F401
        finally:
            logging.disable(previous)


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    overrides: list[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, overrides = argv[:at], argv[at + 1:]
    parser = argparse.ArgumentParser(prog="python -m rlvr_recipes.launch.preflight", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--recipe", help="a config in rlvr_recipes/configs (e.g. agrae_grpo)")
    parser.add_argument("--table", action="store_true", help="print docs/cluster.md's table: every recipe on "
                        "1x1 ... 8x8 GPUs")
    parser.add_argument("--nnodes", type=int, default=1)
    parser.add_argument("--gpus-per-node", type=int, default=8)
    parser.add_argument("--allow-other-verl", action="store_true", help="only warn when verl is not the version "
                        "this package was written for")
    args, rest = parser.parse_known_args(argv)
    overrides = [a for a in rest if "=" in a] + overrides
    bad = [a for a in rest if "=" not in a]
    if bad:
        parser.error(f"unknown argument {bad[0]!r}")
    if args.table:
        quiet_import_verl()
        print(shapes_table(recipe_names()))
        return 0
    if not args.recipe:
        parser.error("--recipe is required")
    if args.nnodes < 1 or args.gpus_per_node < 1:
        parser.error("--nnodes and --gpus-per-node must be positive")
    from rlvr_recipes import CONFIG_DIR

    if not os.path.isfile(os.path.join(CONFIG_DIR, f"{args.recipe}.yaml")):
        print(f"error: unknown recipe '{args.recipe}' (no {args.recipe}.yaml in {CONFIG_DIR})", file=sys.stderr)
        return 2
    quiet_import_verl()

    return run(args.recipe, args.nnodes, args.gpus_per_node, overrides, args.allow_other_verl)


if __name__ == "__main__":
    sys.exit(main())
