"""Hostile responses score 0 within a bounded time and never raise: on the main thread, from worker threads (as verl's
reward loop calls it), when a symbolic check has to be killed, and without worker processes."""

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from rlvr_recipes.reward import equivalence, sandbox
from rlvr_recipes.reward.math_reward import compute_score

BOUND_S = 5.0

HOSTILE = {
    "power tower": "\\boxed{" + "9^" * 50 + "9}",
    "braced tower": "\\boxed{9^{9^{9^{9}}}}",
    "two-level tower": "\\boxed{9^{9^{9}}}",
    "huge exponent": "\\boxed{10^{100000000}}",
    "deep braces": "\\boxed{" + "{" * 5000 + "1" + "}" * 5000 + "}",
    "deep parens": "\\boxed{" + "(" * 3000 + "1" + ")" * 3000 + "}",
    "deep fractions": "\\boxed{" + "\\frac{1}{" * 30 + "2" + "}" * 30 + "}",
    "nested roots": "\\boxed{" + "\\sqrt{" * 20 + "2" + "}" * 20 + "}",
    "backslash soup": "\\\\" * 200_000,
    "1 MB of x": "x" * 1_000_000,
    "1 MB of braces": "\\boxed{" + "{" * 1_000_000,
    "unclosed fractions": "\\boxed{\\frac{" * 500,
    "long sum after 'answer is'": "The answer is " + "1+" * 100_000 + "1",
    "100k-digit number": "\\boxed{" + "1" * 100_000 + "}",
    "long polynomial": "\\boxed{" + "x^2+" * 120 + "1}",
    "big power of a polynomial": "\\boxed{(x+1)^{1000}}",
    "factorial": "\\boxed{1000!}",
    "series": "\\boxed{\\sum_{n=1}^{10^{9}} n^{n}}",
    "integral": "\\boxed{\\int_0^1 e^{-x^2} dx}",
    "answer tag soup": "<answer>" + "\\\\{" * 100_000 + "</answer>",
    "huge float": "\\boxed{1e999999999}",
    "NUL and unicode": "\\boxed{\x00\ud7ff\u202e17}",
}
NOT_STRINGS = [None, 12, 3.5, b"\\boxed{17}", ["\\boxed{17}"], {"a": 1}]


@pytest.fixture(autouse=True)
def warm_pool():
    """Warm verification workers before each test (a worker killed by an earlier test is replaced in the background),
    so that the bounds below time the calls and not interpreter start-up."""
    assert equivalence.warm_up() >= 1
    yield


def _timed(response, truth="17", **kw):
    t0 = time.perf_counter()
    out = compute_score("math", response, truth, **kw)
    return out, time.perf_counter() - t0


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_scores_zero_within_bound_on_main_thread(name):
    equivalence._symbolic_cached.cache_clear()
    out, elapsed = _timed(HOSTILE[name])
    assert out["score"] == 0.0 and out["acc"] == 0.0
    assert elapsed < BOUND_S, f"{name}: {elapsed:.2f} s"


def test_hostile_from_reward_worker_threads():
    """verl's reward loop runs the function via loop.run_in_executor: threads, where signals do not work."""
    equivalence._symbolic_cached.cache_clear()
    cases = list(HOSTILE.values()) + ["so \\boxed{\\frac{34}{2}}"]
    with ThreadPoolExecutor(max_workers=2) as pool:  # no more threads than workers on 2 cores: no queueing
        results = list(pool.map(_timed, cases))
    for name, (out, elapsed) in zip(list(HOSTILE) + ["legit"], results):
        assert elapsed < BOUND_S, f"{name}: {elapsed:.2f} s"
    assert [out["score"] for out, _ in results] == [0.0] * len(HOSTILE) + [1.0]


@pytest.mark.parametrize("response", NOT_STRINGS, ids=[type(r).__name__ for r in NOT_STRINGS])
def test_non_string_responses_score_zero(response):
    out, _ = _timed(response)
    assert out["score"] == 0.0 and set(out) >= {"score", "acc", "accuracy"}


