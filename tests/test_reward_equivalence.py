"""Answer equivalence: normalisation, exact and 1e-6-tolerant numbers, math-verify with the SymPy fallback."""

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr_recipes.reward.equivalence import NUMERIC_TOL, _sympy_equal, is_equivalent, is_safe_for_symbolic, normalise, parse_number

EQUIVALENT = [
    # fractions and decimals
    ("\\frac{1}{2}", "0.5"), ("\\dfrac{3}{4}", "3/4"), ("\\tfrac{3}{4}", "0.75"), ("\\frac12", "\\frac{1}{2}"),
    ("-\\frac{2}{3}", "\\frac{-2}{3}"), ("0.3333333", "\\frac{1}{3}"), ("1.5", "\\frac{3}{2}"), ("0.50", "\\frac12"),
    ("5", "5.0"), ("1e3", "1000"), ("2^{10}", "1024"), ("10^{-6}", "0.000001"),
    # radicals and constants
    ("2\\sqrt{2}", "\\sqrt{8}"), ("3\\sqrt{3}", "\\sqrt{27}"), ("\\frac{\\sqrt{3}}{2}", "\\frac{1}{2}\\sqrt{3}"),
    ("\\frac{1}{\\sqrt{2}}", "\\frac{\\sqrt{2}}{2}"), ("\\sqrt{2}", "1.4142136"), ("\\pi/2", "\\frac{\\pi}{2}"),
    ("4\\pi", "12.566370614359172"),
    # intervals and sets
    ("[1, 3)", "[1,3)"), ("(-\\infty, 2] \\cup (3, \\infty)", "(-\\infty,2]\\cup(3,\\infty)"),
    ("x \\in [2, 5]", "[2,5]"), ("\\left( -2, 3 \\right)", "(-2,3)"), ("\\{1,2\\}", "\\{2,1\\}"), ("1, 2", "\\{1,2\\}"),
    # units, degrees, percentages, currency, thousands separators
    ("10\\text{ cm}", "10"), ("12 inches", "12"), ("5 \\text{ dollars}", "5"), ("\\$5", "5"), ("90^\\circ", "90"),
    ("90°", "90"), ("30^{\\circ}", "30"), ("50\\%", "50"), ("50%", "50"), ("1,000", "1000"), ("1,234,567", "1234567"),
    # expressions, equations, text, matrices
    ("x^2+2x+1", "(x+1)^2"), ("\\frac{a+b}{2}", "\\frac{b+a}{2}"), ("x = 3", "3"), ("y=2x+1", "2x+1"),
    ("\\text{(A)}", "A"), ("\\text{Monday}", "Monday"),
    ("\\begin{pmatrix}1\\\\2\\end{pmatrix}", "\\begin{pmatrix}1\\\\2\\end{pmatrix}"),
    # LaTeX wrappers
    ("\\boxed{7}", "7"), ("$7$", "7"), ("\\(7\\)", "7"), ("\\displaystyle\\frac{1}{2}", "0.5"),
    ("2^{2023}", "2^{2023}"), ("\\infty", "\\infty"),
]

NOT_EQUIVALENT = [
    ("\\frac{1}{3}", "0.33"), ("2\\sqrt{3}", "\\sqrt{8}"), ("[1, 3)", "(1, 3)"), ("x^2", "x^3"), ("7", "-7"),
    ("1000000", "1000001"), ("0.5", "50\\%"), ("1,2", "12"), ("\\{1,2\\}", "\\{1,3\\}"), ("3.1416", "\\pi"),
    ("\\text{Tuesday}", "Monday"), ("x+1", "x-1"), ("2", "\\sqrt{2}"), ("(1,2)", "(2,1)"), ("", "0"), ("12", ""),
    (None, "1"),
]


@pytest.mark.parametrize("pred, gold", EQUIVALENT, ids=[f"{p} == {g}" for p, g in EQUIVALENT])
def test_equivalent(pred, gold):
    assert is_equivalent(pred, gold)


@pytest.mark.parametrize("pred, gold", NOT_EQUIVALENT, ids=[f"{p} != {g}" for p, g in NOT_EQUIVALENT])
def test_not_equivalent(pred, gold):
    assert not is_equivalent(pred, gold)


