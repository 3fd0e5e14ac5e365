"""Final-answer extraction (ACR paper App. A.3): boxed with nested braces, "The answer is", the last number."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr_recipes.reward.extract import extract_answer, last_boxed, last_number


@pytest.mark.parametrize(
    "response, answer",
    [
        ("so the result is \\boxed{\\frac{1}{2}}.", "\\frac{1}{2}"),
        ("first \\boxed{1}, then corrected: \\boxed{\\{1, 2\\}}", "\\{1, 2\\}"),  # last box; escaped braces
        ("nested \\boxed{\\sqrt{\\frac{a}{b}}} done", "\\sqrt{\\frac{a}{b}}"),
        ("matrix \\boxed{\\begin{pmatrix}1\\\\2\\end{pmatrix}}", "\\begin{pmatrix}1\\\\2\\end{pmatrix}"),
        ("\\fbox{5}", "5"),
        ("so \\boxed 5 is it", "5"),
        ("Therefore, the final answer is: $\\boxed{17}$. I hope it is correct", "17"),  # AAPO eval format
        ("Therefore, the answer is 42.", "42"),
        ("The answer is $x = 3$.\n", "x = 3"),
        ("The answer is \\(\\sqrt{2}\\)", "\\sqrt{2}"),
        ("Final Answer: The final answer is $\\frac{3}{5}$. I hope it is correct.", "\\frac{3}{5}"),  # Minerva
        ("The answer is 42 apples.", "42"),
        ("answer: 7", "7"),
        ("x = 3.5.", "3.5"),
        ("we get 12 apples and then 1,250 pears", "1250"),
        ("the value -0.25 is", "-0.25"),
        ("the sum is \\frac{3}{4}", "\\frac{3}{4}"),
        ("<think>2+2</think><answer>4</answer>", "4"),
        ("<think>try \\boxed{3}</think>\n<answer>The answer is \\boxed{4}</answer>", "4"),
        ("<think>..</think><answer>$\\frac{1}{2}$</answer>", "\\frac{1}{2}"),
        ("no answer here", None),
        ("truncated \\boxed{\\frac{1}{", None),  # an unfinished last box is no answer
        ("\\boxed{}", None),
        ("", None),
    ],
)
def test_extraction_table(response, answer):
    assert extract_answer(response) == answer


def test_boxed_only_ignores_other_rules():
    assert extract_answer("The answer is 42.", boxed_only=True) is None
    assert extract_answer("The answer is 42, i.e. \\boxed{42}", boxed_only=True) == "42"


def test_non_string_responses_have_no_answer():
    for bad in (None, 12, b"\\boxed{1}", ["\\boxed{1}"]):
        assert extract_answer(bad) is None
        assert last_boxed(bad) is None
        assert last_number(bad) is None


# balanced LaTeX-ish content: letters, digits, operators, escaped braces and nested groups
_atom = st.sampled_from(list("x2+-=/") + ["\\frac", "\\{", "\\}", "\\\\", " "])
_content = st.recursive(
    st.lists(_atom, min_size=1, max_size=6).map("".join),
    lambda inner: st.lists(st.one_of(inner, inner.map(lambda s: "{" + s + "}")), min_size=1, max_size=4).map("".join),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(prefix=st.text(max_size=40).filter(lambda s: "\\boxed" not in s and "\\fbox" not in s and "<answer>" not in s
                                          and "</answer>" not in s),
       content=_content, suffix=st.text(alphabet="abc .\n", max_size=20))
def test_last_box_content_round_trips(prefix, content, suffix):
    content = content.strip()
    if not content or content.endswith("\\"):
        return
    assert extract_answer(f"{prefix}\\boxed{{{content}}}{suffix}") == content


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(list("\\{}$ab1 .,:-/") + ["\\boxed", "answer is", "<answer>", "</answer>"]),
                max_size=80).map("".join))
def test_extraction_never_raises_and_returns_text_or_none(text):
    out = extract_answer(text)
    assert out is None or (isinstance(out, str) and out)
