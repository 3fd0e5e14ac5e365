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

#: bottom to top; packages on one row are siblings that must not import each other
LAYERS: list[set[str]] = [
    {"advantage"},
    {"reward"},
    {"trainer", "cpu_backend", "tiny_task", "toy"},
    {"launch"},
]
LAYER = {pkg: i for i, row in enumerate(LAYERS) for pkg in row}


def _modules() -> dict[str, Path]:
    mods = {}
    for pkg in LAYER:
        for path in (ROOT / pkg).rglob("*.py"):
            rel = path.relative_to(ROOT).with_suffix("")
            parts = list(rel.parts)
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
    return {name for name in out if name.split(".")[0] in LAYER}


MODULES = _modules()
GRAPH = {mod: {m for m in _imports(path, mod) if m in MODULES and m != mod} for mod, path in MODULES.items()}


def test_every_package_has_a_layer():
    top = {p.name for p in ROOT.iterdir() if (p / "__init__.py").exists()}
    assert top - {"tests"} == set(LAYER), "a new top-level package needs a row in LAYERS"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_import_reaches_up_or_sideways(module):
    bad = _reaches_up(module, GRAPH[module])
    assert not bad, f"{module} (layer {LAYER[module.split('.')[0]]}) imports {bad}"


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
    pkg = module.split(".")[0]
    return sorted(m for m in imports if m.split(".")[0] != pkg and LAYER[m.split(".")[0]] >= LAYER[pkg])


def test_the_checks_see_real_edges_and_a_violation(tmp_path):
    assert {"cpu_backend", "trainer.extension", "advantage.estimators"} <= GRAPH["launch.plugin"]
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from launch import plugin\n    from . import core\n")
    imports = _imports(bad, "advantage.bad")
    assert {"launch.plugin", "advantage.core"} <= imports
    assert _reaches_up("advantage.bad", imports) == ["launch", "launch.plugin"]
