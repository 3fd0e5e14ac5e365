"""The verl version each recipe was checked against, and a check that the installed verl is that version.

Each paper's folder records it: ``rlvr_recipes/recipes/<paper>/verl_version.txt`` (one line, e.g. ``0.9.1``). The
settings tests read verl's own code to tell what a config runs (rlvr_recipes/launch/run_plan.py: steps, updates,
batches), and verl changes those rules between releases (the v1 loop, the engine workers' ``optim.clip_grad``, the
replay buffer's handling of ``max_num_gen_batches``), so a recipe is only known to reproduce its paper on the verl it
was checked against. The launchers call :func:`check_verl_version` before starting a run; another verl stops with a
message naming both versions, unless ``allow_other`` is passed or ``RLVR_ALLOW_VERL_VERSION=1`` is set.

    python -m rlvr_recipes.launch.verl_version agrae_grpo    # prints the required and installed versions, exit 1 on a mismatch
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path
from typing import Optional, Sequence

import yaml

from rlvr_recipes import RECIPES_DIR

#: the environment variable that lets a run go ahead on another verl (value ``1``)
ALLOW_ENV = "RLVR_ALLOW_VERL_VERSION"
#: the file in each recipe folder
VERSION_FILE = "verl_version.txt"
#: configs that belong to no paper's settings table, and the folder whose version they follow: the CPU config
#: composes the baseline bodies (rlvr_recipes/configs/baseline/)
EXTRA_CONFIGS = {"cpu": "baselines"}


class VerlVersionError(RuntimeError):
    """The installed verl is not the version a recipe was checked against."""


def recipe_folders() -> dict[str, str]:
    """Config name -> recipe folder (``rlvr_recipes/recipes/<folder>``), from each folder's settings.yaml ``configs``."""
    owners: dict[str, str] = {}
    for path in sorted(Path(RECIPES_DIR).glob("*/settings.yaml")):
        for name in yaml.safe_load(path.read_text()).get("configs", []):
            owners[str(name)] = path.parent.name
    for name, folder in EXTRA_CONFIGS.items():
        owners.setdefault(name, folder)
    return owners


def required_verl_version(recipe_config_name: str) -> str:
    """The verl version ``recipe_config_name`` (a config of rlvr_recipes/configs, e.g. ``agrae_grpo``) was checked against.

    Raises ``KeyError`` naming the known configs when the name belongs to no recipe folder, and ``FileNotFoundError``
    / ``ValueError`` naming the file when its folder has no readable version.
    """
    owners = recipe_folders()
    if recipe_config_name not in owners:
        raise KeyError(f"{recipe_config_name!r} is not a recipe config; known: {', '.join(sorted(owners))}")
    path = Path(RECIPES_DIR) / owners[recipe_config_name] / VERSION_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: the recipe {recipe_config_name!r} records no verl version")
    version = path.read_text().strip()
    if not version or len(version.split()) != 1:
        raise ValueError(f"{path} must hold one version (e.g. 0.9.1), got {version!r}")
    return version


def installed_verl_version() -> Optional[str]:
    """The installed verl's version, or None when verl is not installed."""
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # pragma: no cover - Python < 3.8
        return None
    try:
        return version("verl")
    except PackageNotFoundError:
        return None


def _allowed_by_env() -> bool:
    return os.environ.get(ALLOW_ENV, "").strip() == "1"


def check_verl_version(config_name: str, allow_other: bool = False, installed: Optional[str] = None) -> str:
    """Check that the installed verl is the version ``config_name`` was checked against; return the installed version.

    Raises :class:`VerlVersionError` naming the installed and required versions and both ways to go ahead anyway
    (``allow_other=True``, or ``RLVR_ALLOW_VERL_VERSION=1`` in the environment); with either, it warns instead.
    ``installed`` replaces the detected version (for tests). A missing verl is an error either way.
    """
    required = required_verl_version(config_name)
    found = installed if installed is not None else installed_verl_version()
    if found is None:
        raise VerlVersionError(f"verl is not installed; the recipe {config_name!r} needs verl {required} "
                               f"(pip install verl=={required})")
    if found == required:
        return found
    message = (f"the recipe {config_name!r} was checked against verl {required} (rlvr_recipes/recipes/"
               f"{recipe_folders()[config_name]}/{VERSION_FILE}), but verl {found} is installed: step counts, batch "
               f"splits and loss keys may differ. Install verl=={required}, or go ahead anyway with "
               f"{ALLOW_ENV}=1 (or allow_other=True)")
    if allow_other or _allowed_by_env():
        warnings.warn(message, stacklevel=2)
        return found
    raise VerlVersionError(message)


def main(argv: Optional[Sequence[str]] = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config_name", help="a recipe config, e.g. agrae_grpo")
    parser.add_argument("--allow-other", action="store_true", help=f"warn instead of failing (as {ALLOW_ENV}=1)")
    args = parser.parse_args(argv)
    try:
        found = check_verl_version(args.config_name, allow_other=args.allow_other)
    except (VerlVersionError, KeyError, FileNotFoundError, ValueError) as err:
        print(f"[verl_version] {err.args[0] if err.args else err}", file=sys.stderr)
        return 1
    print(f"[verl_version] {args.config_name}: requires verl {required_verl_version(args.config_name)}, "
          f"installed {found}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
