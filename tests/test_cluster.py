"""The Ray launcher run for real: `ray job submit` of the CPU recipe to a local two-node Ray cluster (docs/cluster.md).

Opt-in (``RLVR_CLUSTER_TESTS=1``, marker ``cluster``): the cluster is started by ``tests/cluster/ray_cluster.sh`` on
its own ports and temp dir and stopped by pid and environment tag, also when a test fails.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(os.environ.get("RLVR_CLUSTER_TESTS") != "1", reason="set RLVR_CLUSTER_TESTS=1 to run"),
]
BASE_PORT = int(os.environ.get("RLVR_CLUSTER_BASE_PORT", "48300"))
STEPS = ["trainer.total_training_steps=2", "trainer.val_before_train=false", "trainer.test_freq=-1",
         "trainer.logger=[console]"]


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory):
    """A head and one worker node (1 logical GPU each); yields the job submitter's environment."""
    cdir = tmp_path_factory.mktemp("raycl")
    bindir = tmp_path_factory.mktemp("bin")
    (bindir / "ray").write_text(f'#!/bin/sh\nexec {sys.executable} -m ray.scripts.scripts "$@"\n')
    (bindir / "ray").chmod(0o755)
    env = {**os.environ, "CLUSTER_DIR": str(cdir), "BASE_PORT": str(BASE_PORT), "PYTHON": sys.executable,
           "RAY_AUTH_MODE": "token"}
    script = str(ROOT / "tests" / "cluster" / "ray_cluster.sh")
    try:
        subprocess.run(["bash", script, "start"], env=env, check=True, timeout=300)
        from tiny_task.build import build

        paths = build(str(ROOT / "runs" / "tiny"), warm_start_target=0.3)
        yield {**env, "PATH": f"{bindir}:{env['PATH']}", "RAY_ADDRESS": f"http://127.0.0.1:{BASE_PORT + 1}",
               "VERL_PLATFORM": "cpu", "MODEL_PATH": paths["model"], "TRAIN_FILES": paths["train"],
               "VAL_FILES": paths["test"], "CKPT": str(cdir / "ckpt")}
    finally:
        subprocess.run(["bash", script, "stop"], env=env, timeout=120)


def submit(env, sid, *overrides):
    return subprocess.run(["bash", str(ROOT / "launch" / "ray_submit.sh"), "--recipe", "cpu", "--nnodes", "2",
                           "--gpus-per-node", "1", "--follow", "--", *overrides],
                          env={**env, "SUBMISSION_ID": sid}, capture_output=True, text=True, timeout=900)


def test_ray_job_submit_runs_the_cpu_recipe_on_both_nodes(ray_cluster):
    out = submit(ray_cluster, "rlvr-test-ok", *STEPS, f"trainer.default_local_dir={ray_cluster['CKPT']}")
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
    assert "step:2" in out.stdout and "succeeded" in out.stderr
    # in a child process: Ray reads RAY_AUTH_MODE once, at import
    code = ("import json, sys; from ray.util.state import list_actors; print(json.dumps([a.node_id for a in "
            "list_actors(address=sys.argv[1], limit=10000) if (a.class_name or '').endswith('WorkerDict')]))")
    listed = subprocess.run([sys.executable, "-c", code, ray_cluster["RAY_ADDRESS"]], env=ray_cluster,
                            capture_output=True, text=True, timeout=120)
    ranks = json.loads(listed.stdout.strip().splitlines()[-1])
    assert len(ranks) == 2 and len(set(ranks)) == 2, ranks  # one FSDP rank on each node


def test_ray_job_with_unknown_estimator_comes_back_failed_with_the_message(ray_cluster):
    out = submit(ray_cluster, "rlvr-test-bad", *STEPS, "algorithm.adv_estimator=nope")
    assert out.returncode == 1
    assert "failed" in out.stderr
    assert "nope" in out.stdout + out.stderr
