"""Shared set-up: every test starts with empty estimator state; hypothesis examples have no deadline; ``make_recipe``
reads the commands a make target runs.

``make test`` runs the tests not marked ``e2e`` beside the e2e ones (verl's trainer runs, about 1.4 of the 2 cores),
so a property test may share the machine with a trainer run: the tests hold identities, not timings.
"""

import os
import subprocess
import sys
from typing import Optional

import pytest
from hypothesis import settings

settings.register_profile("shared_machine", deadline=None)
settings.load_profile("shared_machine")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


def make_recipe(target: str, stem: str = "", given: Optional[dict[str, str]] = None) -> tuple[str, list[str]]:
    """The Makefile and the command lines make runs for ``target`` (``make -n``: printed, not run), continuation lines
    joined: ``$(PY)`` set to ``python``, the venv's stamp not remade, no variable taken from the environment, and
    ``given`` set on make's command line. For a pattern rule (``target`` with ``%``), ``stem`` is what ``%`` matches."""
    with open(os.path.join(ROOT, "Makefile")) as f:
        makefile = f.read()
    command = ["make", "--no-print-directory", "-n", "-o", ".venv/.installed", "PY=python", target.replace("%", stem),
               *(f"{name}={value}" for name, value in (given or {}).items())]
    printed = subprocess.run(command, cwd=ROOT, env={"PATH": os.environ["PATH"]}, capture_output=True, text=True,
                             check=True).stdout
    return makefile, [line.strip() for line in printed.replace("\\\n", " ").strip().split("\n")]


@pytest.fixture(autouse=True)
def _fresh_estimator_state():
    from rlvr_recipes.advantage import state

    state.reset()
    yield
    state.reset()
