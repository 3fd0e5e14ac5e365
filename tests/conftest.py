"""Shared set-up: every test starts with empty estimator state; hypothesis examples have no deadline.

``make test`` runs the tests not marked ``e2e`` beside the e2e ones (verl's trainer runs, about 1.4 of the 2 cores),
so a property test may share the machine with a trainer run: the tests hold identities, not timings.
"""

import os
import sys

import pytest
from hypothesis import settings

settings.register_profile("shared_machine", deadline=None)
settings.load_profile("shared_machine")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


@pytest.fixture(autouse=True)
def _fresh_estimator_state():
    from rlvr_recipes.advantage import state

    state.reset()
    yield
    state.reset()
