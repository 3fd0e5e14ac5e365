"""The cluster launchers run for real (docs/cluster.md): `ray job submit` of the CPU recipe to a local two-node Ray
cluster, and `sbatch rlvr_recipes/launch/slurm.sh` of the CPU recipe on a local two-node Slurm cluster (two slurmd on this host).

Opt-in (``RLVR_CLUSTER_TESTS=1``, marker ``cluster``): the Ray cluster is started by ``tests/cluster/ray_cluster.sh``
on its own ports and temp dir, the Slurm cluster by ``tests/cluster/slurm_cluster.sh`` on its own ports, munge socket
and directory; both are stopped by pid and environment tag, also when a test fails. Every command runs under a timeout.
"""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
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
        from rlvr_recipes.launch.cpu_run import ensure_tiny

        paths = ensure_tiny(str(ROOT / "runs" / "tiny"))  # the default build, shared with the e2e tests
        yield {**env, "PATH": f"{bindir}:{env['PATH']}", "RAY_ADDRESS": f"http://127.0.0.1:{BASE_PORT + 1}",
               "VERL_PLATFORM": "cpu", "MODEL_PATH": paths["model"], "TRAIN_FILES": paths["train"],
               "VAL_FILES": paths["test"], "CKPT": str(cdir / "ckpt")}
    finally:
        subprocess.run(["bash", script, "stop"], env=env, timeout=120)


