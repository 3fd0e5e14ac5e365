"""rlvr_recipes.launch.start_gate: a trainer held after its imports until the runner's config check gives its verdict."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import psutil

from rlvr_recipes.launch import start_gate

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HELD = "from rlvr_recipes.launch import start_gate; start_gate.wait(timeout_s={timeout}); print('past the gate', flush=True)"


def _held(gate: str, timeout: float = 30.0, **kw) -> subprocess.Popen:
    env = {**os.environ, **start_gate.environment(gate), "PYTHONPATH": ROOT}
    return subprocess.Popen([sys.executable, "-c", HELD.format(timeout=timeout)], env=env, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def test_no_gate_in_the_environment_returns_at_once(monkeypatch) -> None:
    monkeypatch.delenv(start_gate.ENV, raising=False)
    t0 = time.monotonic()
    start_gate.wait(timeout_s=5)
    assert time.monotonic() - t0 < 0.5


def test_go_written_later_releases_the_wait_and_clears_the_variable(tmp_path, monkeypatch) -> None:
    gate = str(tmp_path / "gate")
    monkeypatch.setenv(start_gate.ENV, gate)
    threading.Timer(0.3, start_gate.open_gate, args=(gate, start_gate.GO)).start()
    t0 = time.monotonic()
    start_gate.wait(poll_s=0.01, timeout_s=10)
    assert 0.25 < time.monotonic() - t0 < 5
    assert start_gate.ENV not in os.environ  # the trainer's Ray workers must not wait
    assert os.listdir(tmp_path) == ["gate"]  # written atomically: no temporary file left


def test_process_held_until_go(tmp_path) -> None:
    gate = str(tmp_path / "gate")
    proc = _held(gate)
    time.sleep(1.0)
    assert proc.poll() is None, proc.communicate()
    start_gate.open_gate(gate, start_gate.GO)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert out.strip() == "past the gate"


def test_stop_ends_the_process_with_code_3(tmp_path) -> None:
    gate = str(tmp_path / "gate")
    start_gate.open_gate(gate, start_gate.STOP)
    proc = _held(gate)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 3
    assert "past the gate" not in out
    assert "not starting: stop" in err


def test_no_verdict_in_time_ends_the_process(tmp_path) -> None:
    proc = _held(str(tmp_path / "never"), timeout=0.5)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 3
    assert "no verdict in 0 s" in err or "no verdict in 1 s" in err
    assert "past the gate" not in out


def test_orphaned_process_does_not_wait_forever(tmp_path) -> None:
    """The launcher dies before its verdict: the held process notices its parent is gone and ends."""
    gate = str(tmp_path / "gate")
    pid_file = tmp_path / "pid"
    launcher = (
        "import os, subprocess, sys; from rlvr_recipes.launch import start_gate; "
        f"env = {{**os.environ, **start_gate.environment({gate!r})}}; "
        f"p = subprocess.Popen([sys.executable, '-c', {HELD.format(timeout=60)!r}], env=env, "
        "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
        f"open({str(pid_file)!r}, 'w').write(str(p.pid)); os._exit(0)"
    )
    subprocess.run([sys.executable, "-c", launcher], env={**os.environ, "PYTHONPATH": ROOT}, cwd=ROOT, timeout=30,
                   check=True)
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:  # ended, not yet reaped by its new parent
                return
        except psutil.NoSuchProcess:
            return
        time.sleep(0.1)
    os.kill(pid, 9)
    raise AssertionError("the held process outlived its launcher by 20 s")
