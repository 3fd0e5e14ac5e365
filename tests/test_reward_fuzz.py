"""Fuzzing the reward with hostile answers (issue 11, item 3).

Hypothesis strategies generate answers a policy could learn to emit against the grader: deep nesting, huge
exponents and factorials, million-character numbers, control characters and lone surrogates, Python and SymPy
syntax (with a canary command), LaTeX environments and macros. Every answer is wrapped the ways the extractor reads
answers (``\\boxed{}``, ``<answer>``, "The answer is", bare) and scored against ground truth ``7919`` (prime; no
generated answer equals it: the numbers are 0/1-valued nestings, powers of 10 or of 9 above 10^4, factorials,
repeated digits of other lengths, ``os.system``'s 0). Asserted per example: no code ran (the canary file is never
written), the verdict came back within its limit, the score is 0; and afterwards the worker pool still answers.
"""

import os
import tempfile
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlvr_recipes.reward import equivalence
from rlvr_recipes.reward.math_reward import compute_score

GOLD = "7919"
TIMEOUT_S = 1.0
#: Limit on one verdict: the symbolic limit, plus starting a replacement worker after a kill (about 2 s, more on a
#: loaded 2-core machine, up to 10 s seen), plus extraction and normalisation.
BOUND_S = TIMEOUT_S + 15.0
CANARY_DIR = tempfile.mkdtemp(prefix="rlvr_canary_")
CANARY = os.path.join(CANARY_DIR, "CANARY")
FUZZ = settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), database=None)

_OPENERS = ["{", "(", "[", "\\frac{1}{", "\\sqrt{", "\\left(", "\\{", "x^{", "\\begin{pmatrix}"]
_CLOSERS = {"{": "}", "(": ")", "[": "]", "\\frac{1}{": "}", "\\sqrt{": "}", "\\left(": "\\right)", "\\{": "\\}",
            "x^{": "}", "\\begin{pmatrix}": "\\end{pmatrix}"}

nesting = st.builds(
    lambda o, n, closed: o * n + "1" + (_CLOSERS[o] * n if closed else ""),
    st.sampled_from(_OPENERS), st.integers(30, 20_000), st.booleans(),
)
huge_powers = st.one_of(
    st.builds(lambda e: f"10^{{{e}}}", st.integers(10**4, 10**15)),
    st.builds(lambda e: f"9**{e}", st.integers(10**4, 10**15)),
    st.builds(lambda n, b: "^".join([str(b)] * n), st.integers(3, 200), st.integers(2, 99)),
    st.builds(lambda n: "9^{" * n + "9" + "}" * n, st.integers(2, 60)),
    st.builds(lambda n: f"{n}!", st.integers(100, 10**9)),
    st.builds(lambda n: f"({n})!!", st.integers(100, 10**6)),
    st.builds(lambda n: f"\\binom{{{n}}}{{{n // 2}}}", st.integers(10**4, 10**9)),
    st.builds(lambda n: f"(x+1)^{{{n}}}", st.integers(200, 10**6)),
    st.builds(lambda n: f"\\sum_{{k=1}}^{{{n}}} k^{{k}}", st.integers(10**3, 10**9)),
)
long_numbers = st.builds(lambda d, n: d * n, st.sampled_from("123456789"), st.integers(100_000, 1_000_000))
control = st.text(
    st.one_of(st.characters(categories=["Cc", "Cs", "Zl", "Zp", "Cf"]), st.sampled_from(list("0123456789{}\\^$"))),
    min_size=1, max_size=300,
)
_CMD = f"touch {CANARY}"
python_syntax = st.sampled_from([
    f"__import__('os').system('{_CMD}')",
    f"__import__(\"os\").popen(\"{_CMD}\").read()",
    f"eval(\"__import__('os').system('{_CMD}')\")",
    f"exec('import os; os.system(\"{_CMD}\")')",
    f"(lambda: __import__('os').system('{_CMD}'))()",
    f"Matrix([[__import__('os').system('{_CMD}')]]).det()",
    f"sympify(\"__import__('os').system('{_CMD}')\")",
    f"S(\"__import__('os').system('{_CMD}')\")",
    f"Symbol('x').__class__.__init__.__globals__['__builtins__']['__import__']('os').system('{_CMD}')",
    f"[c for c in ().__class__.__base__.__subclasses__() if 'wrap' in c.__name__][0]",
    f"open('{CANARY}', 'w').write('x')",
    f"Function('f')(x).subs(x, __import__('os').system('{_CMD}'))",
    "Integer(2)**Integer(10)**Integer(10)**Integer(10)",
    "lambda: 0",
    "globals()",
    "__builtins__",
])
latex = st.one_of(
    st.builds(lambda env, n: f"\\begin{{{env}}}" + " & ".join(["1"] * n) + "\\\\" * n + f"\\end{{{env}}}",
              st.sampled_from(["pmatrix", "bmatrix", "array", "cases", "aligned", "verbatim", "tabular"]),
              st.integers(1, 3000)),
    st.sampled_from([
        f"\\immediate\\write18{{{_CMD}}}", "\\input{/etc/passwd}", "\\def\\x{\\x}\\x", "\\newcommand{\\a}{\\a\\a}\\a",
        "\\begin{pmatrix}", "\\end{pmatrix}", "\\begin{}\\end{}", "\\frac{}{}", "\\sqrt[1000000]{2}",
        "\\operatorname{" + "a" * 5000 + "}", "\\text{" + "\\" * 5001 + "}", "\\mathrm{__import__}('os')",
    ]),
)
_WRAPPERS = [
    lambda a: f"\\boxed{{{a}}}",
    lambda a: f"<think>t</think><answer>{a}</answer>",
    lambda a: f"The answer is {a}",
    lambda a: f"So x = ${a}$.",
]
wrapper = st.sampled_from(_WRAPPERS)


