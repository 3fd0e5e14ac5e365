"""The import graph reads from the folders: entry points at the top, the maths at the bottom.

A module may import this project's packages of a lower layer, and modules of its own package; never a package of
its own layer or one above, and no two modules import each other (directly or through a cycle). Imports inside
functions count: they are how a lower layer would reach up without being seen at import time.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "rlvr_recipes"

#: bottom to top, as subpackages of ``rlvr_recipes``; packages on one row are siblings that must not import each other.
#: The package's own ``__init__`` (paths and the version, no imports of its subpackages) lies below them all.
LAYERS: list[set[str]] = [
    {"advantage"},
    {"reward"},
    {"trainer", "cpu_backend", "tiny_task", "toy"},
    {"launch"},
]
LAYER = {pkg: i for i, row in enumerate(LAYERS) for pkg in row}


def _package(module: str) -> str:
    """``rlvr_recipes.advantage.core`` -> ``advantage``; the package's root module -> ``""`` (below every layer)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _layer(module: str) -> int:
    return LAYER[_package(module)] if _package(module) else -1


def _modules() -> dict[str, Path]:
    mods = {PACKAGE: ROOT / PACKAGE / "__init__.py"}
    for pkg in LAYER:
        for path in (ROOT / PACKAGE / pkg).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join(parts)] = path
    return mods


def _imports(path: Path, module: str) -> set[str]:
    """Absolute names of this project's modules imported anywhere in ``path`` (relative imports resolved)."""
    out = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            out.add(base)
            out.update(f"{base}.{alias.name}" for alias in node.names)
    return {name for name in out if name.split(".")[0] == PACKAGE}


MODULES = _modules()
GRAPH = {mod: {m for m in _imports(path, mod) if m in MODULES and m != mod} for mod, path in MODULES.items()}


def test_every_package_has_a_layer():
    subpackages = {p.name for p in (ROOT / PACKAGE).iterdir() if (p / "__init__.py").exists()}
    assert subpackages - {"configs"} == set(LAYER), "a new subpackage needs a row in LAYERS"


def test_one_import_name_at_the_top():
    """Nothing but ``rlvr_recipes`` (and the tests) is a package at the repository's top level: no generic name that
    a user's ``trainer.py`` or ``reward/`` could shadow."""
    top = {p.name for p in ROOT.iterdir() if (p / "__init__.py").exists()}
    assert top == {PACKAGE, "tests"}


def test_the_root_module_imports_no_subpackage():
    assert GRAPH[PACKAGE] == set()


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_import_reaches_up_or_sideways(module):
    bad = _reaches_up(module, GRAPH[module])
    assert not bad, f"{module} (layer {_layer(module)}) imports {bad}"


def test_no_import_cycles():
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(mod: str) -> None:
        state[mod] = 1
        path.append(mod)
        for dep in sorted(GRAPH[mod]):
            if state.get(dep) == 1:
                raise AssertionError("import cycle: " + " -> ".join(path[path.index(dep):] + [dep]))
            if dep not in state:
                visit(dep)
        path.pop()
        state[mod] = 2

    for mod in sorted(GRAPH):
        if mod not in state:
            visit(mod)


def _reaches_up(module: str, imports: set[str]) -> list[str]:
    pkg = _package(module)
    return sorted(m for m in imports if _package(m) != pkg and _layer(m) >= _layer(module))


def test_the_checks_see_real_edges_and_a_violation(tmp_path):
    assert {"rlvr_recipes.cpu_backend", "rlvr_recipes.trainer.extension",
            "rlvr_recipes.advantage.estimators"} <= GRAPH["rlvr_recipes.launch.plugin"]
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from rlvr_recipes.launch import plugin\n    from . import core\n")
    imports = _imports(bad, "rlvr_recipes.advantage.bad")
    assert {"rlvr_recipes.launch.plugin", "rlvr_recipes.advantage.core"} <= imports
    assert _reaches_up("rlvr_recipes.advantage.bad", imports) == ["rlvr_recipes.launch", "rlvr_recipes.launch.plugin"]
