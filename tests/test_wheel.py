"""The package as a user installs it: a wheel built from the repository, installed (not editable) into a fresh
environment, used from a directory outside the repository whose own ``trainer.py``, ``reward/``, ``launch/``,
``advantage/`` and ``toy/`` would shadow any generic top-level name.

The fresh environment is a new virtualenv holding only the wheel; verl and its dependencies come from the test's own
environment through a ``.pth`` path entry (a path entry, so the editable install's import hook there is not loaded:
the tests assert that ``rlvr_recipes`` is imported from the wheel). The two-step CPU run is e2e-marked.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TINY_DIR = ROOT / "runs" / "tiny"  # shared with the e2e suite and the quickstart: built once
#: what must not be importable at the top level after install, each with a stand-in in the user's directory
GENERIC = ["trainer", "reward", "launch", "advantage", "toy", "tiny_task", "cpu_backend"]
ESTIMATORS = ["agrae", "agrae_pos_dominant", "agrae_neg_dominant", "agrae_hard_focused", "agrae_easy_focused",
              "avspo", "aapo", "grpo_n", "grpo_pos_only", "w_reinforce"]
LOSSES = ["cw_grpo", "aapo"]


def _run(cmd: list[str], cwd: Path, timeout: float = 300, env: dict | None = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VERL_USE_EXTERNAL_MODULES", "VIRTUAL_ENV")}
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env={**base, **(env or {})})


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # built from a copy of the tracked and new files: setuptools' build/ folder must not land in (or come from) the tree
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split()
    src = out / "src"
    for rel in files:
        if (ROOT / rel).is_file():
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, src / rel)
    proc = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out),
                 str(src)], cwd=out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (path,) = out.glob("rlvr_recipes-*.whl")
    return path


@pytest.fixture(scope="module")
def env(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new virtualenv with the wheel installed; dependencies reached through a .pth path entry."""
    venv = tmp_path_factory.mktemp("fresh") / "venv"
    proc = _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=venv.parent)
    assert proc.returncode == 0, proc.stderr
    site = Path(_run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                     cwd=venv.parent).stdout.strip())
    (site / "_test_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    proc = _run([sys.executable, "-m", "uv", "pip", "install", "-q", "--python", str(venv / "bin" / "python"),
                 "--no-deps", str(wheel)], cwd=venv.parent)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return venv


@pytest.fixture(scope="module")
def user_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A user's project directory: every generic name is taken by a module that fails loudly when imported."""
    d = tmp_path_factory.mktemp("user_project")
    for name in GENERIC:
        boom = f"raise ImportError('the user\\'s own {name} was imported instead of rlvr_recipes')\n"
        if name in ("trainer", "toy"):
            (d / f"{name}.py").write_text(boom)
        else:
            (d / name).mkdir()
            (d / name / "__init__.py").write_text(boom)
    return d


def test_the_wheel_ships_one_import_name_and_every_recipe(wheel: Path):
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top == {"rlvr_recipes"}
    configs = {n for n in names if n.startswith("rlvr_recipes/configs/") and n.endswith(".yaml")}
    in_repo = {str(p.relative_to(ROOT)) for p in (ROOT / "rlvr_recipes" / "configs").rglob("*.yaml")}
    assert configs == in_repo and len(configs) >= 12
    for paper in (ROOT / "rlvr_recipes" / "recipes").iterdir():
        assert f"rlvr_recipes/recipes/{paper.name}/settings.yaml" in names
        assert f"rlvr_recipes/recipes/{paper.name}/README.md" in names
    assert {f"rlvr_recipes/launch/{s}.sh" for s in ("common", "single_node", "ray_submit", "slurm")} <= set(names)
    shipped = {str(p.relative_to(ROOT)) for p in (ROOT / "rlvr_recipes" / "tiny_task" / "warm_starts").iterdir()}
    assert shipped and shipped <= set(names)


