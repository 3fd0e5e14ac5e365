"""What verl 0.9.1 will actually run for a composed recipe config: trainer steps, optimizer updates, batch shapes.

The keys of a config say what was asked for; verl's loop decides what happens. These are its rules, read from the
installed source (verl 0.9.1):

- ``verl/trainer/ppo/v1/trainer_base.py``, ``PPOTrainer._init_dataloader``: the train dataloader takes
  ``data.gen_batch_size`` (else ``data.train_batch_size``) prompts per fetch with ``drop_last=True`` and is re-iterated
  when exhausted (``_fetch_one_gen_batch``); ``steps_per_epoch = len(train_dataset) // data.train_batch_size``;
  ``total_training_steps = steps_per_epoch * trainer.total_epochs`` unless ``trainer.total_training_steps`` is set.
- ``PPOTrainer.fit``: ``while current_epoch < total_epochs and global_steps <= total_training_steps``, with
  ``current_epoch = (global_steps - 1) // steps_per_epoch``: the loop runs ``min(total_training_steps,
  total_epochs * steps_per_epoch)`` steps, and the last-step validation and checkpoint (``is_last_step``) fire only when
  it reaches ``total_training_steps``. ``steps_per_epoch = 0`` (fewer prompts than one batch) divides by zero there.
- ``PPOTrainer._update_actor`` and ``verl/workers/engine_workers.py`` ``train_mini_batch``: the rollout batch of
  ``train_batch_size * rollout.n`` responses is split into mini-batches of ``ppo_mini_batch_size * rollout.n`` responses
  (``make_iterator`` asserts that it divides), each one optimizer step (``engine.train_batch``), repeated for
  ``actor.ppo_epochs``; the learning-rate scheduler steps once per trainer step.
- ``PPOTrainer.step``: the sync trainer (``trainer.v1.trainer_mode=sync``, and ``rlvr``, which is verl's sync trainer)
  runs one rollout batch per trainer step (``parameter_sync_step = 1``).

:func:`plan` applies them to a config and a dataset size; :class:`RunPlan` is the result. tests/test_recipe_settings.py
checks each recipe's plan against the paper's step counts; rlvr_recipes/launch/settings_table.py prints it in each README.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from omegaconf import OmegaConf


class RunPlanError(ValueError):
    """A config that verl 0.9.1 would not run as its keys say (a pinned step count it cannot reach, a batch that does
    not split into mini-batches)."""


@dataclass(frozen=True)
class RunPlan:
    """The schedule verl 0.9.1 runs for one config on ``train_prompts`` prompts."""

    train_prompts: int
    prompts_per_step: int
    responses_per_step: int
    steps_per_epoch: int
    epochs: int
    pinned_steps: Optional[int]
    trainer_steps: int
    responses_per_update: int
    updates_per_step: int

    @property
    def optimizer_steps(self) -> int:
        """Optimizer updates over the run: trainer steps x updates per rollout batch."""
        return self.trainer_steps * self.updates_per_step

    @property
    def reaches_last_step(self) -> bool:
        """Whether verl's ``is_last_step`` (final validation, last checkpoint) fires."""
        return self.pinned_steps is None or self.trainer_steps == self.pinned_steps

    def describe(self) -> str:
        """One sentence for a README."""
        pinned = f", pinned to {self.pinned_steps}" if self.pinned_steps is not None else ""
        return (f"{self.train_prompts:,} prompts // {self.prompts_per_step} a step = {self.steps_per_epoch} steps an "
                f"epoch x {self.epochs} epoch{'s' if self.epochs != 1 else ''}{pinned}: {self.trainer_steps} trainer "
                f"steps of {self.responses_per_step:,} responses, {self.updates_per_step} optimizer "
                f"update{'s' if self.updates_per_step != 1 else ''} of {self.responses_per_update:,} responses each, "
                f"{self.optimizer_steps:,} in all")


def _select(cfg: Any, key: str, default: Any = None) -> Any:
    value = OmegaConf.select(cfg, key, default=default)
    return default if value is None else value


def plan(cfg: Any, train_prompts: int, name: str = "config") -> RunPlan:
    """What verl 0.9.1's v1 sync trainer runs for ``cfg`` (a composed recipe config) on ``train_prompts`` prompts.

    Raises :class:`RunPlanError`, naming ``name`` and the keys, when the loop cannot reach a pinned
    ``trainer.total_training_steps``, when the dataset holds fewer prompts than one batch, or when a rollout batch does
    not split into whole mini-batches.
    """
    if train_prompts <= 0:
        raise RunPlanError(f"{name}: train_prompts must be positive, got {train_prompts}")
    batch = int(_select(cfg, "data.train_batch_size"))
    n = int(_select(cfg, "actor_rollout_ref.rollout.n", 1))
    mini = int(_select(cfg, "actor_rollout_ref.actor.ppo_mini_batch_size"))
    ppo_epochs = int(_select(cfg, "actor_rollout_ref.actor.ppo_epochs", 1))
    epochs = int(_select(cfg, "trainer.total_epochs"))
    pinned = OmegaConf.select(cfg, "trainer.total_training_steps", default=None)
    pinned = None if pinned is None else int(pinned)
    mode = str(_select(cfg, "trainer.v1.trainer_mode", "sync"))
    if mode not in ("sync", "rlvr"):
        raise RunPlanError(f"{name}: trainer.v1.trainer_mode={mode}: only the sync trainer (and rlvr) is planned here")

    steps_per_epoch = train_prompts // batch
    if steps_per_epoch == 0:
        raise RunPlanError(f"{name}: {train_prompts} prompts are fewer than one batch (data.train_batch_size={batch}); "
                           "verl's loop divides by steps_per_epoch = 0")
    if (batch * n) % (mini * n) != 0 or mini > batch:
        raise RunPlanError(f"{name}: a rollout batch of {batch} x {n} responses does not split into mini-batches of "
                           f"actor_rollout_ref.actor.ppo_mini_batch_size={mini} x {n}")
    by_epochs = steps_per_epoch * epochs
    trainer_steps = by_epochs if pinned is None else min(pinned, by_epochs)
    if pinned is not None and pinned > by_epochs:
        raise RunPlanError(
            f"{name}: trainer.total_training_steps={pinned} cannot be reached: verl stops after trainer.total_epochs="
            f"{epochs} x ({train_prompts} prompts // data.train_batch_size={batch}) = {by_epochs} steps, so its "
            "last-step validation and checkpoint never fire")
    return RunPlan(
        train_prompts=train_prompts,
        prompts_per_step=batch,
        responses_per_step=batch * n,
        steps_per_epoch=steps_per_epoch,
        epochs=epochs,
        pinned_steps=pinned,
        trainer_steps=trainer_steps,
        responses_per_update=mini * n,
        updates_per_step=(batch // mini) * ppo_epochs,
    )
