"""docs/methods.md documents every option of every estimator with its real default."""

import ast
import re
from dataclasses import fields
from pathlib import Path

import pytest

import verl  # noqa: F401
from rlvr_recipes.advantage.estimators import AAPOOptions, AGRAEOptions, AVSPOOptions, SignOptions, WReinforceOptions
from rlvr_recipes.advantage.options import option_defaults

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "methods.md").read_text()


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


@pytest.mark.parametrize("method", ["aapo", "agrae", "avspo", "cw_grpo", "grpo_n"])
def test_recipe_readme_quotes_the_lab_figures_that_docs_lab_gives(method):
    """Each recipe README's "On the CPU lab" paragraph is written from docs/lab.md: every 95 % interval (``[a, b]``)
    and every p-value (``p 0.0030``) it quotes appears in docs/lab.md too, so a mistyped or stale figure fails here."""
    lab = " ".join((ROOT / "docs" / "lab.md").read_text().split())
    readme = (ROOT / "rlvr_recipes" / "recipes" / method / "README.md").read_text()
    start = readme.index("**On the CPU lab**")
    paragraph = " ".join(readme[start : readme.index("\n\n", start)].split())
    intervals = re.findall(r"\[[-+]\d\.\d+, [-+]\d\.\d+\]", paragraph)
    p_values = re.findall(r"\bp (\d[\d.e-]*\d)", paragraph)
    assert paragraph.startswith("**On the CPU lab** (docs/lab.md")
    for interval in intervals:
        assert interval in lab, interval
    for p in p_values:
        assert re.search(rf"\bp (=|is )?{re.escape(p)}\b", lab), f"p {p}"
