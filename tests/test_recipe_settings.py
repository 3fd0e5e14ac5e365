"""Every recipe's composed config matches its paper-settings table (rlvr_recipes/recipes/<paper>/settings.yaml), every
table row says where it comes from, each README shows the current rendering of its table, verl's loop runs the steps
the paper states (rlvr_recipes/launch/run_plan.py), each baseline row of a paper's comparison differs from its method
only where the paper says, and each recipe records the verl version it was checked against."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from rlvr_recipes import RECIPES_DIR
from rlvr_recipes.launch import verl_version
from rlvr_recipes.launch.run_plan import RunPlanError, plan
from rlvr_recipes.launch.settings_table import command, load, rendered_readme, settings_files
from tests.test_configs import CONFIGS, ENV, load as compose

SPECS = {path.parent.name: load(path) for path in settings_files()}
ROWS = [(paper, name, row) for paper, spec in SPECS.items() for row in spec["rows"] for name in row["configs"]]
RUNS = [(paper, name) for paper, spec in SPECS.items() for name in spec["configs"]]
COMPARISONS = [(paper, comp) for paper, spec in SPECS.items() for comp in spec["comparisons"]]


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    for k, v in ENV.items():
        monkeypatch.setenv(k, v)


_COMPOSED: dict = {}


def composed(name: str, overrides: tuple = ()):
    key = (name, tuple(overrides))
    if key not in _COMPOSED:  # through verl's ppo_trainer config path, as main_ppo composes it
        _COMPOSED[key] = compose(name, list(overrides))
    return _COMPOSED[key]


def flat(cfg) -> dict[str, Any]:
    """Every leaf of a composed config, resolved, by dotted key."""
    out: dict[str, Any] = {}

    def walk(node: Any, prefix: str) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, f"{prefix}.{k}" if prefix else str(k))
        else:
            out[prefix] = node

    walk(OmegaConf.to_container(cfg, resolve=True, throw_on_missing=False), "")
    return out


def differing_keys(a, b) -> set[str]:
    """The dotted keys whose values differ between two composed configs (present in one only counts)."""
    fa, fb = flat(a), flat(b)
    return {k for k in fa.keys() | fb.keys() if fa.get(k, object()) != fb.get(k, object())}


# ---------------------------------------------------------------- the tables and the composed configs


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
    readme = Path(RECIPES_DIR) / paper / "README.md"
    text = readme.read_text()
    assert rendered_readme(text, SPECS[paper]) == text, f"run `python -m rlvr_recipes.launch.settings_table` ({readme})"


def test_a_drifted_value_fails():
    row = next(r for r in SPECS["agrae"]["rows"] if r["key"] == "trainer.total_epochs")
    cfg = compose("agrae_grpo", ["trainer.total_epochs=1"])
    assert OmegaConf.select(cfg, row["key"]) != row["value"]


# ---------------------------------------------------------------- what verl runs


@pytest.mark.parametrize("paper,name", RUNS, ids=[n for _, n in RUNS])
def test_verl_runs_the_papers_steps(paper, name):
    """Trainer steps, updates per rollout batch and responses per update, by verl 0.9.1's rules, equal the table's."""
    run = SPECS[paper]["run"]
    got = plan(composed(name), run["train_prompts"], name=name)
    assert (got.trainer_steps, got.updates_per_step, got.responses_per_update) == (
        run["trainer_steps"], run["updates_per_step"], run["responses_per_update"]), got.describe()
    assert got.reaches_last_step, f"{name}: {got.describe()}"


def _cfg(batch: int, n: int, mini: int, epochs: int, pinned=None, ppo_epochs: int = 1):
    return OmegaConf.create({
        "data": {"train_batch_size": batch},
        "actor_rollout_ref": {"rollout": {"n": n}, "actor": {"ppo_mini_batch_size": mini, "ppo_epochs": ppo_epochs}},
        "trainer": {"total_epochs": epochs, "total_training_steps": pinned, "v1": {"trainer_mode": "rlvr"}},
    })


def test_plan_by_hand():
    # MATH: 7500 // 1024 = 7 steps an epoch (the last 332 prompts dropped), x 20 epochs = 140, not 7500 * 20 / 1024
    p = plan(_cfg(1024, 8, 256, 20), 7500)
    assert (p.steps_per_epoch, p.trainer_steps, p.updates_per_step, p.responses_per_update) == (7, 140, 4, 2048)
    assert p.optimizer_steps == 560 and p.reaches_last_step
    # a pinned count below the epochs' count stops the loop there; ppo_epochs repeats the mini-batches
    p = plan(_cfg(16, 12, 16, 1, pinned=100, ppo_epochs=2), 7000)
    assert (p.steps_per_epoch, p.trainer_steps, p.updates_per_step, p.responses_per_update) == (437, 100, 2, 192)
    # 000 read as 8 prompts a step: 500 // 8 = 62 a step x 8 epochs = 496 < the pinned 500
    with pytest.raises(RunPlanError, match=r"total_training_steps=500 cannot be reached.*= 496 steps"):
        plan(_cfg(8, 8, 8, 8, pinned=500), 500)
    with pytest.raises(RunPlanError, match="does not split into mini-batches"):
        plan(_cfg(1000, 8, 300, 1), 7500)
    with pytest.raises(RunPlanError, match="fewer than one batch"):
        plan(_cfg(1024, 8, 256, 1), 1000)


def test_an_unreachable_pinned_step_count_fails():
    """The recipe check fails on a config whose pinned steps verl cannot reach (avspo at the old 8 prompts a step)."""
    run = SPECS["avspo"]["run"]
    cfg = compose("avspo", ["data.train_batch_size=8", "actor_rollout_ref.actor.ppo_mini_batch_size=8",
                            "trainer.total_epochs=8"])
    with pytest.raises(RunPlanError, match="496"):
        plan(cfg, run["train_prompts"], name="avspo")


# ---------------------------------------------------------------- each paper's comparison


@pytest.mark.parametrize("paper,comp", COMPARISONS, ids=[f"{p}:{c['row']}" for p, c in COMPARISONS])
def test_baseline_differs_from_its_method_only_where_the_paper_says(paper, comp):
    method = composed(comp["method"])
    baseline = composed(comp["baseline"], tuple(comp["overrides"]))
    assert differing_keys(method, baseline) == set(comp["differs"]), (
        f"{paper} {comp['row']}: `{command(comp['baseline'], comp['overrides'])}` against `{comp['method']}`")


def test_a_baseline_that_differs_elsewhere_fails():
    """004's GRPO (`grpo`) is not 001's: as a baseline of agrae_grpo it differs beyond the estimator."""
    extra = differing_keys(composed("agrae_grpo"), composed("grpo")) - {"algorithm.adv_estimator"}
    assert {"data.max_response_length", "actor_rollout_ref.actor.loss_agg_mode"} <= extra


def test_every_method_paper_names_its_baselines():
    for paper in ("avspo", "agrae", "aapo", "cw_grpo", "grpo_n"):
        assert SPECS[paper]["comparisons"], f"{paper}: no comparison rows"


# ---------------------------------------------------------------- the verl version each recipe was checked against


@pytest.mark.parametrize("paper", sorted(SPECS))
def test_each_recipe_folder_records_its_verl_version(paper):
    path = Path(RECIPES_DIR) / paper / "verl_version.txt"
    assert path.read_text().strip() == "0.9.1"
    for name in SPECS[paper]["configs"]:
        assert verl_version.required_verl_version(name) == "0.9.1"


def test_required_version_covers_every_config():
    names = {p.stem for p in CONFIGS.glob("*.yaml")}
    assert names <= set(verl_version.recipe_folders())
    with pytest.raises(KeyError, match="not a recipe config"):
        verl_version.required_verl_version("no_such_recipe")


def test_installed_verl_is_the_checked_one():
    assert verl_version.installed_verl_version() == "0.9.1"
    assert verl_version.check_verl_version("agrae_grpo") == "0.9.1"


def test_another_verl_is_refused_unless_allowed(monkeypatch):
    monkeypatch.delenv(verl_version.ALLOW_ENV, raising=False)
    with pytest.raises(verl_version.VerlVersionError, match=r"verl 0\.9\.1.*verl 0\.10\.0 is installed.*"
                                                            r"RLVR_ALLOW_VERL_VERSION=1"):
        verl_version.check_verl_version("grpo_n", installed="0.10.0")
    with pytest.warns(UserWarning, match="0.10.0"):
        assert verl_version.check_verl_version("grpo_n", allow_other=True, installed="0.10.0") == "0.10.0"
    monkeypatch.setenv(verl_version.ALLOW_ENV, "1")
    with pytest.warns(UserWarning):
        verl_version.check_verl_version("grpo_n", installed="0.10.0")
    monkeypatch.setenv(verl_version.ALLOW_ENV, "0")
    with pytest.raises(verl_version.VerlVersionError):
        verl_version.check_verl_version("grpo_n", installed="0.10.0")


def test_a_missing_or_broken_version_file_is_named(tmp_path, monkeypatch):
    folder = tmp_path / "paper"
    folder.mkdir()
    (folder / "settings.yaml").write_text("configs: [x]\n")
    monkeypatch.setattr(verl_version, "RECIPES_DIR", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="verl_version.txt"):
        verl_version.required_verl_version("x")
    (folder / "verl_version.txt").write_text("0.9.1 0.9.2\n")
    with pytest.raises(ValueError, match="one version"):
        verl_version.required_verl_version("x")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (folder / "verl_version.txt").write_text("0.9.1\n")
        assert verl_version.check_verl_version("x", installed="0.9.1") == "0.9.1"
