"""Learning regression check: the default CPU run (the README's first command: GRPO, 20 steps on the tiny addition
task, seed 0, every other setting as shipped) must still learn.

What is checked is the rise of the held-out greedy accuracy (100 problems) averaged over the run's two later
validations, steps 10 and 20, against step 0. One validation alone swings by up to 0.1 from one to the next (0.64 ->
0.76 -> 0.65 in one run), so the mean of two is the steadier figure. The band was measured on the 2-core machine
with the shipped settings (docs/cpu.md, "The learning regression check" and "Why the rise differs from machine to
machine"), fifteen runs from three builds of the warm start (the build differs from one CPU to another:
floating-point reductions change the warm start's trajectory, and the rise follows where the build starts):

- build at greedy 0.58 (2 threads), seeds 0-4 and seed 0 again: rises +0.13, +0.085, +0.11, +0.065, +0.06, +0.13;
- build at greedy 0.64 (1 thread), seeds 0-2: +0.065, +0.155, +0.085;
- build at greedy 0.51 (another machine, 2 threads), seeds 0-4 and seed 0 again: +0.235, +0.265, +0.20, +0.21,
  +0.18, +0.21.

The default build now loads the shipped warm start, the 0.58 build (rlvr_recipes/tiny_task/warm_starts/addition.json),
on every machine, so the first row is the band of every machine's start; the runs still differ with the CPU's kernels.

The threshold, +0.03, is half the lowest run measured. A change that breaks learning falls below it: without
updates the greedy accuracy stays exactly where it started (a rise of 0), a sign error in an advantage lowers it.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from rlvr_recipes.launch.cpu_plot import read_metrics, val_accuracy

from tests.test_e2e_cpu import ROOT, TINY_DIR, tiny  # noqa: F401  (tiny: the shared fixture that builds runs/tiny)

STEPS = 20
LATER_VALIDATIONS = (10, 20)
MIN_MEAN_RISE = 0.03


def mean_rise(curve: dict[int, float], later: tuple[int, ...] = LATER_VALIDATIONS) -> float:
    """Mean held-out accuracy at the ``later`` steps minus the accuracy at step 0."""
    return sum(curve[s] for s in later) / len(later) - curve[0]


def test_mean_rise_by_hand():
    assert mean_rise({0: 0.64, 10: 0.76, 20: 0.65}) == pytest.approx(0.065)
    assert mean_rise({0: 0.58, 10: 0.58, 20: 0.58}) == 0.0


@pytest.mark.e2e
def test_default_grpo_run_reaches_the_measured_band(tiny: str, tmp_path):  # noqa: F811
    out = tmp_path / "grpo"
    proc = subprocess.run([sys.executable, "-m", "rlvr_recipes.launch.cpu_run", "train", "grpo", "--steps", str(STEPS),
                           "--out", str(out), "--tiny-dir", tiny], cwd=ROOT, capture_output=True, text=True,
                          timeout=1500)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    curve = dict(val_accuracy(read_metrics(os.path.join(out, "metrics.jsonl"))))
    wanted = (0, *LATER_VALIDATIONS)
    assert set(wanted) <= set(curve), f"held-out accuracy at steps {sorted(curve)}, expected {wanted}"
    rise = mean_rise(curve)
    print(f"held-out greedy accuracy {' -> '.join(f'{curve[s]:.3f}' for s in wanted)} at steps {wanted}: "
          f"mean of steps {LATER_VALIDATIONS} {rise:+.3f} over step 0")
    assert rise >= MIN_MEAN_RISE, (
        f"the default GRPO run no longer learns as measured: held-out accuracy "
        f"{' -> '.join(f'{curve[s]:.3f}' for s in wanted)} at steps {wanted}, mean rise {rise:+.3f} "
        f"(wanted >= +{MIN_MEAN_RISE}; fifteen measured runs on three builds gave +0.06..+0.265)")
