"""Grading accuracy on the labelled set (issue 11, item 2): our reward agrees with the labels at least as often as
math-verify alone on the whole response, never marks a wrong answer right, and keeps the last-box rule."""

import pytest

from rlvr_recipes.reward import grading_report
from rlvr_recipes.reward.math_reward import compute_score

PAIRS = grading_report.load_pairs()


def test_labelled_set_covers_the_issue_forms():
    forms = {p["form"] for p in PAIRS}
    wanted = {
        "integer", "fraction", "decimal", "separator", "decimal comma", "radical", "pi", "interval", "set", "tuple",
        "matrix", "multiple choice", "text", "unit", "percent", "degree", "equation", "prose", "several boxed",
        "truncated",
    }
    assert wanted <= forms, wanted - forms
    assert any(p["correct"] for p in PAIRS) and any(not p["correct"] for p in PAIRS)


@pytest.fixture(scope="module")
def result():
    scorers = {k: grading_report.SCORERS[k] for k in ("ours", "math_verify")}
    return grading_report.agreement(PAIRS, scorers)


def test_ours_at_least_as_accurate_as_math_verify_alone(result):
    ours, mv = result["scorers"]["ours"], result["scorers"]["math_verify"]
    assert ours["agree"] >= mv["agree"], (ours["wrong"], mv["agree"])


def test_ours_never_marks_a_wrong_answer_right(result):
    assert result["scorers"]["ours"]["false_positives"] == 0, result["scorers"]["ours"]["wrong"]


@pytest.mark.parametrize("form", ["several boxed", "truncated", "interval", "separator", "decimal comma"])
def test_each_row_of_form(form):
    """Rows of the forms the issue reports as lost, and of the last-box rule, one by one."""
    for p in (p for p in PAIRS if p["form"] == form):
        assert (compute_score("lighteval/MATH", p["response"], p["ground_truth"])["acc"] == 1.0) == p["correct"], p


def test_table_counts_by_hand():
    """The table's arithmetic on three rows worked by hand: a scorer saying "right" everywhere agrees on 2 of 3."""
    rows = [
        {"form": "a", "ground_truth": "1", "response": "1", "correct": True},
        {"form": "a", "ground_truth": "1", "response": "2", "correct": False},
        {"form": "b", "ground_truth": "3", "response": "3", "correct": True},
    ]
    r = grading_report.agreement(rows, {"yes": lambda gt, resp: True})["scorers"]["yes"]
    assert (r["agree"], r["false_positives"], r["false_negatives"]) == (2, 1, 0)
    assert r["by_form"] == {"a": {"agree": 1, "rows": 2}, "b": {"agree": 1, "rows": 1}}
    assert "| all | 3 | **2 (66.7%)** |" in grading_report.table({"rows": 3, "scorers": {"yes": r}})
