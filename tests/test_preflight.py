"""The pre-flight for a cluster shape (rlvr_recipes/launch/preflight.py) on every recipe and common shapes, against the
table docs/cluster.md publishes; its suggested overrides work; its replay of verl's worker arithmetic agrees with
verl's own function; the reward checks it relies on (hdfs paths, math-verify, which runs get the reward check)."""

import io
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from rlvr_recipes.launch import preflight
from rlvr_recipes.trainer import checks

ROOT = Path(__file__).resolve().parents[1]
LAUNCHER = list(preflight.LAUNCHER_OVERRIDES)


def documented_table() -> str:
    text = (ROOT / "docs" / "cluster.md").read_text()
    return text.split("<!-- preflight table -->")[1].split("<!-- end of preflight table -->")[0].strip()


@pytest.fixture(scope="module")
def table():
    """Every recipe composed once (as the launchers compose it), on every shape: {recipe: {(n, g): (verdict, report)}}."""
    preflight.quiet_import_verl()
    result = {}
    for recipe in preflight.recipe_names():
        config = preflight.compose(recipe, LAUNCHER)
        result[recipe] = {shape: preflight.verdict(recipe, config, *shape) for shape in preflight.TABLE_SHAPES}
    return result


def test_every_recipe_and_shape_is_as_docs_cluster_md_says(table):
    rendered = ["| recipe | " + " | ".join(f"{n} x {g}" for n, g in preflight.TABLE_SHAPES) + " |",
                "| --- |" + " --- |" * len(preflight.TABLE_SHAPES)]
    for recipe, row in table.items():
        rendered.append(f"| `{recipe}` | " + " | ".join(v if v == "pass" else f"`{v}`" for v, _ in row.values()) + " |")
    assert "\n".join(rendered) == documented_table(), (
        "docs/cluster.md's table is out of date: paste `python -m rlvr_recipes.launch.preflight --table`")


def test_the_papers_shapes_pass(table):
    # 000 App. A.2 / 001 App. C.2 / 002 App. C.2: 8 GPUs; 003 App. C: 4 H200; 004: 4 A100 (one node each)
    papers = {"avspo": (1, 8), "agrae_grpo": (1, 8), "agrae_dapo": (1, 8), "agrae_drgrpo": (1, 8), "aapo": (1, 8),
              "cw_grpo": (1, 4), "grpo_n": (1, 4), "gspo_n": (1, 4)}
    assert {r: table[r][s][0] for r, s in papers.items()} == {r: "pass" for r in papers}


def test_verl_s_own_assertion_is_quoted_and_the_suggested_overrides_pass(table):
    assert "real_train_batch_size (264) must be divisible by minimal possible batch size (16)" in table["aapo"][(2, 8)][1]
    for recipe, row in table.items():
        for (n, g), (verdict, text) in row.items():
            if verdict == "pass":
                continue
            fix = re.search(r"starts with: (.*)$", text, re.M)
            assert fix, f"{recipe} {n}x{g}: no working overrides printed\n{text}"
            config = preflight.compose(recipe, LAUNCHER + fix.group(1).split())
            assert preflight.run(recipe, n, g, config=config, out=io.StringIO(), check_version=False) == 0, (recipe, n, g)


def test_the_replayed_micro_batch_rule_is_verl_s():
    """33 rows per GPU (aapo on 8 GPUs) into micro-batches of 8: verl's own prepare_micro_batches asserts, as the
    pre-flight says; into micro-batches of 3 it splits them in 11."""
    from tensordict import TensorDict
    from verl.utils import tensordict_utils as tu
    from verl.workers.engine.utils import prepare_micro_batches

    def split(rows, micro):
        data = TensorDict({"x": torch.zeros(rows, 2)}, batch_size=[rows])
        tu.assign_non_tensor(data, use_dynamic_bsz=False, micro_batch_size_per_gpu=micro)
        return prepare_micro_batches(data)[0]

    with pytest.raises(AssertionError, match="data size must be divisible"):
        split(33, 8)
    assert len(split(33, 3)) == 11
    assert preflight.largest_divisor(33, 8) == 3 and preflight.largest_divisor(36, 8) == 6


def test_command_line_exit_status_and_message():
    def cli(*args):
        return subprocess.run([sys.executable, "-m", "rlvr_recipes.launch.preflight", *args], capture_output=True,
                              text=True, timeout=120, cwd=ROOT)

    # 18 prompts x 8 = 144 rows on 16 GPUs: 9 per GPU, which micro-batches of 8 (log-probs) and 4 (update) do not split
    shape = ["--recipe", "grpo", "--nnodes", "2", "--gpus-per-node", "8", "--", *LAUNCHER, "data.train_batch_size=18",
             "actor_rollout_ref.actor.ppo_mini_batch_size=18", "actor_rollout_ref.rollout.n=8"]
    bad = cli(*shape, "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8",
              "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert ("old log-probs: 9 rows per GPU do not split into micro-batches of "
            "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8 (verl/workers/engine/utils.py:124); "
            "set actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=3") in bad.stdout
    assert "set actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=3" in bad.stdout
    good = cli(*shape, "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=3",
               "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=3",
               "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=3")
    assert good.returncode == 0, good.stdout + good.stderr
    assert good.stdout.strip().splitlines()[-1] == "pass: grpo on 2 x 8 GPUs"
    assert cli("--recipe", "nope").returncode == 2


def test_hdfs_paths_are_left_to_verl(tmp_path):
    assert checks.check_dataset("hdfs://namenode/data/train.parquet") is None
    assert checks.is_remote("hdfs://nn/x.parquet") and not checks.is_remote("/data/x.parquet")
    assert not checks.is_remote("file:///data/x.parquet")
    with pytest.raises(checks.DataError, match="does not exist"):
        checks.check_dataset(str(tmp_path / "missing.parquet"))


def test_missing_math_verify_stops_the_reward_worker_at_start(monkeypatch):
    from verl.experimental.reward_loop.reward_loop import RewardLoopWorker

    config = OmegaConf.create({"reward": {"custom_reward_function": {"path": "pkg://rlvr_recipes.reward.math_reward"}}})
    real = checks.importlib.util.find_spec
    monkeypatch.setattr(checks.importlib.util, "find_spec", lambda name: None if name == "math_verify" else real(name))
    with pytest.raises(ImportError, match="math-verify is not installed"):
        RewardLoopWorker(config)  # wrapped by the plugin: checked before verl loads the reward
    other = OmegaConf.create({"reward": {"custom_reward_function": {"path": "my_reward.py"}}})
    checks.check_reward_dependencies(other)  # another reward: not this check's business


def test_reward_value_check_applies_to_this_package_s_runs_only():
    def cfg(mode, diagnostics=False, mark=False):
        c = {"trainer": {"v1": {"trainer_mode": mode}}, "algorithm": {}}
        if diagnostics:
            c["algorithm"]["diagnostics"] = {"reward_range": [0, 1]}
        if mark:
            c["trainer"]["v1"]["rlvr_extension"] = True
        return OmegaConf.create(c)

    assert checks.reward_check_applies(cfg("rlvr"))
    assert checks.reward_check_applies(cfg("sync", mark=True))
    assert checks.reward_check_applies(cfg("sync", diagnostics=True))  # a recipe of this package
    assert not checks.reward_check_applies(cfg("sync"))  # any other verl run
    assert not checks.reward_check_applies(cfg("colocate_async"))
    assert checks.reward_check_applies(OmegaConf.create({"reward": {}}))  # no trainer section: not a verl run's config
