"""Wall-clock cost of the embedded default run (verl's trainer on the CPU, docs/cpu.md): per-phase medians of verl's
``timing_s/*``, start-up, peak resident memory of every process, written as JSON that a later run compares with.

    python -m benchmarks.bench_cpu_step                       # 10 steps of grpo, writes benchmarks/cpu_step.json
    python -m benchmarks.bench_cpu_step --compare benchmarks/cpu_step.json --json /tmp/now.json
    python -m benchmarks.bench_cpu_step --label before -- trainer.v1.sampler.sampler_kwargs.poll_interval=2.0
    python -m benchmarks.bench_cpu_step --task countdown --steps 20   # the lab's task (docs/lab.md)

Not a timed test: it runs ``rlvr_recipes.launch.cpu_run.train`` once (the tiny model and data are built first if missing, outside
the measurement) and reports

- ``startup_s``: from launching ``main_ppo`` until verl prints "all initialize finished" (Ray, workers, engines,
  rollout server; before validation at step 0);
- ``first_step_end_s``: from launching until step 1's metrics are written (start-up + validation + step 1);
- ``phases``: the median over steps 2..N (step 1 warms up; its values are kept under ``step1``) of every
  ``timing_s/*`` key verl logs (``gen``, ``old_log_prob``, ``ref``, ``adv``, ``update_actor``, ``update_weights``,
  ``step``; ``testing`` over the validation steps);
- ``peak_rss_gb``: the largest sum of resident set sizes over the process tree (driver, Ray's GCS and raylet, every
  worker), sampled every 0.2 s. Shared pages are counted once per process, so this is an upper bound;
- ``peak_pss_gb``: the same with proportional set sizes (each shared page split between the processes that map it:
  torch's libraries, mapped by every worker, are counted once in all), the memory the run really holds;
- the machine (CPU model, cores, memory, torch and verl versions) and ``os.getloadavg()`` before and after: the
  numbers are only comparable between runs on the same machine under the same load.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import threading
import time
from typing import Any, Optional, Sequence

import psutil

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_JSON = os.path.join(ROOT, "benchmarks", "cpu_step.json")
READY_NEEDLE = "all initialize finished"


def machine() -> dict[str, Any]:
    """CPU model, logical cores, memory and the versions that set the numbers."""
    import torch
    import verl

    model = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), model)
    except OSError:
        pass
    return {
        "cpu": model,
        "logical_cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "verl": verl.__version__,
        "os": platform.platform(),
    }


class TreeSampler(threading.Thread):
    """Samples, every ``period`` s, the summed RSS of this process's tree and when ``log_path`` shows readiness."""

    def __init__(self, log_path: str, metrics_path: str, t0: float, period: float = 0.2) -> None:
        super().__init__(daemon=True)
        self.log_path, self.metrics_path, self.t0, self.period = log_path, metrics_path, t0, period
        self.peak_rss = 0
        self.peak_pss = 0
        self.peak_procs = 0
        self.ready_s: Optional[float] = None
        self.first_step_end_s: Optional[float] = None
        self._halt = threading.Event()

    def _tree_memory(self) -> tuple[int, int, int]:
        """Summed RSS, summed PSS (RSS where the platform has no PSS) and the number of processes of the tree."""
        me = psutil.Process()
        rss, pss, count = 0, 0, 0
        for p in [me, *me.children(recursive=True)]:
            try:
                full = p.memory_full_info()  # Linux: /proc/PID/smaps_rollup, a few ms for the whole tree
                rss += full.rss
                pss += getattr(full, "pss", full.rss)
                count += 1
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
        return rss, pss, count

    def _log_has(self, path: str, needle: str) -> bool:
        try:
            with open(path, errors="replace") as f:
                return needle in f.read()
        except OSError:
            return False

    def _first_step_logged(self) -> bool:
        try:
            with open(self.metrics_path) as f:
                return any(json.loads(line).get("step", 0) >= 1 for line in f if line.endswith("\n"))
        except (OSError, ValueError):
            return False

    def run(self) -> None:
        while not self._halt.is_set():
            rss, pss, count = self._tree_memory()
            if rss > self.peak_rss:
                self.peak_rss, self.peak_procs = rss, count
            self.peak_pss = max(self.peak_pss, pss)
            now = time.monotonic() - self.t0
            if self.ready_s is None and self._log_has(self.log_path, READY_NEEDLE):
                self.ready_s = now
            if self.first_step_end_s is None and self._first_step_logged():
                self.first_step_end_s = now
            self._halt.wait(self.period)

    def stop(self) -> None:
        self._halt.set()
        self.join(5)


