"""Shared fixtures: every test starts with empty estimator state."""

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


@pytest.fixture(autouse=True)
def _fresh_estimator_state():
    from rlvr_recipes.advantage import state

    state.reset()
    yield
    state.reset()
