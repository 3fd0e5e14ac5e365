"""Every recipe's composed config matches its paper-settings table (rlvr_recipes/recipes/<paper>/settings.yaml), every table row
says where it comes from, and each README shows the current rendering of its table."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from rlvr_recipes.launch.settings_table import load, rendered_readme, settings_files
from tests.test_configs import CONFIGS, ENV, load as compose

SPECS = {path.parent.name: load(path) for path in settings_files()}
ROWS = [(paper, name, row) for paper, spec in SPECS.items() for row in spec["rows"] for name in row["configs"]]


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    for k, v in ENV.items():
        monkeypatch.setenv(k, v)


_COMPOSED: dict = {}


def composed(name: str):
    if name not in _COMPOSED:  # through verl's ppo_trainer config path, as main_ppo composes it
        _COMPOSED[name] = compose(name)
    return _COMPOSED[name]


def test_every_recipe_has_exactly_one_table():
    recipes = sorted(p.stem for p in CONFIGS.glob("*.yaml") if p.stem != "cpu")
    owners = sorted(name for spec in SPECS.values() for name in spec["configs"])
    assert owners == recipes


@pytest.mark.parametrize("paper,name,row", ROWS, ids=[f"{n}:{r['key']}" for _, n, r in ROWS])
def test_composed_config_matches_the_table(paper, name, row):
    assert set(row["configs"]) <= set(SPECS[paper]["configs"]), row
    missing = object()
    value = OmegaConf.select(composed(name), row["key"], default=missing)
    assert value is not missing, f"{name}: {row['key']} is not a key of the composed config"
    value = OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value
    expected = row["value"]
    if isinstance(expected, float) and not isinstance(value, bool):
        assert value == pytest.approx(expected, rel=1e-9), f"{name}: {row['key']}={value}, table {expected}"
    else:
        assert value == expected, f"{name}: {row['key']}={value!r}, table {expected!r} ({row['source']})"


@pytest.mark.parametrize("paper,name,row", ROWS, ids=[f"{n}:{r['key']}" for _, n, r in ROWS])
def test_every_row_names_its_source(paper, name, row):
    assert row["source"], row
    if row["source"] == "paper silent":
        assert row["note"].startswith("paper silent: chosen because "), row
    if "differs" in row["note"]:
        assert row["note"].startswith("differs from paper on purpose: "), row


def test_each_key_is_set_once_per_recipe():
    for paper, spec in SPECS.items():
        seen = set()
        for row in spec["rows"]:
            for name in row["configs"]:
                assert (name, row["key"]) not in seen, f"{paper}: {name} {row['key']} twice"
                seen.add((name, row["key"]))


@pytest.mark.parametrize("paper", sorted(SPECS))
def test_readme_shows_the_current_table(paper):
    readme = Path(settings_files()[0]).parents[1] / paper / "README.md"
    text = readme.read_text()
    assert rendered_readme(text, SPECS[paper]) == text, f"run `python -m rlvr_recipes.launch.settings_table` ({readme})"


def test_a_drifted_value_fails():
    row = next(r for r in SPECS["agrae"]["rows"] if r["key"] == "trainer.total_epochs")
    cfg = compose("agrae_grpo", ["trainer.total_epochs=1"])
    assert OmegaConf.select(cfg, row["key"]) != row["value"]