def test_a_late_symbolic_check_is_killed_and_the_pool_recovers():
    equivalence._symbolic_cached.cache_clear()
    slow = "(x+1)^{1000}"  # comparing this with a number takes SymPy seconds; passes the (non-strict) guards
    t0 = time.perf_counter()
    assert not equivalence.is_equivalent(slow, "17", timeout_s=0.3)
    assert time.perf_counter() - t0 < 1.5
    # the killed worker is replaced: the next symbolic comparison still gets an answer
    assert equivalence.is_equivalent("2\\sqrt{3}", "\\sqrt{12}")


def test_a_dead_worker_is_no_answer_and_is_replaced():
    import os
    import signal

    pool = sandbox.WorkerPool("rlvr_recipes.reward.equivalence:symbolic_equal", max_workers=1)
    assert pool.call({"pred": "\\sqrt{4}", "gold": "2"}, timeout=30) is True
    (worker,) = pool._idle
    os.kill(worker.proc.pid, signal.SIGKILL)  # e.g. the kernel's OOM killer
    worker.proc.wait()
    with pytest.raises(sandbox.SandboxTimeout, match="worker failed"):
        pool.call({"pred": "1", "gold": "1"}, timeout=30)
    assert pool.call({"pred": "\\sqrt{9}", "gold": "3"}, timeout=30) is True  # its replacement answers
    pool.close()


# An alarm that lands inside a garbage-collector callback (hypothesis installs one) is reported as "unraisable"
# and re-armed by the alarm itself: expected here.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_without_worker_processes_threads_still_get_bounded_answers(monkeypatch):
    """RLVR_VERIFY_SANDBOX=0 (or no fork/exec): in-process behind strict guards, signal timeouts on the main thread."""
    monkeypatch.setenv("RLVR_VERIFY_SANDBOX", "0")
    equivalence._symbolic_cached.cache_clear()
    cases = list(HOSTILE.values()) + ["\\boxed{\\frac{\\sqrt{3}}{2}}"]
    truths = ["17"] * len(HOSTILE) + ["\\frac{1}{2}\\sqrt{3}"]
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(_timed, cases, truths))
    for name, (_, elapsed) in zip(list(HOSTILE) + ["legit"], results):
        assert elapsed < BOUND_S, f"{name}: {elapsed:.2f} s"
    assert [out["score"] for out, _ in results] == [0.0] * len(HOSTILE) + [1.0]
    equivalence._symbolic_cached.cache_clear()
    for name in ("big power of a polynomial", "long polynomial", "integral"):  # the slow ones, on the main thread
        out, elapsed = _timed(HOSTILE[name])
        assert out["score"] == 0.0 and elapsed < BOUND_S, f"{name}: {elapsed:.2f} s"
    out, _ = _timed("\\boxed{\\frac{\\sqrt{3}}{2}}", "\\frac{1}{2}\\sqrt{3}")
    assert out["score"] == 1.0


def _code_payloads(canary) -> dict[str, str]:
    """Answers that run code if anything evaluates them as Python: each would create ``canary``."""
    call = f"__import__('os').system('touch {canary}')"
    return {
        "boxed": f"\\boxed{{{call}}}",
        "answer tags": f"<answer>{call}</answer>",
        "the answer is": f"The answer is {call}",
        "sympy matrix": f"\\boxed{{Matrix([[1, 0], [0, 1]]).det() + ({call} or 0)}}",
        "open via builtins": f"\\boxed{{open('{canary}', 'w').write('x')}}",
        "lambda": f"\\boxed{{(lambda: {call})()}}",
        "dunder walk": "\\boxed{().__class__.__base__.__subclasses__()}",
        "exec": f"\\boxed{{exec(\"{call}\")}}",
    }


@pytest.mark.parametrize("sandboxed", [True, False], ids=["worker process", "in-process"])
def test_no_model_text_is_ever_evaluated(tmp_path, monkeypatch, sandboxed):
    """Python in an answer is text: it never runs (the canary file is never written) and it scores 0, in the
    verification worker and in the in-process fallback, with ground truths it would 'equal' if it ran (0, 1)."""
    if not sandboxed:
        monkeypatch.setenv("RLVR_VERIFY_SANDBOX", "0")
    equivalence._symbolic_cached.cache_clear()
    canary = tmp_path / "canary"
    for name, response in _code_payloads(canary).items():
        for truth in ("0", "1", "x"):
            out = compute_score("math", response, truth)
            assert out["score"] == 0.0, (name, truth, out)
            assert not canary.exists(), f"{name}: the answer ran as code"
    equivalence._symbolic_cached.cache_clear()