def _check(answer: str, wrap) -> None:
    response = wrap(answer)
    t0 = time.perf_counter()
    out = compute_score("lighteval/MATH", response, GOLD, timeout_s=TIMEOUT_S)
    elapsed = time.perf_counter() - t0
    assert not os.path.exists(CANARY), f"code ran: {response[:200]!r}"
    assert elapsed < BOUND_S, f"{elapsed:.2f} s for {response[:200]!r}"
    assert out["score"] == 0.0, response[:200]


@pytest.fixture(scope="module", autouse=True)
def warm_and_check_after():
    assert equivalence.warm_up() >= 1
    yield
    # the pool keeps serving: symbolic answers (which need a worker) still get verdicts, right and wrong
    assert equivalence.is_equivalent("\\frac{1}{\\sqrt{2}}", "\\frac{\\sqrt{2}}{2}")
    assert not equivalence.is_equivalent("\\frac{1}{\\sqrt{3}}", "\\frac{\\sqrt{2}}{2}")
    assert not os.path.exists(CANARY)


@FUZZ
@given(nesting, wrapper)
def test_deep_nesting(answer, wrap):
    _check(answer, wrap)


@FUZZ
@given(huge_powers, wrapper)
def test_huge_exponents_and_factorials(answer, wrap):
    _check(answer, wrap)


@settings(FUZZ, max_examples=6)
@given(long_numbers, wrapper)
def test_million_character_numbers(answer, wrap):
    _check(answer, wrap)


@FUZZ
@given(control, wrapper)
def test_control_characters_and_lone_surrogates(answer, wrap):
    _check(answer, wrap)


@settings(FUZZ, max_examples=30)
@given(python_syntax, wrapper, st.sampled_from(["", " ", "\n", "$", "\\("]))
def test_python_and_sympy_syntax(answer, wrap, prefix):
    _check(prefix + answer, wrap)


@FUZZ
@given(latex, wrapper)
def test_latex_environments_and_macros(answer, wrap):
    _check(answer, wrap)


@FUZZ
@given(st.one_of(python_syntax, latex, huge_powers))
def test_hostile_ground_truth(gold):
    """Dataset text is untrusted too: a hostile ground truth runs nothing and is bounded."""
    t0 = time.perf_counter()
    out = compute_score("lighteval/MATH", "\\boxed{7919}", gold, timeout_s=TIMEOUT_S)
    assert time.perf_counter() - t0 < BOUND_S
    assert not os.path.exists(CANARY)
    assert out["score"] == 0.0
