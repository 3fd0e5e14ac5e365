"""Hold a freshly started trainer at the end of its imports until its launcher has checked the config.

``rlvr_recipes.launch.cpu_run`` checks a run's config before the trainer may start Ray (an unknown method, option or file stops
in seconds, with the key named). That check imports verl, and so does ``python -m verl.trainer.main_ppo``: about
10 s of CPU each on a 2-core machine, one after the other. The runner therefore starts ``main_ppo`` at once with
``RLVR_START_GATE=<file>`` in its environment; this package's plugin (:mod:`rlvr_recipes.launch.plugin`, loaded at the end of
``import verl``) calls :func:`wait`, which holds the process there, before Hydra composes the config and before Ray
starts, until the runner writes its verdict into the file with :func:`open_gate`: ``go`` lets it continue, anything
else ends it (exit code 3). The two imports then overlap instead of adding up.

A held trainer also ends when its launcher is gone (its parent is no longer the process that started it) or after
``timeout_s``. The variables are removed from the environment on the way through, so the Ray workers the trainer
starts never wait.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Optional

ENV = "RLVR_START_GATE"
#: the launcher's process id (its parent's, if unset): a held process whose parent is another one ends
ENV_LAUNCHER = "RLVR_START_GATE_LAUNCHER"
GO = "go"
STOP = "stop"


def environment(path: str) -> dict[str, str]:
    """What to add to a trainer's environment so that it waits for the verdict this process writes to ``path``."""
    return {ENV: path, ENV_LAUNCHER: str(os.getpid())}


def open_gate(path: str, verdict: str) -> None:
    """Write ``verdict`` (:data:`GO` or :data:`STOP`) to the gate file ``path`` atomically."""
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        f.write(verdict)
    os.replace(tmp, path)


def read_verdict(path: str) -> Optional[str]:
    """The verdict written to ``path``, or ``None`` while there is none."""
    try:
        with open(path) as f:
            return f.read().strip()
    except FileNotFoundError:
        return None


def wait(poll_s: float = 0.05, timeout_s: float = 900.0) -> None:
    """Return at once without ``RLVR_START_GATE``; else wait for the verdict and return on ``go``, exit on any other.

    Exits (code 3, a line on stderr) on a ``stop`` verdict, when the parent process is gone, or after ``timeout_s``.
    """
    path = os.environ.pop(ENV, None)
    launcher = os.environ.pop(ENV_LAUNCHER, None)
    if not path:
        return
    parent = int(launcher) if launcher else os.getppid()
    deadline = time.monotonic() + timeout_s
    while (verdict := read_verdict(path)) is None:
        if os.getppid() != parent:
            verdict = "launcher gone"
            break
        if time.monotonic() > deadline:
            verdict = f"no verdict in {timeout_s:.0f} s"
            break
        time.sleep(poll_s)
    if verdict != GO:
        print(f"[start gate] not starting: {verdict}", file=sys.stderr, flush=True)
        os._exit(3)
