"""rlvr-recipes: group-relative advantage estimators and policy losses from five RLVR papers, as verl plugins.

Everything the package installs lives under this one import name, so that nothing in a user's working directory
(a ``trainer.py``, a ``reward/`` package, Ray's ``working_dir``) can shadow it. The recipe configs and the papers'
settings tables ship inside it: :data:`CONFIG_DIR` is what ``--config-path`` takes (or ``pkg://rlvr_recipes.configs``).
"""

from __future__ import annotations

import os

__version__ = "0.2.0"

#: the installed package (``.../rlvr_recipes``)
PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
#: the directory that holds the package: what a subprocess needs on ``PYTHONPATH`` to import it without an install
IMPORT_ROOT = os.path.dirname(PACKAGE_DIR)
#: the Hydra recipe configs (``python -m verl.trainer.main_ppo --config-path CONFIG_DIR --config-name agrae_grpo``)
CONFIG_DIR = os.path.join(PACKAGE_DIR, "configs")
#: one folder per paper: README, settings table
RECIPES_DIR = os.path.join(PACKAGE_DIR, "recipes")
#: Hydra's search-path form of :data:`CONFIG_DIR`, valid wherever the package is installed
CONFIG_SEARCH_PATH = "pkg://rlvr_recipes.configs"


def runs_dir() -> str:
    """Where runs write by default: ``$RLVR_RUNS_DIR``, else ``runs/`` in the working directory."""
    return os.path.abspath(os.environ.get("RLVR_RUNS_DIR") or "runs")
