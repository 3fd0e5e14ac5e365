"""benchmarks/gpu_check.py runs on a machine without a GPU in its dry mode: it says what it would check, runs the CPU
side of every check (CPU against CPU: the script and its inputs work, not the GPU path) and exits 0."""

from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_dry_run_says_what_it_checks_and_runs_the_cpu_side(tmp_path):
    out = tmp_path / "gpu_check.json"
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "gpu_check.py"), "--dry-run", "--json",
                           str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "what it checks" in proc.stdout and "all checks passed" in proc.stdout
    result = json.loads(out.read_text())
    from rlvr_recipes.advantage.estimators import ESTIMATORS

    assert {r["name"] for r in result["estimators"]} == {"grpo_vectorized", *ESTIMATORS}
    assert {r["name"] for r in result["losses"]} == {"vanilla", "cw_grpo", "aapo"}
    assert result["device"] == "cpu" and result["fsdp2_step"] == {"skipped": "no GPU"} and result["failed"] == []


def test_the_committed_gpu_figures_passed_on_a_gpu():
    """The committed run names its machine and passed every check (docs/gpu.md)."""
    result = json.load(open(os.path.join(ROOT, "benchmarks", "gpu_check_h100.json")))
    assert result["device"] == "cuda" and "H100" in result["environment"]["device"]
    assert result["failed"] == [] and result["fsdp2_step"]["ok"]
    assert all(r["outputs_on"].startswith("cuda") for r in result["estimators"])
