"""End to end on the CPU: verl 0.9.1's real trainer (Ray, FSDP2 over gloo, the hf rollout) with the tiny model.

Every advantage estimator and policy loss of this package, and verl's GRPO, Dr.GRPO, DAPO and GSPO, runs two steps
of rollout -> reward -> advantage -> loss -> update -> weight sync; a checkpoint of two FSDP2 ranks resumes to the
same global step and estimator state; a bad config fails in seconds, naming the key. The five variants (A-GRAE's
Table 1 controls, GRPO-N's positive-only control) run too with ``RLVR_E2E_ALL=1``.

Start-up (45-60 s per method in one driver; the later methods reuse the first's TaskRunner actor) is amortised by
running the selected methods one after another in one driver process and Ray cluster (``python -m
rlvr_recipes.launch.cpu_run suite``), started once for the whole module with only the methods that pytest selected.
Whole module: about 13 minutes on 2 cores (17 with the variants). Quick subset (three methods and the bad-config
checks, about 4 minutes)::

    python -m pytest -m e2e -k quick tests/test_e2e_cpu.py
    RLVR_E2E_ALL=1 python -m pytest -m e2e tests/test_e2e_cpu.py   # every method and variant
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from collections import Counter

import psutil
import pytest

from tests.helpers import VARIANTS_ON_1000

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY_DIR = os.path.join(ROOT, "runs", "tiny")  # shared with rlvr_recipes/launch/quickstart.sh: built once
STEPS = 2
SUITE_TIMEOUT_PER_METHOD_S = 240

PACKAGE_ESTIMATORS = ["agrae", "avspo", "grpo_n", "w_reinforce"]
PACKAGE_LOSSES = ["cw_grpo", "aapo"]  # aapo: AAPO's estimator and loss together
VERL_BASELINES = ["grpo", "drgrpo", "dapo", "gspo", "agrae_dapo"]
#: A-GRAE's Table 1 controls and GRPO-N's positive-only control: the code of ``agrae`` and ``grpo_n`` with other
#: constants. Their numbers are checked by hand (tests/test_estimators.py) and through the trainer's advantage step by
#: name (tests/test_trainer_step.py); their real trainer runs (about 4 minutes more) are opt-in: RLVR_E2E_ALL=1.
VARIANTS = list(VARIANTS_ON_1000)
ALL_VARIANTS = os.environ.get("RLVR_E2E_ALL") == "1"
QUICK = {"grpo", "avspo", "cw_grpo"}
METHODS = VERL_BASELINES + PACKAGE_ESTIMATORS + PACKAGE_LOSSES + VARIANTS

#: Per method, metrics the method itself must log at every step (its estimator or loss ran).
OWN_METRICS = {
    **{m: ["agrae/omega"] for m in PACKAGE_ESTIMATORS + ["agrae_dapo"] if m.startswith("agrae")},
    "avspo": ["avspo/tau_adapt", "avspo/acr"],
    "aapo": ["aapo/margin_mean"],
}
SUITE_OVERRIDES = ["trainer.val_before_train=false", "trainer.test_freq=-1"]

pytestmark = pytest.mark.e2e


def _python() -> str:
    return sys.executable


def _read_steps(path: str) -> dict[int, dict]:
    steps: dict[int, dict] = {}
    with open(path) as f:
        for line in f:
            if line.strip():
                rec = json.loads(line)
                steps.setdefault(int(rec["step"]), {}).update(rec["data"])
    return steps


@pytest.fixture(scope="module")
def tiny() -> str:
    """The tiny model and data of ``runs/tiny`` (built once, with the quickstart's settings)."""
    code = "import sys; from rlvr_recipes.launch.cpu_run import ensure_tiny; ensure_tiny(sys.argv[1])"
    proc = subprocess.run([_python(), "-c", code, TINY_DIR], cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return TINY_DIR


def _skipped(item: pytest.Item) -> bool:
    """Whether a ``skip`` mark, or a ``skipif`` mark whose condition is True, skips ``item``."""
    return any(m.name == "skip" or (m.name == "skipif" and m.args and m.args[0] is True) for m in item.iter_markers())


def _selected_methods(session: pytest.Session) -> list[str]:
    """The methods of :func:`test_method_trains` that pytest kept after ``-k``/``-m`` selection and will not skip
    (the variants without ``RLVR_E2E_ALL=1``), in order."""
    return [item.callspec.params["method"] for item in session.items
            if item.originalname == "test_method_trains" and hasattr(item, "callspec") and not _skipped(item)]


@pytest.fixture(scope="module")
def suite_results(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, tiny: str) -> dict:
    """Run the selected methods once, in one driver (``rlvr_recipes.launch.cpu_run suite``); ``{method: outcome}``."""
    methods = _selected_methods(request.session)
    out = tmp_path_factory.mktemp("e2e_suite")
    cmd = [_python(), "-m", "rlvr_recipes.launch.cpu_run", "suite", ",".join(methods), "--steps", str(STEPS),
           "--out", str(out), "--tiny-dir", TINY_DIR, "--", *SUITE_OVERRIDES]
    timeout = 300 + SUITE_TIMEOUT_PER_METHOD_S * len(methods)
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    elapsed = time.monotonic() - t0
    summary_path = out / "suite.json"
    if not summary_path.exists():
        pytest.fail(f"the suite wrote no summary (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}")
    results = json.loads(summary_path.read_text())
    print(f"\n[e2e] {len(methods)} methods in {elapsed:.0f} s: "
          + ", ".join(f"{m} {r['seconds']:.0f} s" for m, r in results.items()))
    return results


def _method_param(method: str):
    if method in VARIANTS:
        return pytest.param(method, marks=pytest.mark.skipif(
            not ALL_VARIANTS, reason="a variant of agrae or grpo_n: set RLVR_E2E_ALL=1 to run it"))
    return pytest.param(method, id=f"quick-{method}" if method in QUICK else method)


@pytest.mark.parametrize("method", [_method_param(m) for m in METHODS])
def test_method_trains(method: str, suite_results: dict) -> None:
    """Two real trainer steps: finite losses and metrics, rewards in [0, 1], ACR logged, the method's own figures."""
    result = suite_results.get(method)
    assert result is not None, f"{method} was not run by the suite"
    assert result["ok"], f"{method} failed:\n{result['error']}"
    assert result["metrics"] and os.path.exists(result["metrics"]), f"{method}: no metrics file"
    steps = _read_steps(result["metrics"])
    assert sorted(steps) == list(range(1, STEPS + 1)), f"{method}: logged steps {sorted(steps)}"
    for step, data in steps.items():
        for key in ("actor/pg_loss", "actor/grad_norm", "critic/score/mean", "acr/acr", "timing_s/step"):
            assert key in data, f"{method} step {step}: {key} not logged"
            assert math.isfinite(float(data[key])), f"{method} step {step}: {key}={data[key]}"
        if method == "agrae_dapo":  # DAPO's overlong shaping puts scores in [-1, 1]; omega is a success rate
            assert -1.0 <= data["critic/score/mean"] <= 1.0 and 0.0 <= data["agrae/omega"] <= 1.0
        else:
            assert 0.0 <= data["critic/score/mean"] <= 1.0
        assert 0.0 <= data["acr/acr"] <= 1.0
        assert data["training/global_step"] == step
        for key in OWN_METRICS.get(method, []):
            assert key in data, f"{method} step {step}: its own metric {key} not logged"
        if method == "cw_grpo":
            assert any("cw_grpo/" in k for k in data), f"cw_grpo step {step}: no cw_grpo/* loss metric"
        if method in ("grpo_n",):  # keeps only negative advantages
            assert data["critic/advantages/max"] <= 1e-6, data["critic/advantages/max"]
        if method in ("dapo", "agrae_dapo"):  # acr/acr describes the rollouts, filtered groups included
            assert "acr/acr_post_filter" in data and "acr/filtered_groups" in data
            assert data["acr/acr"] >= data["acr/acr_post_filter"] - 1e-9 or data["acr/filtered_groups"] == 0
        if method == "grpo_pos_only":
            assert data["critic/advantages/min"] >= -1e-6, data["critic/advantages/min"]
    if method == "agrae_dapo":  # the shaping really ran: some response scored below 0 (a penalised length)
        assert min(d["critic/score/min"] for d in steps.values()) < 0.0, [d["critic/score/min"] for d in steps.values()]


#: Methods that differ from GRPO in the advantage estimator or the policy loss alone: at step 1 they hold the initial
#: model under the same seed, so they sample GRPO's answers.
GRPO_BODY = ["agrae", "avspo", "grpo_n", "w_reinforce", "cw_grpo", "aapo"]


def test_a_seed_replays_in_the_shared_task_runner(suite_results: dict) -> None:
    """The suite's first run (GRPO) starts the cluster's TaskRunner actor and every later run reuses it
    (``rlvr_recipes.launch.cpu_run.shared_task_runner``). A later run on GRPO's body draws GRPO's step-1 answers,
    the same prompts and responses: a reused process holding state from an earlier run that reached the draws
    would change them."""
    def step1(method: str) -> Counter:
        run_dir = os.path.join(os.path.dirname(os.path.dirname(suite_results[method]["metrics"])), method)
        with open(os.path.join(run_dir, "rollouts", "1.jsonl")) as f:
            return Counter((r["input"], r["output"]) for r in map(json.loads, f))

    later = [m for m in GRPO_BODY if suite_results.get(m, {}).get("ok")]
    if not suite_results.get("grpo", {}).get("ok") or not later:
        pytest.skip("needs GRPO and one of its estimator or loss variants in the suite")
    assert next(iter(suite_results)) == "grpo"  # the run that started the TaskRunner
    first = step1("grpo")
    assert sum(first.values()) >= 64
    for method in later:
        assert step1(method) == first, f"{method}: other answers at step 1 than GRPO's"


def _train(method: str, out: str, steps: int, *overrides: str, ranks: int = 1, timeout: float = 900) -> tuple:
    cmd = [_python(), "-m", "rlvr_recipes.launch.cpu_run", "train", method, "--steps", str(steps), "--ranks", str(ranks),
           "--out", out, "--tiny-dir", TINY_DIR, "--timeout", str(timeout), "--", *overrides]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout + 120)
    return proc, time.monotonic() - t0


def test_resume_two_ranks_restores_step_and_estimator_state(tmp_path, tiny: str) -> None:
    """AVSPO on two FSDP2 ranks: stop after a checkpoint at step 2, resume, and continue at step 3 with the state."""
    out = str(tmp_path / "resume")
    common = ("trainer.save_freq=2", "trainer.val_before_train=false", "trainer.test_freq=-1")
    first, _ = _train("avspo", out, 2, *common, ranks=2)
    assert first.returncode == 0, first.stdout[-4000:] + first.stderr[-4000:]
    os.rename(os.path.join(out, "metrics.jsonl"), os.path.join(out, "metrics_first.jsonl"))
    ckpt = os.path.join(out, "checkpoints")
    with open(os.path.join(ckpt, "latest_checkpointed_iteration.txt")) as f:
        assert f.read().strip() == "2"
    shards = sorted(os.listdir(os.path.join(ckpt, "global_step_2", "actor")))
    assert "model_world_size_2_rank_0.pt" in shards and "model_world_size_2_rank_1.pt" in shards, shards
    with open(os.path.join(ckpt, "global_step_2", "rlvr_state.json")) as f:
        saved = json.load(f)
    assert saved["estimators"]["avspo"]["step"] == 2, saved

    second, _ = _train("avspo", out, 3, *common, ranks=2)
    assert second.returncode == 0, second.stdout[-4000:] + second.stderr[-4000:]
    before = _read_steps(os.path.join(out, "metrics_first.jsonl"))
    after = _read_steps(os.path.join(out, "metrics.jsonl"))
    assert sorted(after) == [3], f"the resumed run logged steps {sorted(after)}, expected only step 3"
    assert after[3]["training/global_step"] == 3
    # the estimator state went on from the checkpoint: AVSPO's call counter and the ACR tracker's running mean
    with open(os.path.join(ckpt, "global_step_3", "rlvr_state.json")) as f:
        final = json.load(f)
    assert final["estimators"]["avspo"]["step"] == 3, final
    acrs = [before[1]["acr/acr"], before[2]["acr/acr"], after[3]["acr/acr"]]
    assert after[3]["acr/acr_100"] == pytest.approx(sum(acrs) / 3, abs=1e-6), (after[3]["acr/acr_100"], acrs)


@pytest.mark.parametrize(
    "args, needle",
    [
        (["no_such_method"], "unknown method 'no_such_method'"),
        (["agrae", "--", "algorithm.agrae.alpha=-1"], "algorithm.agrae.alpha"),
        (["avspo", "--", "+algorithm.avspo.bogus=1"], "algorithm.avspo.bogus"),
        (["grpo", "--", "actor_rollout_ref.actor.policy_loss.loss_mode=nope"],
         "actor_rollout_ref.actor.policy_loss.loss_mode='nope'"),
    ],
    ids=["quick-method", "quick-option-value", "quick-option-name", "quick-loss"],
)
def test_bad_config_fails_fast(args: list, needle: str, tmp_path, tiny: str) -> None:
    """A bad method, option or loss stops before Ray starts, within a minute, with the key in the message."""
    cmd = [_python(), "-m", "rlvr_recipes.launch.cpu_run", "train", *args[:1], "--out", str(tmp_path), "--tiny-dir", TINY_DIR,
           *args[1:]]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    elapsed = time.monotonic() - t0
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    assert needle in proc.stderr, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert not os.path.exists(tmp_path / "train.log"), "the trainer was started"
    assert elapsed < 90, f"took {elapsed:.0f} s to refuse the config"
    # the trainer started early and held at the start gate (rlvr_recipes/launch/start_gate.py) was stopped with the refusal
    left = [p.pid for p in psutil.process_iter(["cmdline", "status"])
            if str(tmp_path) in " ".join(p.info["cmdline"] or []) and p.info["status"] != psutil.STATUS_ZOMBIE]
    assert not left, f"processes of the refused run still running: {left}"


def test_silent_hang_is_stopped_at_the_timeout(tmp_path, tiny: str) -> None:
    """8 TransferQueue storage units on 2 logical Ray CPUs: verl waits for resources without printing anything.
    The runner must still stop the trainer at --timeout (exit 124) and say what usually causes it."""
    out = str(tmp_path / "hang")
    proc, elapsed = _train("grpo", out, 1, "transfer_queue.backend.SimpleStorage.num_data_storage_units=8",
                           "ray_kwargs.ray_init.num_cpus=2", "trainer.val_before_train=false", timeout=60)
    assert proc.returncode == 124, (proc.returncode, proc.stdout[-3000:])
    assert "timed out after 60 s" in proc.stdout and "num_data_storage_units" in proc.stdout
    assert elapsed < 60 + 60, f"took {elapsed:.0f} s to stop"


VLLM_VENV = os.path.join(ROOT, ".venv-vllm")
#: bf16 rollout against the fp32 trainer: per-token probabilities differ by bf16 rounding of the logits, not more
#: (measured: max 0.019 and 0.036, mean 0.0019 and 0.0029 at steps 1 and 2; the fp32 hf server: ~1e-6)
VLLM_PROBS_DIFF_MAX = 0.1
VLLM_PROBS_DIFF_MEAN = 0.01


@pytest.mark.skipif(not os.path.exists(os.path.join(VLLM_VENV, ".installed")),
                    reason="optional vLLM CPU environment .venv-vllm absent (make setup-vllm; not installed in CI)")
def test_vllm_rollout_two_steps(tmp_path, tiny: str) -> None:
    """verl's own vLLM rollout (vLLM's CPU build, ``--rollout vllm``) for two steps: the trainer's recomputed
    probabilities agree with the rollout's (verl's ``training/rollout_probs_diff_max``; bf16 rollout, fp32 trainer)."""
    out = str(tmp_path / "vllm")
    cmd = ["bash", "rlvr_recipes/launch/quickstart.sh", "grpo", "--rollout", "vllm", "--steps", "2", "--out", out,
           "--tiny-dir", TINY_DIR, "--timeout", "1200", "--", *SUITE_OVERRIDES]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    log = open(os.path.join(out, "train.log")).read()
    assert "vLLMHttpServer" in log, "no vLLM server in train.log"
    # verl's weight sync into vLLM: before step 1 and after each update (3 such lines in a two-step quickstart run)
    assert log.count("update_weights done") >= STEPS, "weights were not synced into vLLM every step"
    steps = _read_steps(os.path.join(out, "metrics.jsonl"))
    assert sorted(steps) == [1, 2], sorted(steps)
    for step, data in steps.items():
        assert 0.0 <= data["critic/score/mean"] <= 1.0
        assert data["training/rollout_probs_diff_valid"] == 1, f"step {step}: no rollout log-probs to compare"
        diff = float(data["training/rollout_probs_diff_max"])
        assert math.isfinite(diff) and diff < VLLM_PROBS_DIFF_MAX, f"step {step}: rollout_probs_diff_max {diff}"
        mean = float(data["training/rollout_probs_diff_mean"])
        assert math.isfinite(mean) and mean < VLLM_PROBS_DIFF_MEAN, f"step {step}: rollout_probs_diff_mean {mean}"