def test_numeric_tolerance_is_1e6_relative_above_one_absolute_below():
    # decimals: |a - b| <= 1e-6 * max(1, |b|)
    assert is_equivalent("0.0000015", "0.000001")  # 5e-7 apart
    assert not is_equivalent("0.0000025", "0.000001")  # 1.5e-6 apart
    assert is_equivalent("2000000.5", "2000000")  # 2.5e-7 relative
    assert not is_equivalent("2000003", "2000000.0")  # 1.5e-6 relative
    # integers and fractions are exact: no tolerance between two exact values
    assert not is_equivalent("1000000", "1000001")
    assert not is_equivalent("\\frac{1000000}{3}", "\\frac{1000001}{3}")
    # irrational golds go through the SymPy fallback with the same rule: 3.14159 is 8.4e-7 relative from pi
    assert is_equivalent("3.14159", "\\pi") and not is_equivalent("3.1416", "\\pi")


def test_sympy_fallback_decides_what_it_parses():
    assert _sympy_equal("\\frac{\\sqrt{2}}{2}", "0.70710678")
    assert _sympy_equal("x^2 - 1", "(x - 1)(x + 1)")
    assert not _sympy_equal("x^2", "x^3")
    assert not _sympy_equal("\\notacommand{", "1")


def test_list_of_accepted_answers_and_numbers_as_gold():
    assert is_equivalent("7", ["6", "7"]) and not is_equivalent("8", ["6", "7"])
    assert is_equivalent("27", 27.0) and is_equivalent("0.5", Fraction(1, 2))


def test_normalise_and_parse_number():
    assert normalise("$\\left(\\dfrac{1}{2}\\right)$") == "(\\frac{1}{2})"
    assert normalise("10\\text{ cm}") == "10" and normalise("\\text{Monday}") == "Monday"
    assert normalise("1,234") == "1234" and normalise("1,2") == "1,2"
    assert parse_number("\\frac{3}{4}") == (Fraction(3, 4), True)
    assert parse_number("-\\frac{3}{4}") == (Fraction(-3, 4), True)
    assert parse_number("0.25") == (Fraction(1, 4), False)
    assert parse_number("x=12") == (Fraction(12), True)
    assert parse_number("\\sqrt{2}") is None and parse_number("1/0") is None


def test_guards():
    assert is_safe_for_symbolic("\\frac{\\sqrt{2}}{2}") and is_safe_for_symbolic("e^{x^2}")
    assert not is_safe_for_symbolic("9^9^9")
    assert not is_safe_for_symbolic("10^{100000000}")
    assert not is_safe_for_symbolic("x" * 1000)
    assert not is_safe_for_symbolic("{" * 30 + "1" + "}" * 30)
    assert is_safe_for_symbolic("(x+1)^{1000}") and not is_safe_for_symbolic("(x+1)^{1000}", strict=True)


@settings(max_examples=100, deadline=None)
@given(p=st.integers(-10**6, 10**6), q=st.integers(1, 10**4))
def test_fraction_equals_its_decimal_expansion(p, q):
    value = Fraction(p, q)
    decimal = f"{float(value):.12f}"
    assert is_equivalent(f"\\frac{{{p}}}{{{q}}}", decimal)
    assert is_equivalent(decimal, f"{p}/{q}")


@settings(max_examples=100, deadline=None)
@given(a=st.integers(-10**9, 10**9), b=st.integers(-10**9, 10**9))
def test_integers_are_equal_iff_equal(a, b):
    assert is_equivalent(str(a), str(b)) == (a == b)
    assert is_equivalent(f"{a:,}", str(a))


@settings(max_examples=100, deadline=None)
@given(x=st.floats(-1e6, 1e6, allow_nan=False), rel=st.floats(-0.9, 0.9))
def test_decimal_tolerance_property(x, rel):
    gold = f"{x:.9f}"
    gold_value = float(Fraction(gold))
    pred_value = gold_value + rel * NUMERIC_TOL * max(1.0, abs(gold_value))
    assert is_equivalent(f"{pred_value:.12f}", gold)
