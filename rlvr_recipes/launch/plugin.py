"""verl plugin entry point (group ``verl.plugins``).

``import verl`` loads every ``verl.plugins`` entry point in every process that imports it (the driver, the
TaskRunner and each Ray worker), so importing this module is what makes ``algorithm.adv_estimator=agrae`` and
``actor_rollout_ref.actor.policy_loss.loss_mode=cw_grpo`` resolvable from the stock command line, and registers the
trainer extension ``trainer.v1.trainer_mode=rlvr`` (:mod:`rlvr_recipes.trainer.extension`). It also works through
``VERL_USE_EXTERNAL_MODULES=rlvr_recipes.launch.plugin``.

With ``VERL_PLATFORM=cpu`` (or ``RLVR_CPU=1``) in the environment it first makes verl run on the CPU
(:func:`rlvr_recipes.cpu_backend.activate`: platform, FSDP engines for device ``cpu``, gloo, the ``hf`` rollout); without it
nothing of that is touched.

verl swallows plugin import errors at DEBUG level; a broken install would then surface much later as
"Unknown advantage estimator". This module therefore reports its own failure loudly (a warning naming the
error) before re-raising it.

Last, a trainer that ``rlvr_recipes.launch.cpu_run`` started with ``RLVR_START_GATE`` set waits here until the runner has checked
its config (:mod:`rlvr_recipes.launch.start_gate`); everywhere else that is a no-op.
"""

from __future__ import annotations

import logging
import warnings

from rlvr_recipes.launch import start_gate

logger = logging.getLogger(__name__)

_REGISTERED = False


def register() -> None:
    """Register this package's advantage estimators and policy losses with verl (idempotent)."""
    global _REGISTERED
    if _REGISTERED:
        return
    from rlvr_recipes import cpu_backend

    if cpu_backend.requested():  # before anything below asks verl for its platform
        cpu_backend.activate()
    from rlvr_recipes.advantage import estimators, losses  # noqa: F401  (registration happens at import)
    from rlvr_recipes.trainer import checks, extension

    extension.register()  # trainer.v1.trainer_mode=rlvr
    checks.install_reward_check()  # a reward that is not a finite number stops the run, naming the sample
    _REGISTERED = True


try:
    register()
except Exception as exc:  # pragma: no cover - exercised by the subprocess test with a broken module
    message = f"rlvr-recipes verl plugin failed to load ({type(exc).__name__}: {exc}); its estimators are unavailable"
    warnings.warn(message, RuntimeWarning, stacklevel=2)
    logger.error(message)
    raise

# a trainer started by rlvr_recipes.launch.cpu_run waits here until the runner has checked its config (rlvr_recipes/launch/start_gate.py)
start_gate.wait()
