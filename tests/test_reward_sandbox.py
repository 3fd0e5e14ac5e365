"""The verification worker has no more rights than it needs (issue 11, item 1) and the pool replaces workers that
die or run late. The module-level functions are entries run inside workers."""

import os
import signal
import time

import pytest

from rlvr_recipes.reward import sandbox


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def try_write(path: str) -> str:
    try:
        with open(path, "w") as f:
            f.write("written")
            f.flush()
        return "wrote"
    except OSError as e:
        return type(e).__name__


def limits() -> dict:
    import resource

    return {name: resource.getrlimit(getattr(resource, name))[1] for name in ("RLIMIT_AS", "RLIMIT_FSIZE", "RLIMIT_CORE")}


def sleep(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


@pytest.fixture
def pool_of():
    pools = []

    def make(entry: str, workers: int = 1) -> sandbox.WorkerPool:
        pools.append(sandbox.WorkerPool(entry, workers))
        return pools[-1]

    yield make
    for p in pools:
        p.close()


def test_worker_limits(pool_of, monkeypatch):
    monkeypatch.setenv("RLVR_VERIFY_MEMORY_MB", "1536")
    got = pool_of("tests.test_reward_sandbox:limits").call({}, timeout=30)
    assert got == {"RLIMIT_AS": 1536 * 1024 * 1024, "RLIMIT_FSIZE": 0, "RLIMIT_CORE": 0}


def test_worker_cannot_write_files(pool_of, tmp_path):
    path = str(tmp_path / "out.txt")
    assert pool_of("tests.test_reward_sandbox:try_write").call({"path": path}, timeout=30) != "wrote"
    assert not os.path.exists(path) or os.path.getsize(path) == 0


def test_late_task_is_killed_and_pool_serves_again(pool_of):
    pool = pool_of("tests.test_reward_sandbox:sleep")
    assert pool.call({"seconds": 0.0}, timeout=30) == 0.0
    t0 = time.perf_counter()
    with pytest.raises(sandbox.SandboxTimeout):
        pool.call({"seconds": 60.0}, timeout=0.5)
    assert time.perf_counter() - t0 < 5.0
    assert pool.call({"seconds": 0.1}, timeout=30) == 0.1  # its replacement answers
