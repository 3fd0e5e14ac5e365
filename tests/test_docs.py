"""docs/methods.md documents every option of every estimator with its real default."""

import ast
import re
from dataclasses import fields
from pathlib import Path

import pytest

import verl  # noqa: F401
from rlvr_recipes.advantage.estimators import AAPOOptions, AGRAEOptions, AVSPOOptions, SignOptions, WReinforceOptions
from rlvr_recipes.advantage.options import option_defaults

DOC = (Path(__file__).resolve().parents[1] / "docs" / "methods.md").read_text()


def _same(shown: str, default) -> bool:
    if default is None:
        return shown == "null"
    if isinstance(default, bool):
        return shown == str(default).lower()
    if isinstance(default, (int, float)):
        return float(shown) == float(default)
    if isinstance(default, list):
        return ast.literal_eval(shown) == default
    return shown == default


@pytest.mark.parametrize("cls, section", [(AGRAEOptions, "agrae"), (AVSPOOptions, "avspo"), (AAPOOptions, "aapo")])
def test_every_option_is_documented_with_its_default(cls, section):
    start = DOC.index(f"### `algorithm.{section}.*`")
    table = DOC[start : DOC.index("\n#", start + 1)]
    for key, default in option_defaults(cls).items():
        row = re.search(rf"^\| `{key}` \| `([^`]*)` \|", table, re.M)
        assert row, f"algorithm.{section}.{key} missing from docs/methods.md"
        assert _same(row.group(1), default), f"{key}: docs say {row.group(1)}, code default {default}"


def test_small_sections_listed():
    for cls, section in ((SignOptions, "grpo_n"), (WReinforceOptions, "w_reinforce")):
        line = next(l for l in DOC.splitlines() if l.startswith(f"### `algorithm.{section}.*`"))
        for f in fields(cls):
            assert f"`{f.name}`" in line
