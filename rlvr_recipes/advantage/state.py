"""State that estimators carry across steps, and the figures each one reports about its last call.

verl calls an advantage estimator as a plain function, once per step, in the trainer (driver) process. AVSPO's
adaptive threshold and previous mean reward (ACR paper, Eq. 12) must persist between those calls and across a
checkpoint/resume; they live here, in a process-wide registry with ``state_dict`` / ``load_state_dict`` that the
trainer extension saves next to verl's checkpoints.

Estimators also leave their own figures (AVSPO's threshold and K, A-GRAE's omega and positive scale, AAPO's margin
clip fraction) in :data:`LAST_METRICS`, which the trainer extension logs and clears each step.
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass
from typing import Any, Callable, Optional

#: Method figures from the most recent estimator call, ``{"avspo/tau_adapt": 0.5, ...}``.
LAST_METRICS: dict[str, float] = {}

_STATES: dict[str, Any] = {}


@dataclass
class AVSPOState:
    """AVSPO's state across steps (ACR paper, Alg. 1 and Eq. 12).

    Attributes:
        tau_adapt: adaptive ACR threshold that triggers virtual samples.
        prev_mean_reward: ``J_{t-1}``, the previous batch's mean raw reward; None before the first step.
        step: number of estimator calls so far.
    """

    tau_adapt: float = 0.5
    prev_mean_reward: Optional[float] = None
    step: int = 0


def get_state(name: str, factory: Callable[[], Any]) -> Any:
    """The state object registered under ``name``, created with ``factory()`` on first use."""
    if name not in _STATES:
        _STATES[name] = factory()
    return _STATES[name]


def state_dict() -> dict[str, dict[str, Any]]:
    """A deep, picklable/JSON-able copy of every estimator's state."""
    return {name: {"type": type(s).__name__, **asdict(s)} for name, s in _STATES.items()}


_TYPES = {"AVSPOState": AVSPOState}


def load_state_dict(saved: dict[str, dict[str, Any]]) -> None:
    """Restore the registry from :func:`state_dict` output (replacing what is there)."""
    _STATES.clear()
    for name, fields in saved.items():
        fields = copy.deepcopy(dict(fields))
        kind = fields.pop("type")
        if kind not in _TYPES:
            raise ValueError(f"unknown estimator state type {kind!r} for {name!r}")
        _STATES[name] = _TYPES[kind](**fields)


def reset() -> None:
    """Forget all state and metrics (a fresh run, or between tests)."""
    _STATES.clear()
    LAST_METRICS.clear()


def pop_metrics() -> dict[str, float]:
    """Return and clear :data:`LAST_METRICS`."""
    out = dict(LAST_METRICS)
    LAST_METRICS.clear()
    return out
