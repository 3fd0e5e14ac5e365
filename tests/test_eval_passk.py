"""Unbiased pass@k against exact combinatorics, its properties, and the per-benchmark / overall averages."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr_recipes.launch.passk import default_ks, pass_at_k, summarise


def exact(n: int, c: int, k: int) -> Fraction:
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


@st.composite
def problem(draw, max_n=300):
    n = draw(st.integers(1, max_n))
    return n, draw(st.integers(0, n)), draw(st.integers(1, n))


@settings(max_examples=300, deadline=None)
@given(problem())
def test_equals_exact_combinatorics(nck):
    n, c, k = nck
    assert pass_at_k(n, c, k)[0] == pytest.approx(float(exact(n, c, k)), rel=1e-12, abs=1e-12)


def test_the_grid_of_two_papers_exactly():
    """n = 256 samples, k = 1 .. 256 (004 App. C.2; 001 Fig. 7-8), every c: no overflow, no cancellation."""
    n = 256
    for k in default_ks(n):
        cs = np.arange(n + 1)
        got = pass_at_k(np.full(n + 1, n), cs, k)
        want = np.array([float(exact(n, int(c), k)) for c in cs])
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


def test_by_hand():
    # n = 4, c = 1: pass@1 = 1/4; pass@2 = 1 - C(3,2)/C(4,2) = 1/2; pass@4 = 1
    assert pass_at_k([4, 4, 4], [1, 0, 4], 2).tolist() == [0.5, 0.0, 1.0]
    assert pass_at_k(4, 1, 1)[0] == 0.25 and pass_at_k(4, 1, 4)[0] == 1.0
    assert pass_at_k(256, 3, 1)[0] == pytest.approx(3 / 256)


@settings(max_examples=200, deadline=None)
@given(problem(max_n=200))
def test_properties(nck):
    n, c, k = nck
    value = pass_at_k(n, c, k)[0]
    assert 0.0 <= value <= 1.0
    assert pass_at_k(n, c, 1)[0] == pytest.approx(c / n)  # pass@1 is the fraction correct
    if k < n:
        assert pass_at_k(n, c, k + 1)[0] >= value - 1e-12  # more attempts never hurt
    if c < n:
        assert pass_at_k(n, c + 1, k)[0] >= value - 1e-12  # more correct samples never hurt
    assert (value == 0.0) == (c == 0)
    if n - c < k:  # every k-subset holds a correct sample
        assert value == 1.0


@settings(max_examples=50, deadline=None)
@given(st.lists(problem(max_n=64), min_size=1, max_size=30), st.integers(1, 64))
def test_vectorised_equals_per_problem(problems, k):
    problems = [(n, c) for n, c, _ in problems if n >= k]
    if not problems:
        return
    n, c = map(np.array, zip(*problems))
    assert pass_at_k(n, c, k).tolist() == pytest.approx([pass_at_k(a, b, k)[0] for a, b in problems], abs=1e-15)


def test_invalid_inputs_name_the_problem():
    with pytest.raises(ValueError, match="pass@5.*problem 1 has n=4"):
        pass_at_k([8, 4], [1, 1], 5)
    with pytest.raises(ValueError, match="c=5"):
        pass_at_k([4], [5], 1)
    with pytest.raises(ValueError, match="k >= 1"):
        pass_at_k([4], [1], 0)


def test_default_ks():
    assert default_ks(256) == [1, 2, 4, 8, 16, 32, 64, 128, 256]
    assert default_ks(12) == [1, 2, 4, 8, 12]
    assert default_ks(1) == [1]


def test_overall_is_weighted_by_problem_count_with_macro_beside_it():
    rows = [{"data_source": "a", "n": 2, "c": 2, "greedy_correct": 1}] * 3
    rows += [{"data_source": "b", "n": 2, "c": 0, "greedy_correct": 0}]
    s = summarise(rows, [1, 2])
    assert s["benchmarks"]["a"]["pass@1"] == 1.0 and s["benchmarks"]["b"]["pass@1"] == 0.0
    assert s["overall"]["weighted"]["pass@1"] == pytest.approx(0.75)  # 3 of 4 problems (000 App. A.3)
    assert s["overall"]["macro"]["pass@1"] == pytest.approx(0.5)  # mean of the two benchmarks
    assert s["overall"]["weighted"]["greedy_acc"] == pytest.approx(0.75)
    assert s["overall"]["problems"] == 4


def test_k_beyond_a_benchmark_samples_is_left_out_of_it_and_of_the_overall():
    rows = [{"data_source": "aime", "n": 16, "c": 1}, {"data_source": "math", "n": 4, "c": 1}]
    s = summarise(rows, [1, 4, 16])
    assert s["benchmarks"]["aime"]["pass@16"] == 1.0 and "pass@16" not in s["benchmarks"]["math"]
    assert "pass@16" not in s["overall"]["weighted"] and "pass@4" in s["overall"]["weighted"]
    assert s["overall"]["weighted"]["pass@1"] == pytest.approx((1 / 16 + 1 / 4) / 2)
    assert "greedy_acc" not in s["benchmarks"]["aime"]  # no greedy responses were scored


def test_summarise_names_a_bad_row():
    with pytest.raises(ValueError, match="row 1 lacks 'c'"):
        summarise([{"data_source": "a", "n": 1, "c": 1}, {"data_source": "a", "n": 1}], [1])
