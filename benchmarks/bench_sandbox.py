"""rlvr_recipes.reward.sandbox against pebble's ProcessPool (issue 11, item 6): latency of one symbolic verdict, and of the
first verdict after a worker has been killed at its deadline (where pebble stands: rlvr_recipes/reward/sandbox.py). Needs
``pip install pebble`` (not a dependency of the package).

``python benchmarks/bench_sandbox.py`` (2 workers each, median of N calls; prints a table and a JSON line).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from concurrent.futures import TimeoutError as FutureTimeout

sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.dirname(__import__("os").path.abspath(__file__))))

from rlvr_recipes.reward import equivalence, sandbox  # noqa: E402

OK = {"pred": "\\frac{1}{\\sqrt{2}}", "gold": "\\frac{\\sqrt{2}}{2}"}
SLOW = {"pred": "(x+1)^{1000}", "gold": "17"}
N = 15


def _ours() -> dict:
    pool = sandbox.WorkerPool(equivalence._WORKER_ENTRY, 2)
    t0 = time.perf_counter()
    pool.prestart()
    start = time.perf_counter() - t0
    lat = []
    for i in range(N):
        t0 = time.perf_counter()
        pool.call({**OK, "pred": OK["pred"] + "+0" * (i % 3)}, 10)
        lat.append(time.perf_counter() - t0)
    after = []
    for _ in range(3):
        try:
            pool.call(SLOW, 0.3)
        except sandbox.SandboxTimeout:
            pass
        t0 = time.perf_counter()
        pool.call(OK, 30)
        after.append(time.perf_counter() - t0)
    pool.close()
    return {"start_s": start, "median_call_s": statistics.median(lat), "median_call_after_kill_s": statistics.median(after)}


def _pebble(context: str) -> dict:
    import multiprocessing

    from pebble import ProcessPool

    t0 = time.perf_counter()
    pool = ProcessPool(max_workers=2, context=multiprocessing.get_context(context))
    futures = [pool.schedule(equivalence.symbolic_equal, kwargs=equivalence.SANDBOX_WARMUP) for _ in range(2)]
    for f in futures:
        f.result()
    start = time.perf_counter() - t0
    lat = []
    for i in range(N):
        t0 = time.perf_counter()
        pool.schedule(equivalence.symbolic_equal, kwargs={**OK, "pred": OK["pred"] + "+0" * (i % 3)}, timeout=10).result()
        lat.append(time.perf_counter() - t0)
    after = []
    for _ in range(3):
        try:
            pool.schedule(equivalence.symbolic_equal, kwargs=SLOW, timeout=0.3).result()
        except FutureTimeout:
            pass
        t0 = time.perf_counter()
        pool.schedule(equivalence.symbolic_equal, kwargs=OK, timeout=30).result()
        after.append(time.perf_counter() - t0)
    pool.stop()
    pool.join()
    return {"start_s": start, "median_call_s": statistics.median(lat), "median_call_after_kill_s": statistics.median(after)}


if __name__ == "__main__":
    res = {"rlvr_recipes.reward.sandbox": _ours()}
    for context in ("fork", "forkserver"):
        res[f"pebble.ProcessPool ({context})"] = _pebble(context)
    print("| pool | start 2 warm workers s | median verdict s | verdict right after a kill s |")
    print("| --- | --- | --- | --- |")
    for k, v in res.items():
        print(f"| {k} | {v['start_s']:.2f} | {v['median_call_s']:.4f} | {v['median_call_after_kill_s']:.3f} |")
    print(json.dumps(res))