def phase_medians(records: Sequence[dict[str, Any]]) -> tuple[dict[str, float], dict[str, float], int]:
    """Median of each ``timing_s/*`` over steps >= 2 (all steps that have it, for keys step 1 lacks), step 1's values,
    and the number of steps used."""
    by_key: dict[str, list[float]] = {}
    step1: dict[str, float] = {}
    used = 0
    for rec in records:
        timings = {k.split("/", 1)[1]: float(v) for k, v in rec["data"].items() if k.startswith("timing_s/")}
        if rec["step"] == 1:
            step1 = timings
        elif rec["step"] >= 2:
            used += 1
        for k, v in timings.items():
            if rec["step"] >= 2 or k == "testing":
                by_key.setdefault(k, []).append(v)
    return {k: round(statistics.median(v), 3) for k, v in sorted(by_key.items())}, step1, used


def run(steps: int, method: str, out: str, extra: Sequence[str], timeout_s: float,
        task: str = "addition") -> dict[str, Any]:
    """One default run of ``steps`` steps on ``task``; the figures listed in the module docstring."""
    from rlvr_recipes.launch.cpu_run import ensure_tiny, train

    ensure_tiny(task=task)  # outside the measurement
    os.makedirs(out, exist_ok=True)
    for name in ("metrics.jsonl", "train.log"):
        if os.path.exists(os.path.join(out, name)):
            os.remove(os.path.join(out, name))
    load_before = os.getloadavg()
    t0 = time.monotonic()
    sampler = TreeSampler(os.path.join(out, "train.log"), os.path.join(out, "metrics.jsonl"), t0)
    sampler.start()
    try:
        code = train(method, out, steps=steps, extra=extra, timeout_s=timeout_s, plot=False, quiet=True, task=task)
    finally:
        sampler.stop()
    total_s = time.monotonic() - t0
    load_after = os.getloadavg()
    if code != 0:
        raise SystemExit(f"the run failed with code {code}; see {out}/train.log")
    with open(os.path.join(out, "metrics.jsonl")) as f:
        records = [json.loads(line) for line in f if line.strip()]
    phases, step1, used = phase_medians(records)
    return {
        "method": method,
        "task": task,
        "steps": steps,
        "overrides": list(extra),
        "startup_s": None if sampler.ready_s is None else round(sampler.ready_s, 1),
        "first_step_end_s": None if sampler.first_step_end_s is None else round(sampler.first_step_end_s, 1),
        "total_s": round(total_s, 1),
        "phases": phases,
        "steps_in_median": used,
        "step1": {k: round(v, 3) for k, v in step1.items()},
        "peak_rss_gb": round(sampler.peak_rss / 2**30, 2),
        "peak_pss_gb": round(sampler.peak_pss / 2**30, 2),
        "processes_at_peak": sampler.peak_procs,
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in load_after],
    }


def table(result: dict[str, Any], other: Optional[dict[str, Any]] = None) -> str:
    """The figures as text; with ``other``, side by side (``other`` first, then this run)."""
    rows: list[tuple[str, Any, Any]] = [
        ("start-up to ready (s)", other and other.get("startup_s"), result["startup_s"]),
        ("launch to end of step 1 (s)", other and other.get("first_step_end_s"), result["first_step_end_s"]),
    ]
    keys = list(result["phases"]) + [k for k in (other or {}).get("phases", {}) if k not in result["phases"]]
    for k in keys:
        rows.append((f"timing_s/{k} (median)", other and other["phases"].get(k), result["phases"].get(k)))
    rows += [
        ("peak RSS, all processes (GB)", other and other.get("peak_rss_gb"), result["peak_rss_gb"]),
        ("peak PSS, all processes (GB)", other and other.get("peak_pss_gb"), result.get("peak_pss_gb")),
        ("whole run (s)", other and other.get("total_s"), result["total_s"]),
        ("load average (1 min) before", other and other.get("loadavg_before", [None])[0], result["loadavg_before"][0]),
    ]
    fmt = (lambda v: "-" if v is None else f"{v}")
    if other is None:
        return "\n".join(f"{name:32s} {fmt(b):>10s}" for name, _, b in rows)
    head = f"{'':32s} {other.get('label', 'before'):>10s} {result.get('label', 'now'):>10s}"
    return "\n".join([head] + [f"{name:32s} {fmt(a):>10s} {fmt(b):>10s}" for name, a, b in rows])


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1 :]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--method", default="grpo")
    parser.add_argument("--task", default="addition", help="embedded task: addition (the default run) or countdown")
    parser.add_argument("--out", default=os.path.join(ROOT, "runs", "bench_cpu_step"))
    parser.add_argument("--json", default=DEFAULT_JSON, help="where to write the result ('' for nowhere)")
    parser.add_argument("--label", default="now", help="name of this run in the JSON and the comparison")
    parser.add_argument("--compare", default=None, help="a JSON written by an earlier run, to print side by side")
    parser.add_argument("--timeout", type=float, default=1800.0)
    args = parser.parse_args(argv)
    result = {"label": args.label, "machine": machine(),
              **run(args.steps, args.method, args.out, extra, args.timeout, args.task)}
    other = None
    if args.compare:
        with open(args.compare) as f:
            other = json.load(f)
    print(table(result, other))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
