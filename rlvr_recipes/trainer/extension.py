"""verl v1 trainer extension: diagnostics every step, context for estimators, per-group CW-GRPO, state on resume.

Select it with one key, ``trainer.v1.trainer_mode=rlvr`` (the recipe configs can set it). It is verl's synchronous
v1 trainer (``PPOTrainerSync``) with a different advantage step and checkpoint hooks:

- every step, for every estimator (verl's built-ins included), logs :func:`rlvr_recipes.advantage.diagnostics.batch_diagnostics`
  (``acr/acr``, ``acr/effective_acr``, ``acr/zero_adv_frac`` ...), the ACR tracker's ``acr/volatility`` and
  ``acr/acr_100``, and the estimator's own figures (``avspo/tau_adapt`` ...), into verl's metrics (console, wandb,
  tensorboard, file);
- hands AAPO its paired ``ref_rewards`` (a per-response field of the batch) which verl's ``compute_advantage`` would
  drop;
- with ``algorithm.cw_grpo.per_group=true``, folds CW-GRPO's Gaussian covariance weights, computed per ``uid`` group
  from the old log-probs (the paper's form), into the token-level advantages; the actor then uses ``loss_mode=vanilla``;
- orders each batch's rows by their tokens before verl balances them across ranks (:func:`content_order`), so that
  the sums of a step do not follow which group finished first and a seed replays;
- saves the estimator state (AVSPO's threshold and previous reward) and the ACR tracker as ``rlvr_state.json`` in each
  ``global_step_N`` checkpoint folder, atomically and before verl records the step as checkpointed, and restores it
  on resume; a resume whose state file is missing or unreadable stops with a message naming the file, unless
  ``algorithm.estimator_state.fresh_on_resume=true``.

Why a registered trainer rather than a wrapper ``main``: verl chooses the trainer class inside its TaskRunner (a Ray
actor) by ``trainer.v1.trainer_mode``; registration through this package's ``verl.plugins`` entry point happens in
that process too, so the stock ``python -m verl.trainer.main_ppo`` keeps working and no second entry point is needed.

The logic is in :func:`advantage_step`, a pure function of a ``DataProto`` so that it is testable without Ray.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
import torch

from rlvr_recipes.advantage import state
from rlvr_recipes.advantage.core import group_index
from rlvr_recipes.advantage.diagnostics import ACRTracker, batch_diagnostics, rollout_acr
from rlvr_recipes.advantage.options import check_range, config_get, read_options, require
from rlvr_recipes.trainer.checks import check_data_config, check_rewards

STATE_FILE = "rlvr_state.json"
TRAINER_NAME = "rlvr"


@dataclass
class CWGRPOOptions:
    """``algorithm.cw_grpo.*``: ``per_group`` folds per-group covariance weights into the advantages (paper form)."""

    per_group: bool = False

    def validate(self, section: str) -> None:
        require(isinstance(self.per_group, bool), section, "per_group", self.per_group, "true or false")


@dataclass
class DiagnosticsOptions:
    """``algorithm.diagnostics.*``: ``reward_range`` for the all-correct / all-wrong fractions."""

    reward_range: list = field(default_factory=lambda: [0.0, 1.0])

    def validate(self, section: str) -> None:
        self.reward_range = list(check_range(section, "reward_range", self.reward_range))


def advantage_step(
    data: Any,
    algo_config: Any,
    tracker: ACRTracker,
    num_repeat: int = 1,
    step: int = 0,
    batch_keys: Optional[list] = None,
    filtered_groups: int = 0,
    seed: int = 0,
) -> tuple[Any, dict[str, float]]:
    """Compute advantages for ``data`` and the figures to log.

    Args:
        data: a verl ``DataProto`` with ``token_level_rewards``, ``response_mask`` (``batch``) and ``uid``
            (``non_tensor_batch``); ``ref_rewards`` ``(bs,)`` (batch or non-tensor) for AAPO; ``old_log_probs`` for
            per-group CW-GRPO.
        algo_config: the ``algorithm`` config.
        tracker: the run's :class:`ACRTracker` (updated).
        num_repeat: ``rollout.n``, passed through to verl.
        step: the training step (seeds AAPO's draws from cached reference rewards).
        batch_keys: the TransferQueue keys of the rows (``{uid}_{session}_{index}``); when given, the advantages
            come from verl's ``compute_advantage_for_multi_trajectories`` exactly as in the stock v1 trainer
            (GRPO over each session's final turn), otherwise from ``compute_advantage``.
        filtered_groups: groups DAPO's dynamic sampling dropped while this batch was assembled (verl's
            ``training/filter_groups/evicted_samples``): ``acr/acr`` describes the rollouts, these included
            (:func:`rlvr_recipes.advantage.diagnostics.rollout_acr`), and ``acr/acr_post_filter`` the kept batch.
        seed: the run's seed (:func:`run_seed`); with ``step`` it seeds AAPO's draws, so two seeds draw apart.

    A-GRAE with ``algorithm.agrae.success_key`` set reads each response's success from
    ``data.non_tensor_batch["success"]`` (the trainer fills it from the reward's ``reward_extra_info``).

    Returns:
        ``(data, metrics)``: ``data.batch["advantages"]`` / ``["returns"]`` set.
    """
    # verl, and the modules that import it, are imported here, not at the top: importing verl loads this package's
    # plugin, which imports this module and calls its register(); a process whose first import is this module would
    # hand the plugin a half-made module (tests/test_plugin.py, first imports)
    from verl.trainer.ppo.core_algos import get_adv_estimator_fn
    from verl.trainer.ppo.ray_trainer import compute_advantage

    from rlvr_recipes.advantage.losses import covariance_weights

    estimator = config_get(algo_config, "adv_estimator", "grpo")
    estimator = getattr(estimator, "value", estimator)
    uid = data.non_tensor_batch["uid"]
    mask = data.batch["response_mask"]
    check_rewards(data.batch["token_level_rewards"].sum(dim=-1), uid, data.non_tensor_batch.get("data_source"),
                  data.non_tensor_batch.get("extra_info"))
    if estimator == "aapo":
        ref = data.batch["ref_rewards"] if "ref_rewards" in data.batch.keys() else data.non_tensor_batch.get("ref_rewards")
        if ref is None and "extra_info" in data.non_tensor_batch:
            tokens = {k: data.batch[k].cpu().numpy() for k in ("prompts", "responses") if k in data.batch.keys()}
            ref = draw_ref_rewards(data.non_tensor_batch["extra_info"], uid, step=step, seed=seed, **tokens)
        if ref is None:
            raise ValueError(
                "adv_estimator=aapo needs each response's paired reference reward in the batch field 'ref_rewards'; "
                "prepare the data with `python -m rlvr_recipes.launch.ref_rewards` (docs/trainer.md)"
            )
        adv, ret = get_adv_estimator_fn("aapo")(
            token_level_rewards=data.batch["token_level_rewards"],
            response_mask=mask,
            index=uid,
            config=algo_config,
            ref_rewards=torch.as_tensor(np.asarray(ref, dtype=np.float32)),
        )
        data.batch["advantages"], data.batch["returns"] = adv, ret
    elif str(estimator).startswith("agrae") and "success" in data.non_tensor_batch:
        adv, ret = get_adv_estimator_fn(estimator)(
            token_level_rewards=data.batch["token_level_rewards"],
            response_mask=mask,
            index=uid,
            config=algo_config,
            success=data.non_tensor_batch["success"],
        )
        data.batch["advantages"], data.batch["returns"] = adv, ret
    elif batch_keys is not None:
        from verl.trainer.ppo.v1.utils import compute_advantage_for_multi_trajectories

        data = compute_advantage_for_multi_trajectories(
            data,
            batch_keys=batch_keys,
            adv_estimator=config_get(algo_config, "adv_estimator", "grpo"),
            gamma=float(config_get(algo_config, "gamma", 1.0)),
            lam=float(config_get(algo_config, "lam", 1.0)),
            num_repeat=num_repeat,
            norm_adv_by_std_in_grpo=bool(config_get(algo_config, "norm_adv_by_std_in_grpo", True)),
            config=algo_config,
        )
    else:
        data = compute_advantage(
            data,
            adv_estimator=estimator,
            num_repeat=num_repeat,
            norm_adv_by_std_in_grpo=bool(config_get(algo_config, "norm_adv_by_std_in_grpo", True)),
            config=algo_config,
        )
    metrics: dict[str, float] = {}
    if read_options(CWGRPOOptions, algo_config, "cw_grpo").per_group:
        if "old_log_probs" not in data.batch.keys():
            raise ValueError("algorithm.cw_grpo.per_group=true needs old_log_probs in the batch")
        gidx, n = group_index(uid, device=mask.device)
        weights, figures = covariance_weights(data.batch["old_log_probs"], data.batch["advantages"], mask, gidx, n)
        data.batch["advantages"] = data.batch["advantages"] * weights
        data.batch["returns"] = data.batch["advantages"]
        metrics.update(figures)
    diag = read_options(DiagnosticsOptions, algo_config, "diagnostics")
    scores = data.batch["token_level_rewards"].sum(dim=-1)
    metrics.update(batch_diagnostics(scores, uid, data.batch["advantages"], mask, tuple(diag.reward_range)))
    kept = len(set(uid.tolist()))
    metrics["acr/acr_post_filter"] = metrics["acr/acr"]
    metrics["acr/filtered_groups"] = float(filtered_groups)
    metrics["acr/acr"] = rollout_acr(metrics["acr/acr_post_filter"], kept, int(filtered_groups))
    metrics.update(tracker.update(metrics["acr/acr"]))
    metrics.update(state.pop_metrics())
    return data, metrics


def padding_rows(tags: Any) -> np.ndarray:
    """``(bs,)`` bool: the rows verl 0.9.1 appended as no-op filler (``tag["is_padding"]``, written by
    ``verl/trainer/ppo/padding_utils.py`` ``upsample_batch_to_divisible_size`` when ``_balance_batch`` makes the batch
    divisible by the data-parallel and mini-batch sizes). They carry one ``pad...`` uid, a zero reward and a zero
    response mask."""
    return np.array([bool(tag.get("is_padding", False)) for tag in tags], dtype=bool)


def session_final_rows(batch_keys: list) -> np.ndarray:
    """``(bs,)``: for each row, the row of its session's final output. verl's agent loop keys a row
    ``{uid}_{session}_{index}``; a multi-turn session has several outputs (index 0, 1, ...), a single-turn one has one.
    A key of another form is a session of its own."""
    final: dict[str, tuple[int, int]] = {}
    sessions = []
    for row, key in enumerate(batch_keys):
        fields = str(key).rsplit("_", 2)
        session, index = (f"{fields[0]}_{fields[1]}", int(fields[2])) if len(fields) == 3 and fields[2].isdigit() \
            else (f"row{row}", 0)
        sessions.append(session)
        if session not in final or final[session][0] < index:
            final[session] = (index, row)
    return np.array([final[s][1] for s in sessions], dtype=np.int64)


def advantage_step_real_rows(data: Any, is_padding: np.ndarray, *args: Any, batch_keys: Optional[list] = None,
                             **kwargs: Any) -> tuple[Any, dict[str, float]]:
    """:func:`advantage_step` on the samples the papers count: each session's final output, filler rows left out.

    - verl's filler rows (``is_padding``) get zero advantages and returns. Otherwise one filler row would be a sample
      of every batch statistic: it moves AVSPO's batch ACR (a collapsed group of size 1) and A-GRAE's batch accuracy
      omega, and AAPO would look up reference rewards for it.
    - In a multi-turn session (several outputs, ``batch_keys``), only the final output is a sample, and the
      session's earlier outputs take its advantage on their own tokens. That is what verl 0.9.1 does for GRPO
      (``trainer/ppo/v1/utils.py`` ``compute_advantage_for_multi_trajectories``), now applied to every estimator.
      Single-turn rollouts (one output per session) are unchanged.

    The kept rows' results are exactly those of a batch holding only them.
    """
    n = len(is_padding)
    final_of = session_final_rows(batch_keys) if batch_keys is not None else np.arange(n)
    keep = ~is_padding & (final_of == np.arange(n))
    if keep.all():
        return advantage_step(data, *args, batch_keys=batch_keys, **kwargs)
    kept = np.flatnonzero(keep)
    sub, metrics = advantage_step(data.select_idxs(kept), *args,
                                  batch_keys=None if batch_keys is None else [batch_keys[i] for i in kept], **kwargs)
    index = torch.as_tensor(kept, device=sub.batch["advantages"].device)
    for key in sub.batch.keys():
        if key in data.batch.keys() and key not in ("advantages", "returns"):
            continue  # an input the step did not write
        value = sub.batch[key]
        full = torch.zeros((n, *value.shape[1:]), dtype=value.dtype, device=value.device)
        full[index] = value
        data.batch[key] = full
    earlier = np.flatnonzero(~is_padding & ~keep)
    if len(earlier):
        position = np.full(n, -1, dtype=np.int64)
        position[kept] = np.arange(len(kept))
        first_token = sub.batch["response_mask"].argmax(dim=1)
        final_adv = sub.batch["advantages"][torch.arange(len(kept)), first_token]
        rows = torch.as_tensor(earlier)
        source = torch.as_tensor(position[final_of[earlier]])
        scattered = final_adv[source].unsqueeze(-1) * data.batch["response_mask"][rows]
        for key in ("advantages", "returns"):
            data.batch[key][rows] = scattered.to(data.batch[key].dtype)
    metrics["training/padding_rows"] = float(is_padding.sum())
    metrics["training/earlier_turn_rows"] = float(len(earlier))
    return data, metrics


def reward_extra_values(extra_fields: Any, key: str) -> np.ndarray:
    """``(bs,)`` float values of ``reward_extra_info[key]`` from the rows' ``extra_fields`` (verl's agent loop stores
    the reward manager's per-response extra info there; DAPO's manager and this package's rewards put ``acc``).

    Raises:
        ValueError: when a row lacks the key, naming the row and the keys it has.
    """
    out = np.empty(len(extra_fields), dtype=np.float32)
    for i, value in enumerate(extra_fields):  # one dict lookup per row: the values live in Python dicts
        fields = getattr(value, "data", value)
        info = fields.get("reward_extra_info", {}) if isinstance(fields, dict) else {}
        if key not in info:
            raise ValueError(
                f"response {i} has no reward_extra_info[{key!r}] (has {sorted(info)}): the reward function must "
                f"return a dict with {key!r} (rlvr_recipes/reward/math_reward.py does), or set algorithm.agrae.success_key=null"
            )
        out[i] = float(info[key])
    return out


def token_hash(tokens: Any) -> np.ndarray:
    """``(bs, L)`` token ids -> ``(bs,)`` int64: a fixed random linear hash of each row (equal rows, equal hashes).
    Sorting by it orders the rows by what they hold at a fraction of a lexicographic sort's cost: for 4096 rows of
    1536 tokens the sort over the columns took 0.34 s, and the whole draw with this hash takes 5 ms
    (``python -m benchmarks.bench_trainer``, docs/trainer.md)."""
    tokens = np.asarray(tokens, dtype=np.int64)
    weights = np.random.default_rng(0x5EED).integers(1, 2**62, size=tokens.shape[1], dtype=np.int64) | 1
    return tokens @ weights  # int64 arithmetic wraps modulo 2**64


def content_order(prompts: Any, responses: Any) -> np.ndarray:
    """``(bs, P)`` prompt and ``(bs, R)`` response token ids -> ``(bs,)`` row indices in an order fixed by what the
    rows hold: by prompt, then by response (:func:`token_hash`); rows with equal tokens keep their order.

    verl's replay buffer hands the trainer its rows in the order of a set of random ``uid`` strings, and the sums of
    the log-prob passes and of the loss follow that order, so two runs of one seed parted by float rounding. In this
    order they take the same sums (:class:`RLVRTrainer`'s ``_balance_batch``; docs/lab.md, "Shared draws")."""
    return np.lexsort((token_hash(responses), token_hash(prompts)))


def run_seed(config: Any) -> int:
    """The run's seed for the draws this package makes in the trainer: ``data.seed``, the seed of verl's data order
    (``rlvr_recipes.launch.cpu_run`` sets it and the rollout's seed to the run's seed), or 0 when it is unset."""
    seed = config_get(config_get(config, "data", None), "seed", None)
    return 0 if seed is None else int(seed)


def draw_ref_rewards(extra_info: Any, uid: Any, step: int, seed: int = 0, prompts: Optional[np.ndarray] = None,
                     responses: Optional[np.ndarray] = None) -> Optional[np.ndarray]:
    """Paired reference rewards drawn from each prompt's cache (``extra_info["ref_rewards"]``, M per prompt, written
    by ``python -m rlvr_recipes.launch.ref_rewards``).

    The G responses of a prompt get G distinct cached rewards: a random permutation of the cache per prompt, drawn
    for the whole batch at once from ``(seed, step)``. With ``prompts`` and ``responses``, groups and the responses
    within a group are taken in an order fixed by their tokens (:func:`token_hash`), so the pairing follows what the
    batch holds, not the order its rows arrived in or its ``uid`` strings (random in verl): a run replays with its
    seed. Without them, groups are taken in ``uid`` order and responses in row order. Returns None when the rows
    carry no cache.

    Args:
        extra_info: ``(bs,)`` per-response dicts with ``ref_rewards`` (list).
        uid: ``(bs,)`` group labels.
        step: training step (fresh draws each step).
        seed: the run's seed (:func:`run_seed`).
        prompts: ``(bs, P)`` prompt token ids (verl's ``prompts``), with ``responses``.
        responses: ``(bs, R)`` response token ids (verl's ``responses``).
    """
    infos = list(extra_info)
    if not infos or not all(isinstance(e, dict) and "ref_rewards" in e for e in infos):
        return None
    gidx, n = group_index(uid)
    gidx = gidx.numpy()
    if prompts is not None and responses is not None:
        by_content = content_order(prompts, responses)
        first_seen = np.full(n, len(infos))
        np.minimum.at(first_seen, gidx[by_content], np.arange(len(infos)))
        gidx = np.argsort(np.argsort(first_seen))[gidx]  # groups renumbered in the order of their first row
        order = by_content[np.argsort(gidx[by_content], kind="stable")]
    else:
        order = np.argsort(gidx, kind="stable")
    first = np.searchsorted(gidx[order], np.arange(n))  # position in `order` of each group's first response
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order)) - first[gidx[order]]  # position of each response within its group
    caches = [np.asarray(infos[i]["ref_rewards"], dtype=np.float32) for i in order[first]]
    sizes = np.array([c.size for c in caches])
    counts = np.bincount(gidx, minlength=n)
    short = np.nonzero(sizes < counts)[0]
    if short.size:
        g = int(short[0])
        raise ValueError(
            f"prompt {infos[order[first[g]]].get('index', g)} has {sizes[g]} cached reference rewards but {counts[g]} "
            f"responses; sample at least rollout.n with python -m rlvr_recipes.launch.ref_rewards --samples"
        )
    table = np.full((n, int(sizes.max())), np.nan, dtype=np.float32)
    for g, c in enumerate(caches):  # building the (N, M) table: one row per prompt group
        table[g, : c.size] = c
    keys = np.random.default_rng([seed, step]).random(table.shape)
    keys[np.isnan(table)] = np.inf  # padding sorts last, never drawn
    perm = np.argsort(keys, axis=1)
    return table[gidx, perm[gidx, rank]]


# ------------------------------------------------------------------------------ estimator state in checkpoints


class StateFileError(RuntimeError):
    """A resume whose ``rlvr_state.json`` is missing, unreadable or from another step; the message names the file."""


@dataclass
class EstimatorStateOptions:
    """``algorithm.estimator_state.*``: ``fresh_on_resume`` resumes a checkpoint whose ``rlvr_state.json`` is missing
    or unreadable with fresh estimator state and ACR tracker (a warning is printed) instead of refusing to start."""

    fresh_on_resume: bool = False

    def validate(self, section: str) -> None:
        require(isinstance(self.fresh_on_resume, bool), section, "fresh_on_resume", self.fresh_on_resume,
                "true or false")


#: Test hook: ``RLVR_FAULT_PAUSE=<point>@<step>`` with ``RLVR_FAULT_MARKER=<file>`` makes the trainer write the
#: marker and block at that point of that global step, so that a test can SIGKILL it there
#: (tests/test_e2e_fault.py). Points: ``rollout`` (generation dispatched, batch not yet consumed), ``update`` (after
#: the advantage step, before the actor update), ``state_write`` (temporary state file written and synced, not yet
#: renamed), ``save`` (state file in place, before verl saves the actor and records the step).
FAULT_ENV = "RLVR_FAULT_PAUSE"
FAULT_MARKER_ENV = "RLVR_FAULT_MARKER"


#: the last "restored estimator state" line of this process, repeated in the fault marker: the test reads it from
#: there, because the console copy reaches the driver through Ray's log forwarding, which can lag by minutes
_last_restore_message: Optional[str] = None


def fault_point(point: str, step: int) -> None:
    """Block forever at ``point`` of ``step`` when :data:`FAULT_ENV` asks for it (after writing the marker file)."""
    wanted = os.environ.get(FAULT_ENV)
    if not wanted or wanted != f"{point}@{step}":
        return
    marker = os.environ.get(FAULT_MARKER_ENV)
    if marker:  # complete when it appears
        with open(marker + ".tmp", "w") as f:
            f.write(f"{point}@{step} pid {os.getpid()}\n")
            if _last_restore_message is not None:
                f.write(_last_restore_message + "\n")
        os.replace(marker + ".tmp", marker)
    print(f"[rlvr] fault injection: paused at {point} of step {step}", flush=True)
    while True:
        time.sleep(3600)


def atomic_write_json(path: str, obj: Any, step: Optional[int] = None) -> None:
    """Write ``obj`` as JSON to ``path`` so that a crash at any instant leaves either the old file or the new one.

    A temporary file in the same folder is written, flushed and ``fsync``-ed, then renamed over ``path`` with
    ``os.replace`` (atomic on POSIX), and the folder is ``fsync``-ed so that the rename itself survives a power loss.
    Twelve lines, hence not a dependency: ``atomicwrites`` is unmaintained (archived in 2022).
    """
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(obj, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        if step is not None:
            fault_point("state_write", step)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def save_state(folder: str, tracker: ACRTracker, global_step: Optional[int] = None) -> str:
    """Write the estimator state and the tracker atomically to ``folder/rlvr_state.json``; returns the path.

    The trainer calls this before verl saves the actor and records the step in ``latest_checkpointed_iteration.txt``,
    so a kill at any point leaves the last recorded step with a complete state file.
    """
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, STATE_FILE)
    payload = {"global_step": global_step, "estimators": state.state_dict(), "acr_tracker": tracker.state_dict()}
    atomic_write_json(path, payload, step=global_step)
    return path


def read_state(folder: str, global_step: Optional[int] = None) -> dict[str, Any]:
    """The contents of ``folder/rlvr_state.json``, checked; ``global_step`` (if given) must match the file's.

    Raises:
        StateFileError: the file is missing, is not valid JSON, lacks a section or was written at another step;
            the message names the file and how to start the state fresh instead.
    """
    path = os.path.join(folder, STATE_FILE)
    fix = ("restore the file, or resume with algorithm.estimator_state.fresh_on_resume=true to start the estimator "
           "state and ACR tracker fresh")
    if not os.path.exists(path):
        raise StateFileError(f"cannot resume from {folder}: {path} is missing; {fix}")
    try:
        with open(path) as f:
            saved = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise StateFileError(f"cannot resume from {folder}: {path} is unreadable ({exc}); {fix}") from exc
    if not isinstance(saved, dict) or not isinstance(saved.get("estimators"), dict) or not isinstance(
        saved.get("acr_tracker"), dict
    ):
        raise StateFileError(
            f"cannot resume from {folder}: {path} lacks the 'estimators' or 'acr_tracker' section; {fix}"
        )
    saved_step = saved.get("global_step")
    if global_step is not None and saved_step is not None and int(saved_step) != int(global_step):
        raise StateFileError(
            f"cannot resume from {folder}: {path} was written at global step {saved_step}, not {global_step}; {fix}"
        )
    return saved


def load_state(folder: str, tracker: ACRTracker, global_step: Optional[int] = None) -> dict[str, Any]:
    """Restore what :func:`save_state` wrote into the estimator registry and ``tracker``; returns the contents.

    Raises:
        StateFileError: see :func:`read_state`; also when a section does not load (nothing is changed then).
    """
    saved = read_state(folder, global_step)
    before = state.state_dict()
    try:
        ACRTracker().load_state_dict(saved["acr_tracker"])  # checked on a scratch tracker first
        state.load_state_dict(saved["estimators"])
    except (KeyError, TypeError, ValueError) as exc:
        state.load_state_dict(before)
        raise StateFileError(
            f"cannot resume from {folder}: {os.path.join(folder, STATE_FILE)} does not load ({type(exc).__name__}: "
            f"{exc}); resume with algorithm.estimator_state.fresh_on_resume=true to start the estimator state fresh"
        ) from exc
    tracker.load_state_dict(saved["acr_tracker"])
    return saved


def resume_folder(trainer_config: Any) -> Optional[str]:
    """The ``global_step_N`` folder verl's v1 trainer will resume from (``PPOTrainer._load_checkpoint``), or None.

    Same rules as verl 0.9.1: ``resume_mode=disable`` none; ``auto`` the step named by
    ``latest_checkpointed_iteration.txt`` under ``default_local_dir`` (None without it); ``resume_path``
    ``resume_from_path``. Relative paths are taken from the working directory, as verl does.
    """
    from verl.utils.checkpoint.checkpoint_manager import find_latest_ckpt_path

    mode = config_get(trainer_config, "resume_mode", "auto")
    if mode == "auto":
        root = os.path.abspath(str(config_get(trainer_config, "default_local_dir")))
        try:
            return find_latest_ckpt_path(root)
        except ValueError as exc:  # verl writes its record with a plain open(): a kill mid-write leaves it cut short
            raise StateFileError(
                f"cannot resume: {os.path.join(root, 'latest_checkpointed_iteration.txt')} is unreadable ({exc}); "
                f"write the number N of the last complete global_step_N folder into it"
            ) from exc
    if mode == "resume_path":
        return os.path.abspath(str(config_get(trainer_config, "resume_from_path")))
    return None


def restore_state(folder: str, tracker: ACRTracker, fresh_on_resume: bool = False) -> str:
    """Restore the estimator state of the checkpoint ``folder`` (``.../global_step_N``); returns a line to print.

    Raises:
        StateFileError: the state is missing or unreadable and ``fresh_on_resume`` is False.
    """
    step = int(os.path.basename(os.path.normpath(folder)).split("global_step_")[-1])
    try:
        saved = load_state(folder, tracker, step)
    except StateFileError as exc:
        if not fresh_on_resume:
            raise
        state.reset()
        tracker.load_state_dict(ACRTracker().state_dict())
        return f"[rlvr] WARNING: estimator state and ACR tracker start fresh at global step {step} " \
               f"(algorithm.estimator_state.fresh_on_resume=true): {exc}"
    summary = json.dumps({"global_step": step, "estimators": saved["estimators"], "acr_tracker": saved["acr_tracker"]},
                         sort_keys=True)
    return f"[rlvr] restored estimator state from {os.path.join(folder, STATE_FILE)}: {summary}"


def register() -> None:
    """Register :class:`RLVRTrainer` under ``trainer.v1.trainer_mode=rlvr`` (idempotent)."""
    from verl.trainer.ppo.v1.trainer_base import TRAINER_REGISTRY

    if TRAINER_NAME in TRAINER_REGISTRY:
        return
    from verl.trainer.ppo.v1 import trainer_base
    from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync

    class RLVRTrainer(PPOTrainerSync):
        """verl's sync v1 trainer with this package's advantage step and state checkpointing."""

        def __init__(self, config, *args, **kwargs):
            from omegaconf import open_dict

            # The name "rlvr" only selects this class; everything else in verl must see the sync trainer mode
            # (its replay buffer and per-mode settings are chosen by that name).
            check_data_config(config)  # before verl builds its datasets: a bad file or row stops here, named
            with open_dict(config):
                config.trainer.v1.trainer_mode = "sync"
            if str(config.algorithm.adv_estimator) == "aapo":
                # refuse at start a reference cache sampled or scored unlike this run; warn when it will be reused
                from rlvr_recipes.reward.reference import check_training_run

                files = config.data.train_files
                for warning in check_training_run(config, [files] if isinstance(files, str) else list(files)):
                    print(f"[rlvr] WARNING: {warning}", flush=True)
            self.acr_tracker = ACRTracker()
            super().__init__(config, *args, **kwargs)

        def _compute_advantage(self, batch, metrics: dict):
            tq = trainer_base.tq
            from tensordict import TensorDict
            from verl import DataProto

            # verl's own field list (trainer_base._compute_advantage) plus AAPO's per-response reference rewards
            fields = ["uid", "response_mask", "rm_scores", "rollout_log_probs", "old_log_probs", "ref_log_prob",
                      "values"]
            if self.config.algorithm.adv_estimator == "aapo":
                # a per-response field, or the prompt's cache: verl's agent loop stores every dataset column of
                # the prompt (extra_info included) with each response; absent fields are skipped by kv_batch_get.
                # The tokens order the draws from the cache by content, not by arrival (draw_ref_rewards)
                fields += ["ref_rewards", "extra_info", "prompts", "responses"]
            success_key = None
            if str(self.config.algorithm.adv_estimator).startswith("agrae"):
                success_key = self.config.algorithm.get("agrae", {}).get("success_key", None)
                if success_key:
                    fields += ["extra_fields"]
            data = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id, select_fields=fields)
            response_mask = data["response_mask"]
            data = DataProto(batch=data.to_padded_tensor())
            data.batch["token_level_scores"] = data.batch["rm_scores"]
            data.non_tensor_batch["uid"] = np.array(data.batch.pop("uid").tolist(), dtype=object)
            if "extra_info" in data.batch.keys():
                data.non_tensor_batch["extra_info"] = np.array(data.batch.pop("extra_info").tolist(), dtype=object)
            self._identify_bad_rewards(batch, data)
            if success_key:
                # A-GRAE's p and omega from accuracy, not from a shaped score (001 Theorem 2; METHODS.md)
                data.non_tensor_batch["success"] = reward_extra_values(list(data.batch.pop("extra_fields")), success_key)
            if self.config.algorithm.use_kl_in_reward:
                data, kl_metrics = trainer_base.apply_kl_penalty(
                    data, kl_ctrl=self.kl_ctrl_in_reward, kl_penalty=self.config.algorithm.kl_penalty
                )
                metrics.update(kl_metrics)
            else:
                data.batch["token_level_rewards"] = data.batch["token_level_scores"]
            rollout_corr = self.config.algorithm.get("rollout_correction", None)
            rollout_correction = (
                rollout_corr is not None
                and "rollout_log_probs" in data.batch.keys()
                and not rollout_corr.get("bypass_mode", False)
            )
            if rollout_correction:
                data, is_metrics = trainer_base.compute_rollout_correction_and_add_to_batch(data, rollout_corr)
                metrics.update(is_metrics)
            # verl's filler rows (is_padding) enter no statistic; a multi-turn session counts once (its final output)
            data, step_metrics = advantage_step_real_rows(
                data,
                padding_rows(batch.tags),
                self.config.algorithm,
                self.acr_tracker,
                self.config.actor_rollout_ref.rollout.n,
                self.global_steps,
                batch_keys=list(batch.keys),
                filtered_groups=int(metrics.get("training/filter_groups/evicted_samples", 0)),
                seed=run_seed(self.config),
            )
            metrics.update(step_metrics)
            out = ["advantages", "returns"] + (["token_level_rewards"] if self.config.algorithm.use_kl_in_reward else [])
            if rollout_correction:
                out += ["response_mask"] + (["rollout_is_weights"] if "rollout_is_weights" in data.batch.keys() else [])
            output = TensorDict(
                {f: trainer_base.response_to_nested(data.batch[f], response_mask) for f in out}, batch_size=len(batch)
            )
            return tq.kv_batch_put(keys=batch.keys, partition_id=batch.partition_id, fields=output)

        def _balance_batch(self, batch, metrics, logging_prefix="global_seqlen", keep_minibatch=False):
            # the rows in an order fixed by their tokens (content_order), not in the order of the random uid strings
            # verl's replay buffer hands them over in; verl's balancing then splits them across data-parallel ranks
            tokens = trainer_base.tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id,
                                                  select_fields=["prompts", "responses"]).to_padded_tensor()
            batch.reorder(content_order(tokens["prompts"], tokens["responses"]).tolist())
            return super()._balance_batch(batch, metrics, logging_prefix=logging_prefix, keep_minibatch=keep_minibatch)

        def _identify_bad_rewards(self, batch, data) -> None:
            """When a score is not finite, fetch each sample's data source and row (``extra_info``) so that the
            advantage step's error names them; nothing is fetched otherwise."""
            if bool(torch.isfinite(data.batch["token_level_scores"].sum(dim=-1)).all()):
                return
            ids = trainer_base.tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id,
                                               select_fields=["data_source", "extra_info"])
            for key in ("data_source", "extra_info"):
                if key in ids.keys() and key not in data.non_tensor_batch:
                    data.non_tensor_batch[key] = np.array(list(ids[key]), dtype=object)  # list(): any TQ backend

        def _save_checkpoint(self):
            # The state first: verl records the step as checkpointed (latest_checkpointed_iteration.txt) at the end
            # of its own save, so a kill anywhere before that resumes from the previous step, whose state is whole.
            folder = os.path.join(self.config.trainer.default_local_dir, f"global_step_{self.global_steps}")
            save_state(folder, self.acr_tracker, self.global_steps)
            fault_point("save", self.global_steps)
            super()._save_checkpoint()

        def _load_checkpoint(self):
            # checked before verl loads the actor, so that a missing or broken state file stops in seconds
            folder = resume_folder(self.config.trainer)
            fresh = read_options(EstimatorStateOptions, self.config.algorithm, "estimator_state").fresh_on_resume
            message = restore_state(folder, self.acr_tracker, fresh) if folder is not None else None
            result = super()._load_checkpoint()
            if message is not None:
                global _last_restore_message
                _last_restore_message = message
                print(message, flush=True)
            return result

        def on_sample_begin(self):
            super().on_sample_begin()
            fault_point("rollout", self.global_steps)

        def _update_actor(self, batch, metrics: dict):
            fault_point("update", self.global_steps)
            return super()._update_actor(batch, metrics=metrics)

    trainer_base.register_trainer(TRAINER_NAME)(RLVRTrainer)