def test_plugin_registers_everything_beside_shadowing_names(env: Path, user_dir: Path):
    code = (
        "import json, rlvr_recipes, verl\n"
        "from verl.trainer.ppo.core_algos import get_adv_estimator_fn, get_policy_loss_fn\n"
        f"for n in {ESTIMATORS!r}: get_adv_estimator_fn(n)\n"
        f"for n in {LOSSES!r}: get_policy_loss_fn(n)\n"
        "from verl.trainer.ppo.v1 import get_trainer_cls\n"
        "get_trainer_cls('rlvr')\n"
        "print(json.dumps({'file': rlvr_recipes.__file__}))\n"
    )
    proc = _run([str(env / "bin" / "python"), "-c", code], cwd=user_dir)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "plugin failed to load" not in proc.stderr
    where = json.loads(proc.stdout.strip().splitlines()[-1])["file"]
    assert where.startswith(str(env)), f"rlvr_recipes imported from {where}, not from the installed wheel"
    for name in GENERIC:  # nothing generic is importable from the install itself
        probe = _run([str(env / "bin" / "python"), "-c", f"import {name}"], cwd=env)
        assert probe.returncode != 0 and "No module named" in probe.stderr, name


def test_cli_lists_and_composes_every_recipe_from_outside_the_repository(env: Path, user_dir: Path):
    cli = str(env / "bin" / "rlvr-recipes")
    listed = _run([cli, "list"], cwd=user_dir)
    assert listed.returncode == 0, listed.stderr[-3000:]
    config_dir = _run([cli, "config-dir"], cwd=user_dir).stdout.strip()
    assert config_dir.startswith(str(env)) and Path(config_dir, "agrae_grpo.yaml").is_file()
    names = sorted(p.stem for p in (ROOT / "rlvr_recipes" / "configs").glob("*.yaml") if p.stem != "cpu")
    assert [line.split()[0] for line in listed.stdout.splitlines()[: len(names)]] == names
    code = (
        "from rlvr_recipes.launch.cli import recipe_names\n"
        "from rlvr_recipes.launch.ref_rewards import compose_recipe\n"
        "for n in recipe_names():\n"
        "    cfg = compose_recipe(n)\n"
        "    assert cfg.algorithm.adv_estimator, n\n"
        "    print(n, cfg.algorithm.adv_estimator, cfg.actor_rollout_ref.actor.policy_loss.loss_mode)\n"
    )
    proc = _run([str(env / "bin" / "python"), "-c", code], cwd=user_dir)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [line.split()[0] for line in proc.stdout.splitlines()] == names
    script = _run([cli, "script", "slurm"], cwd=user_dir).stdout.strip()
    assert script.startswith(str(env)) and Path(script).is_file()


def test_main_ppo_finds_the_recipes_by_package_search_path(env: Path, user_dir: Path):
    """``--config-path pkg://rlvr_recipes.configs``: verl's own entry point, no path on disk, from any directory."""
    proc = _run([str(env / "bin" / "python"), "-m", "verl.trainer.main_ppo", "--config-path", "pkg://rlvr_recipes.configs",
                 "--config-name", "agrae_grpo", "--cfg", "job"], cwd=user_dir, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "adv_estimator: agrae" in proc.stdout


@pytest.mark.e2e
def test_two_step_cpu_run_from_the_installed_wheel(env: Path, user_dir: Path, tmp_path: Path):
    built = _run([sys.executable, "-c", "import sys; from rlvr_recipes.launch.cpu_run import ensure_tiny; "
                  "ensure_tiny(sys.argv[1])", str(TINY_DIR)], cwd=ROOT, timeout=1200)
    assert built.returncode == 0, built.stderr[-3000:]
    out = tmp_path / "run"
    proc = _run([str(env / "bin" / "rlvr-recipes"), "cpu", "train", "grpo", "--steps", "2", "--out", str(out),
                 "--tiny-dir", str(TINY_DIR), "--", "trainer.val_before_train=false", "trainer.test_freq=-1"],
                cwd=user_dir, timeout=900)
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-3000:])
    steps = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines() if line.strip()]
    assert max(s["step"] for s in steps) == 2
    assert "plugin failed to load" not in (out / "train.log").read_text()