def submit(env, sid, *overrides):
    return subprocess.run(["bash", str(ROOT / "rlvr_recipes" / "launch" / "ray_submit.sh"), "--recipe", "cpu", "--nnodes", "2",
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


# ------------------------------------------------------------------------------------------------------------ Slurm

SLURM_PORT = int(os.environ.get("RLVR_SLURM_PORT", "46817"))
SLURM_RAY_PORT = int(os.environ.get("RLVR_SLURM_RAY_PORT", "48700"))


def tagged(tag):
    """{pid: command line} of the processes whose environment carries ``RLVR_SLURM_TEST=tag``: every process of the
    tests' jobs (the batch script, srun, ``ray start`` and the Ray processes it starts, the trainer, Ray workers)."""
    found = {}
    for env_file in Path("/proc").glob("[0-9]*/environ"):
        try:
            if f"RLVR_SLURM_TEST={tag}".encode() in env_file.read_bytes().split(b"\0"):
                cmd = (env_file.parent / "cmdline").read_bytes().replace(b"\0", b" ")
                found[int(env_file.parent.name)] = cmd.decode(errors="replace")
        except OSError:
            pass
    found.pop(os.getpid(), None)
    return found


def tagged_pids(tag):
    return list(tagged(tag))


def ray_processes(marker):
    """``pid command-line`` of the raylet and gcs_server processes whose command line names ``marker`` (the job's Ray
    temp dir), read from ``/proc``: ``ps -eo pid,args`` run from pytest here cut the long command lines short."""
    found = []
    for cmd_file in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            cmd = cmd_file.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if re.search(r"raylet|gcs_server", cmd) and marker in cmd:
            found.append(f"{cmd_file.parent.name} {cmd[:300]}")
    return found


def kill_all(pids):
    for sig in (15, 9):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        time.sleep(2)


@pytest.fixture(scope="module")
def slurm_cluster(tmp_path_factory):
    """A two-node Slurm cluster (two slurmd on this host); yields the environment sbatch runs in (the CPU recipe's, a
    tag for every process of the jobs)."""
    # munged wants every directory above its socket searchable by all, which pytest's tmp dirs (0700) are not
    cdir = Path(tempfile.mkdtemp(prefix="rlvr-slurm-test-", dir="/tmp"))
    cdir.chmod(0o755)
    tag = uuid.uuid4().hex
    env = {**os.environ, "CLUSTER_DIR": str(cdir), "SLURM_PORT": str(SLURM_PORT), "NODES": "2",
           "SLURM_CONF": str(cdir / "etc" / "slurm.conf")}
    script = str(ROOT / "tests" / "cluster" / "slurm_cluster.sh")
    try:
        subprocess.run(["bash", script, "start"], env=env, check=True, timeout=600)
        from rlvr_recipes.launch.cpu_run import ensure_tiny

        paths = ensure_tiny(str(ROOT / "runs" / "tiny"))  # the default build, shared with the e2e tests
        yield {**env, "VERL_PLATFORM": "cpu", "MODEL_PATH": paths["model"], "TRAIN_FILES": paths["train"],
               "VAL_FILES": paths["test"], "RAY_PORT": str(SLURM_RAY_PORT), "RAY_PORTS_BASE": str(SLURM_RAY_PORT),
               "RAY_TEMP_DIR": str(cdir / "ray"), "RLVR_SLURM_TEST": tag, "LOGS": str(tmp_path_factory.mktemp("jobs"))}
    finally:
        subprocess.run(["bash", script, "stop"], env=env, timeout=180)
        kill_all(tagged_pids(tag))  # anything of the jobs that escaped Slurm (there should be nothing)
        shutil.rmtree(cdir, ignore_errors=True)


def sbatch(env, name, *args, wait=True, nodes=1, overrides=STEPS):
    """``sbatch [--wait] --nodes N rlvr_recipes/launch/slurm.sh --recipe cpu`` (one logical GPU a node) from the repository root;
    returns the completed process (``wait``) or the job id."""
    cmd = ["sbatch", "--job-name", name, "--nodes", str(nodes), "--output", f"{env['LOGS']}/%x-%j.log",
           *(["--wait"] if wait else []), str(ROOT / "rlvr_recipes" / "launch" / "slurm.sh"), "--recipe", "cpu", "--gpus-per-node", "1",
           "--", *overrides, *args]
    out = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=900)
    job = re.search(r"Submitted batch job (\d+)", out.stdout)
    assert job, out.stdout + out.stderr
    out.job = job.group(1)
    out.log = Path(env["LOGS"]) / f"{name}-{out.job}.log"
    return out if wait else out.job


def job_state(env, job):
    """(state|exit code) of a finished job as ``sacct --completion`` reads them from the jobcomp file, and
    ``scontrol show job``'s JobState; waits (up to 60 s) for the job to have left COMPLETING and for its record."""
    for _ in range(30):
        acct = subprocess.run(["sacct", "-c", "-n", "-P", "-o", "state,exitcode", "-j", job], env=env,
                              capture_output=True, text=True, timeout=60).stdout.strip()
        shown = subprocess.run(["scontrol", "show", "job", job], env=env, capture_output=True, text=True, timeout=60)
        state = re.search(r"JobState=(\S+)", shown.stdout).group(1)
        if acct and state not in ("PENDING", "RUNNING", "COMPLETING"):
            break
        time.sleep(2)
    return acct, state


def test_slurm_job_on_two_nodes_runs_the_cpu_recipe_and_completes(slurm_cluster):
    ckpt = Path(slurm_cluster["LOGS"]) / "ckpt"
    out = sbatch(slurm_cluster, "ok", "trainer.save_freq=2", f"trainer.default_local_dir={ckpt}", nodes=2)
    log = out.log.read_text()
    assert out.returncode == 0, log[-6000:]
    assert job_state(slurm_cluster, out.job) == ("COMPLETED|0:0", "COMPLETED")
    assert "step:2" in log and "the trainer exited with status 0" in log
    # the Ray head (step 0) and a Ray worker (step 1) on the two nodes; each has one logical GPU, so the two FSDP
    # ranks (trainer.nnodes=2, n_gpus_per_node=1) ran one on each
    heads = re.findall(rf"STEP {out.job}\.0 ON (\S+)", log)
    workers = re.findall(rf"STEP {out.job}\.1 ON (\S+)", log)
    assert heads and workers and heads[0] != workers[0], log[-3000:]
    assert (ckpt / "global_step_2" / "actor" / "model_world_size_2_rank_1.pt").is_file()
    assert not ray_processes(slurm_cluster["RAY_TEMP_DIR"]) and not tagged_pids(slurm_cluster["RLVR_SLURM_TEST"])


def test_slurm_job_with_unknown_estimator_ends_failed_with_the_message(slurm_cluster):
    out = sbatch(slurm_cluster, "bad", "algorithm.adv_estimator=nope")
    log = out.log.read_text()
    assert out.returncode == 1, log[-6000:]
    assert job_state(slurm_cluster, out.job) == ("FAILED|1:0", "FAILED")
    assert "Unknown advantage estimator simply: nope" in log
    assert not ray_processes(slurm_cluster["RAY_TEMP_DIR"]) and not tagged_pids(slurm_cluster["RLVR_SLURM_TEST"])


def test_scancel_of_a_two_node_job_stops_every_ray_process_of_the_job(slurm_cluster):
    env = slurm_cluster
    job = sbatch(env, "cancel", wait=False, nodes=2, overrides=["trainer.total_training_steps=50", *STEPS[1:]])
    deadline = time.monotonic() + 600
    # both nodes are up (the gcs_server and two raylets run) and the trainer runs: verl's TaskRunner actor is a Ray
    # worker process
    while len(ray_processes(env["RAY_TEMP_DIR"])) < 3 or not any(
            c.startswith("ray::TaskRunner") for c in tagged(env["RLVR_SLURM_TEST"]).values()):
        assert time.monotonic() < deadline, "the job's Ray head and trainer did not start"
        time.sleep(2)
    before = len(tagged_pids(env["RLVR_SLURM_TEST"]))
    subprocess.run(["scancel", job], env=env, check=True, timeout=60)
    deadline = time.monotonic() + 120
    while ray_processes(env["RAY_TEMP_DIR"]) or tagged_pids(env["RLVR_SLURM_TEST"]):
        left = ray_processes(env["RAY_TEMP_DIR"]) or tagged_pids(env["RLVR_SLURM_TEST"])
        assert time.monotonic() < deadline, f"left {len(left)} of {before} processes: {left}"
        time.sleep(2)
    acct, shown = job_state(env, job)
    assert acct.startswith("CANCELLED") and shown == "CANCELLED", (acct, shown)


@pytest.fixture(scope="module")
def slurm_gpu_cluster(tmp_path_factory):
    """A one-node Slurm cluster declaring a fake generic resource gpu:2 (FAKE_GPUS: counted, no device behind it)."""
    cdir = Path(tempfile.mkdtemp(prefix="rlvr-slurm-gpu-", dir="/tmp"))
    cdir.chmod(0o755)
    env = {**os.environ, "CLUSTER_DIR": str(cdir), "SLURM_PORT": str(SLURM_PORT + 20), "NODES": "1", "FAKE_GPUS": "2",
           "SLURM_CONF": str(cdir / "etc" / "slurm.conf")}
    script = str(ROOT / "tests" / "cluster" / "slurm_cluster.sh")
    try:
        subprocess.run(["bash", script, "start"], env=env, check=True, timeout=600)
        yield {**env, "LOGS": str(tmp_path_factory.mktemp("gpujobs"))}
    finally:
        subprocess.run(["bash", script, "stop"], env=env, timeout=180)
        shutil.rmtree(cdir, ignore_errors=True)


def test_slurm_gpu_request_reaches_the_job_and_its_steps(slurm_gpu_cluster):
    """The sbatch and srun GPU options slurm.sh generates, on a probe script: the batch step and a Ray-like step both
    get the node's 2 GPUs from Slurm; the old submission (no GPU option to sbatch) got none, which the job now refuses."""
    env = slurm_gpu_cluster
    dry = subprocess.run(["bash", str(ROOT / "rlvr_recipes" / "launch" / "slurm.sh"), "--recipe", "grpo", "--nnodes", "1",
                          "--gpus-per-node", "2", "--dry-run"],
                         env={**os.environ, "MODEL_PATH": "/m", "TRAIN_FILES": "/t", "VAL_FILES": "/v", "PREFLIGHT": "0"},
                         capture_output=True, text=True, timeout=120)
    sbatch_line, head_line = dry.stdout.splitlines()[:2]
    words = shlex.split(sbatch_line)
    script = next(i for i, w in enumerate(words) if w.endswith("slurm.sh"))
    sbatch_opts = [w for w in words[1:script] if "RLVR_ROOT" not in w]  # the options slurm.sh gives sbatch
    srun_opts = shlex.split(head_line)[:shlex.split(head_line).index("-w")]
    assert "--gpus-per-node=2" in sbatch_opts and "--gpus-per-node=2" in srun_opts
    probe = Path(env["LOGS"]) / "probe.sh"
    probe.write_text("#!/bin/bash\necho batch:${SLURM_GPUS_ON_NODE:-none}\n"
                     f"{shlex.join(srun_opts)} bash -c 'echo step:${{SLURM_GPUS_ON_NODE:-none}}'\n")
    log = Path(env["LOGS"]) / "probe.log"
    out = subprocess.run(["sbatch", *sbatch_opts, "--wait", "--output", str(log), str(probe)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr + (log.read_text() if log.exists() else "")
    assert "batch:2" in log.read_text() and "step:2" in log.read_text(), log.read_text()
    # before: `#SBATCH --exclusive` and Ray steps started by `srun --nodes=1 --ntasks=1` with no GPU option. Slurm
    # 22.05 gives such a job's batch step the node's GPUs, but the step none
    old_probe = Path(env["LOGS"]) / "old.sh"
    old_probe.write_text("#!/bin/bash\nsrun --nodes=1 --ntasks=1 bash -c 'echo step:${SLURM_GPUS_ON_NODE:-none}'\n")
    old = Path(env["LOGS"]) / "old.log"
    subprocess.run(["sbatch", "--exclusive", "--ntasks-per-node=1", "--wait", "--output", str(old), str(old_probe)],
                   env=env, capture_output=True, text=True, timeout=300)
    assert "step:none" in old.read_text(), old.read_text()
