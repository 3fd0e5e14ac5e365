"""``rlvr-recipes``: the installed package's command line, usable from any directory (no clone needed).

    rlvr-recipes list                         the recipes, each with its paper folder and its first comment line
    rlvr-recipes config-dir                   where the recipe configs are (for --config-path)
    rlvr-recipes compose NAME [KEY=VALUE ...] the recipe composed as main_ppo composes it, as YAML (nothing runs)
    rlvr-recipes script NAME                  the path of a shipped launcher: single_node, ray_submit, slurm, quickstart
    rlvr-recipes cpu ...                      the embedded CPU run (python -m rlvr_recipes.launch.cpu_run ...)
    rlvr-recipes compare ...                  methods side by side (python -m rlvr_recipes.launch.compare ...)
    rlvr-recipes ref-rewards ...              AAPO's reference rewards (python -m rlvr_recipes.launch.ref_rewards ...)
    rlvr-recipes data ...                     data preparation (python -m rlvr_recipes.launch.data ...)

A recipe runs through verl's own entry point, with the configs found inside the installed package::

    python -m verl.trainer.main_ppo --config-path "$(rlvr-recipes config-dir)" --config-name agrae_grpo ...

or through the launchers (``bash "$(rlvr-recipes script single_node)" --recipe agrae_grpo``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Optional, Sequence

import yaml

from rlvr_recipes import CONFIG_DIR, PACKAGE_DIR, RECIPES_DIR

#: subcommands that hand their arguments to a module's ``main(argv)``
FORWARDED = {
    "cpu": "rlvr_recipes.launch.cpu_run",
    "compare": "rlvr_recipes.launch.compare",
    "ref-rewards": "rlvr_recipes.launch.ref_rewards",
    "data": "rlvr_recipes.launch.data",
    "evaluate": "rlvr_recipes.launch.evaluate",
    "settings-table": "rlvr_recipes.launch.settings_table",
}
#: configs that are not recipes: the CPU overlay (composed by the embedded run)
NOT_RECIPES = {"cpu"}
SCRIPTS = ("single_node", "ray_submit", "slurm", "quickstart")


def recipe_names() -> list[str]:
    """Every recipe config name (``rlvr_recipes/configs/<name>.yaml``, the CPU overlay excluded), sorted."""
    return sorted(f[:-5] for f in os.listdir(CONFIG_DIR) if f.endswith(".yaml") and f[:-5] not in NOT_RECIPES)


def recipe_papers() -> dict[str, str]:
    """Recipe name -> the ``recipes/<paper>`` folder whose settings table covers it."""
    owners: dict[str, str] = {}
    for paper in sorted(os.listdir(RECIPES_DIR)):
        path = os.path.join(RECIPES_DIR, paper, "settings.yaml")
        if os.path.isfile(path):
            with open(path) as f:
                for name in (yaml.safe_load(f) or {}).get("configs", []):
                    owners.setdefault(name, paper)
    return owners


def _first_comment(name: str) -> str:
    with open(os.path.join(CONFIG_DIR, f"{name}.yaml")) as f:
        first = f.readline().strip()
    return first.lstrip("# ").strip() if first.startswith("#") else ""


def _list() -> int:
    papers = recipe_papers()
    names = recipe_names()
    width = max(map(len, names))
    for name in names:
        print(f"{name:<{width}}  recipes/{papers.get(name, '-'):<9}  {_first_comment(name)[:100]}")
    print(f"\n{len(names)} recipes in {CONFIG_DIR}")
    return 0


def _compose(name: str, overrides: Sequence[str]) -> int:
    if name not in recipe_names() + sorted(NOT_RECIPES):
        print(f"unknown recipe '{name}'; known: {' '.join(recipe_names())}", file=sys.stderr)
        return 2
    from omegaconf import OmegaConf

    from rlvr_recipes.launch.ref_rewards import compose_recipe

    print(OmegaConf.to_yaml(compose_recipe(name, overrides)), end="")
    return 0


def _script(name: str) -> int:
    path = os.path.join(PACKAGE_DIR, "launch", f"{name}.sh")
    if name not in SCRIPTS or not os.path.isfile(path):
        print(f"unknown launcher '{name}'; known: {' '.join(SCRIPTS)}", file=sys.stderr)
        return 2
    print(path)
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in FORWARDED:
        result = importlib.import_module(FORWARDED[argv[0]]).main(argv[1:])
        return int(result or 0)
    parser = argparse.ArgumentParser(prog="rlvr-recipes", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="forwarded to a module: " + ", ".join(sorted(FORWARDED)))
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the recipes")
    sub.add_parser("config-dir", help="the directory of the recipe configs (for --config-path)")
    p_compose = sub.add_parser("compose", help="print a recipe composed as main_ppo composes it")
    p_compose.add_argument("name")
    p_compose.add_argument("overrides", nargs="*")
    p_script = sub.add_parser("script", help="print the path of a shipped launcher")
    p_script.add_argument("name", choices=SCRIPTS)
    for name, module in FORWARDED.items():
        sub.add_parser(name, help=f"python -m {module} ...")
    args = parser.parse_args(argv)
    if args.command == "list":
        return _list()
    if args.command == "config-dir":
        print(CONFIG_DIR)
        return 0
    if args.command == "compose":
        return _compose(args.name, args.overrides)
    return _script(args.name)


if __name__ == "__main__":
    sys.exit(main())
