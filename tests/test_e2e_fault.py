"""Crash safety of the estimator state: verl's real CPU trainer SIGKILLed at several points of a step, then resumed.

One uninterrupted reference run (AVSPO, ``save_freq=1``) saves ``global_step_1``. A copy of that checkpoint folder is
then resumed towards step 2 three times, each run SIGKILLed (its process group: driver, Ray, workers; and any process
of the run outside that group, found by an environment tag) at one point of step 2, found deterministically through
the trainer extension's fault hook (``RLVR_FAULT_PAUSE``: the trainer writes a marker file and blocks there, the test
kills it):

- ``rollout``: generation dispatched, the batch not consumed yet;
- ``update``: after the advantage step (the in-memory estimator state has advanced to step 2), before the update;
- ``save``: ``global_step_2/rlvr_state.json`` written, verl's actor checkpoint and its step record not yet.

Every resume must come back at global step 1 with exactly the reference run's step-1 estimator state and ACR tracker
(the restored state is printed by the trainer as JSON), never with the half-done step 2; the last resume then runs
step 2 to the end. Nothing of a killed run may be left running. Five trainer start-ups: 6 minutes on the shared
2-core machine at light load, 17.5 at a load average of 20-30.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid

import pytest

import verl  # noqa: F401  (plugin registration first: rlvr_recipes.trainer.extension is imported by it)
from tests.test_e2e_cpu import ROOT, TINY_DIR, _read_steps, tiny  # noqa: F401  (tiny: the shared fixture)
from rlvr_recipes.trainer.extension import FAULT_ENV, FAULT_MARKER_ENV, STATE_FILE

pytestmark = pytest.mark.e2e

METHOD = "avspo"
COMMON = ("trainer.save_freq=1", "trainer.val_before_train=false", "trainer.test_freq=-1", "trainer.resume_mode=auto")
RUN_TAG_ENV = "RLVR_TEST_RUN_TAG"
START_TIMEOUT_S = 420
RESTORED = "[rlvr] restored estimator state from "


def _command(out: str, steps: int) -> list[str]:
    from rlvr_recipes.launch.cpu_run import CONFIG_DIR, CONFIG_NAME, run_overrides

    paths = {"model": os.path.join(TINY_DIR, "model"), "train": os.path.join(TINY_DIR, "data", "train.parquet"),
             "test": os.path.join(TINY_DIR, "data", "test.parquet")}
    overrides = run_overrides(METHOD, paths, out, steps, 1, COMMON, estimators=[METHOD])
    return [sys.executable, "-m", "verl.trainer.main_ppo", "--config-path", CONFIG_DIR, "--config-name", CONFIG_NAME,
            *overrides]


def _tagged(tag: str) -> list[int]:
    """PIDs of live processes whose environment carries ``RLVR_TEST_RUN_TAG=tag`` (the run's driver, Ray, workers)."""
    needle = f"{RUN_TAG_ENV}={tag}".encode()
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    with open(f"/proc/{entry}/stat") as s:
                        if s.read().rsplit(")", 1)[1].split()[0] != "Z":  # zombies hold nothing
                            pids.append(int(entry))
        except OSError:
            continue
    return pids


def _describe(pid: int) -> str:
    """``name(pid, pgid)`` of a live process, for the test's log."""
    with open(f"/proc/{pid}/stat") as f:
        name, rest = f.read().rsplit(")", 1)
    return f"{name.split('(', 1)[1]}({pid}, pgid {rest.split()[2]})"


class Run:
    """One ``main_ppo`` in its own session, tagged so that every process it starts can be found."""

    def __init__(self, out: str, steps: int, log_name: str, fault: str | None = None) -> None:
        from rlvr_recipes.launch.cpu_run import cpu_environment

        self.tag = uuid.uuid4().hex
        self.marker = os.path.join(out, f"{log_name}.paused")
        env = cpu_environment()
        env[RUN_TAG_ENV] = self.tag
        env["VERL_FILE_LOGGER_PATH"] = os.path.join(out, f"{log_name}.jsonl")
        env.pop(FAULT_ENV, None)
        if fault:
            env[FAULT_ENV] = fault
            env[FAULT_MARKER_ENV] = self.marker
        self.log_path = os.path.join(out, f"{log_name}.log")
        self.metrics_path = env["VERL_FILE_LOGGER_PATH"]
        self._log = open(self.log_path, "w")
        self.outside_group: set[str] = set()
        self.proc = subprocess.Popen(_command(out, steps), cwd=out, env=env, stdout=self._log,
                                     stderr=subprocess.STDOUT, start_new_session=True)

    def log(self) -> str:
        with open(self.log_path) as f:
            return f.read()

    def wait_paused(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not os.path.exists(self.marker):
            if self.proc.poll() is not None:
                pytest.fail(f"the run exited ({self.proc.returncode}) before its fault point:\n{self.log()[-4000:]}")
            if time.monotonic() > deadline:
                self.kill()
                pytest.fail(f"the fault point was not reached in {START_TIMEOUT_S} s:\n{self.log()[-4000:]}")
            time.sleep(0.5)

    def restore_lines(self) -> str:
        """The trainer's "restored estimator state" line, as the trainer wrote it into the fault marker (its console
        copy reaches the driver's log through Ray's log forwarding, seen lagging by more than 90 s under load)."""
        with open(self.marker) as f:
            return f.read()

    def kill(self) -> list[int]:
        """SIGKILL the run: its process group, then any of its processes outside the group (found by the run's tag:
        a Ray worker spawned by the raylet may sit in its own group). Returns the processes still alive after 30 s
        of this (none expected)."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        self._log.close()
        deadline = time.monotonic() + 30
        while (left := _tagged(self.tag)) and time.monotonic() < deadline:
            for pid in left:
                try:
                    self.outside_group.add(_describe(pid))
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, OSError):
                    pass
            time.sleep(0.5)
        if self.outside_group:
            print(f"[fault test] also SIGKILLed, outside the run's process group: {sorted(self.outside_group)}")
        return left

    def finish(self) -> int:
        try:
            code = self.proc.wait(timeout=START_TIMEOUT_S + 300)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"the run did not finish:\n{self.log()[-4000:]}")
        self._log.close()
        left = self.kill()
        assert not left, f"processes of a finished run still alive: {left}"
        return code


def _restored(log: str) -> dict:
    lines = [line for line in log.splitlines() if RESTORED in line]
    assert len(lines) == 1, f"expected one restore line, got {len(lines)}:\n{log[-3000:]}"
    return json.loads(lines[0][lines[0].index("{"):])


def _tracker_step(ckpt: str) -> str:
    with open(os.path.join(ckpt, "latest_checkpointed_iteration.txt")) as f:
        return f.read().strip()


def test_sigkill_anywhere_resumes_with_the_uninterrupted_state(tmp_path, tiny: str) -> None:  # noqa: F811
    ref_dir = str(tmp_path / "reference")
    os.makedirs(ref_dir)
    ref = Run(ref_dir, 1, "reference")
    assert ref.finish() == 0, ref.log()[-4000:]
    with open(os.path.join(ref_dir, "checkpoints", "global_step_1", STATE_FILE)) as f:
        expected = json.load(f)
    assert expected["global_step"] == 1 and expected["estimators"][METHOD]["step"] == 1, expected
    assert expected["acr_tracker"]["early_n"] == 1, expected

    out = str(tmp_path / "killed")
    os.makedirs(out)
    shutil.copytree(os.path.join(ref_dir, "checkpoints"), os.path.join(out, "checkpoints"))
    ckpt = os.path.join(out, "checkpoints")
    step2 = os.path.join(ckpt, "global_step_2")
    for point in ("rollout", "update", "save"):
        run = Run(out, 2, f"killed_at_{point}", fault=f"{point}@2")
        run.wait_paused()
        restored = run.restore_lines()
        left = run.kill()
        assert not left, f"killed at {point}: processes alive 30 s after SIGKILL {left}"
        assert _restored(restored) == expected, f"resume before the kill at {point} did not restore the step-1 state"
        assert _tracker_step(ckpt) == "1", f"killed at {point}: verl recorded step {_tracker_step(ckpt)}"
        if point == "save":  # the step-2 state is on disk, but verl never recorded step 2: it must be ignored
            with open(os.path.join(step2, STATE_FILE)) as f:
                assert json.load(f)["global_step"] == 2
            assert not os.path.exists(os.path.join(step2, "actor", "model_world_size_1_rank_0.pt"))
        else:
            assert not os.path.exists(os.path.join(step2, STATE_FILE))

    final = Run(out, 2, "resumed")
    assert final.finish() == 0, final.log()[-4000:]
    assert _restored(final.log()) == expected
    assert sorted(_read_steps(final.metrics_path)) == [2], "the resumed run must log step 2 only"
    assert _tracker_step(ckpt) == "2"
    with open(os.path.join(step2, STATE_FILE)) as f:
        after = json.load(f)
    assert after["global_step"] == 2 and after["estimators"][METHOD]["step"] == 2, after
    tracker = after["acr_tracker"]
    assert tracker["early_n"] == 2 and tracker["window"][0] == expected["acr_tracker"]["window"][0], tracker
