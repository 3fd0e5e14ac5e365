"""The countdown verifier (rlvr_recipes/reward/countdown.py): hand-worked cases, hostile text, and a property test
against expression trees valued in the test itself (never by evaluating text)."""

from __future__ import annotations

import time
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr_recipes.reward.countdown import Unreadable, answer_text, compute_score, evaluate, is_solution

GT = "24|3,4,6,1"


@pytest.mark.parametrize("response, right", [
    ("<answer>(6 - 3 + 1) * 4... no</answer>\n<answer>4 * 6 * 1</answer>", True),  # last answer block
    ("so the answer is\n(3 + 1) * 6", True),  # last line
    ("<answer>6 * 4 = 24</answer>", True),  # trailing '= 24' dropped
    ("<answer>6 / (1 - 3 / 4)</answer>", True),  # 6 / (1/4) = 24 with fractions
    ("<answer>(6 * 4) / (3 - 1 - 1)</answer>", False),  # 1 used twice (given once)
    ("<answer>6 * 4 + 0</answer>", False),  # 0 was not given
    ("<answer>3 * 8</answer>", False),  # 8 was not given
    ("<answer>6 * 4 + 1</answer>", False),  # 25
    ("<answer>6 / (4 - 4)</answer>", False),  # division by zero (and 4 twice)
    ("<answer>-3 + 27</answer>", False),  # unary sign, 27 not given
    ("<answer>((((6)))) * ((4))</answer>", True),  # nesting is fine
    ("<answer>(6 * 4</answer>", False),  # unbalanced
    ("<answer>6 * 4)</answer>", False),
    ("<answer>6 ** 4</answer>", False),
    ("", False),
])
def test_hand_worked_cases(response, right):
    assert compute_score("countdown", response, GT) == {"score": float(right), "acc": float(right)}


def test_values_by_hand():
    assert evaluate("6 / (1 - 3 / 4)") == (Fraction(24), [6, 1, 3, 4])
    assert evaluate("2 - 3 - 4") == (Fraction(-5), [2, 3, 4])  # left-associative
    assert evaluate("8 / 4 / 2") == (Fraction(1), [8, 4, 2])
    assert evaluate("2 + 3 * 4") == (Fraction(14), [2, 3, 4])  # precedence
    assert answer_text("think\n<answer> 1+2 = 3 </answer>\nbye") == "1+2"


@pytest.mark.parametrize("hostile", [
    "__import__('os').system('echo pwned')",
    "<answer>6*4 if True else 0</answer>",
    "<answer>" + "*".join(["999999"] * 30) + "</answer>",  # too long, and would be huge
    "<answer>" + "(" * 5000 + "1" + ")" * 5000 + "</answer>",
    "<answer>" + "9" * 10_000 + "</answer>",
    "<answer>" + "1+" * 100_000 + "1</answer>",
    "<answer>6*4\x00</answer>",
    "<answer>６*４</answer>",  # full-width digits are not ASCII digits here
    "x" * 1_000_000,
])
def test_hostile_answers_score_zero_quickly(hostile):
    t0 = time.monotonic()
    assert compute_score("countdown", hostile, GT)["score"] == 0.0
    assert time.monotonic() - t0 < 1.0


def test_unreadable_ground_truth_is_an_error_not_a_zero():
    with pytest.raises(ValueError, match="ground truth"):
        compute_score("countdown", "<answer>6*4</answer>", "24")
    assert compute_score("countdown", "<answer>6*4</answer>", {"target": 24, "numbers": [6, 4]})["score"] == 1.0


def test_intermediate_size_is_bounded():
    with pytest.raises(Unreadable):
        evaluate("999999*999999*999999*999999")


# A random expression tree over some of the given numbers, rendered fully parenthesised, valued by the tree.
def _trees(numbers):
    leaves = st.sampled_from(numbers).map(lambda n: (str(n), Fraction(n), [n]))

    def combine(children):
        def node(pair):
            (ta, va, ua), op, (tb, vb, ub) = pair
            if op == "/" and vb == 0:
                return None
            value = {"+": va + vb, "-": va - vb, "*": va * vb, "/": va / vb if vb else None}[op]
            return (f"({ta} {op} {tb})", value, ua + ub)
        return st.tuples(children, st.sampled_from("+-*/"), children).map(node).filter(lambda x: x is not None)

    return st.recursive(leaves, combine, max_leaves=6)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 50), min_size=2, max_size=6).flatmap(lambda ns: st.tuples(st.just(ns), _trees(ns))))
def test_parser_value_equals_the_tree_value(case):
    numbers, (text, value, used) = case
    assert evaluate(text) == (value, used)
    # reaching that value is a solution exactly when no number is used more often than given
    from collections import Counter

    expected = not (Counter(used) - Counter(numbers))
    assert is_solution(f"<answer>{text}</answer>", value, numbers) == expected


def test_generator_solutions_by_hand_and_each_one_verifies():
    from rlvr_recipes.tiny_task.countdown import solutions

    found = solutions([1, 2, 3], 6)
    # by hand: 2*3 (1 unused), 1+2+3 and 1*2*3 in their bracketings, 6/1 style forms such as (2*3)/1
    assert "2 * 3" in found and "(1 * 2) * 3" in found and "(1 + 2) + 3" in found
    assert "(1 + 2) * 2" not in found  # 2 used twice
    for expr in found:
        assert is_solution(f"<answer>{expr}</answer>", Fraction(6), [1, 2, 3]), expr
    assert solutions([5], 7) == set()


def test_generated_problems_have_several_answers_and_are_seeded():
    from rlvr_recipes.tiny_task.countdown import make_problems, solutions

    problems = make_problems(20, seed=3)
    assert problems == make_problems(20, seed=3)
    for p in problems:
        assert p["solutions"] >= 2 and 2 <= p["target"] <= 60 and len(p["numbers"]) in (3, 4)
        assert len(solutions(p["numbers"], p["target"])) == p["solutions"]
        assert compute_score("countdown", "<answer>" + sorted(solutions(p["numbers"], p["target"]))[0] + "</answer>",
                             p["ground_truth"])["score"] == 1.0


def test_lab_task_split_is_disjoint_seeded_and_mixed():
    from rlvr_recipes.tiny_task.countdown import CountdownSpec, countdown_problems, prompt_text

    spec = CountdownSpec(train_size=60, test_size=20, warm_start_size=40, sum_fraction=0.5, limit=50)
    train, test = countdown_problems(spec)
    assert (train, test) == countdown_problems(spec)
    assert (train, test) == countdown_problems(spec, with_warm_start=True)[:2]
    warm = countdown_problems(spec, with_warm_start=True)[2]
    assert len(train) == 60 and len(test) == 20 and len(warm) == 40
    truths = [{p["ground_truth"] for p in part} for part in (train, test, warm)]
    assert len(set().union(*truths)) == 120  # no problem in two sets
    kinds = [p["kind"] for p in train + test]
    assert 0 < kinds.count("sum") < len(kinds)
    for p in train + test:
        if p["kind"] == "sum":
            assert p["target"] == sum(p["numbers"])
        assert 2 <= len(p["answers"]) == p["solutions"] <= 50
        assert compute_score("countdown", p["answers"][-1], p["ground_truth"])["score"] == 1.0
    assert prompt_text([3, 7, 9], 19) == "3,7,9>19:"
    # without a sum fraction the generator draws as before (the default problems are unchanged)
    from rlvr_recipes.tiny_task.countdown import make_problems

    assert all(p["kind"] == "expression" for p in make_problems(10, seed=3))


def test_countdown_rows_are_verl_rows_the_verifier_reads():
    from rlvr_recipes.tiny_task.build import countdown_rows
    from rlvr_recipes.tiny_task.countdown import make_problems

    problems = make_problems(3, seed=1, sum_fraction=0.5)
    rows = countdown_rows(problems, "test")
    for row, p in zip(rows, problems):
        assert row["data_source"] == "countdown"
        assert row["prompt"] == [{"role": "user", "content": ",".join(map(str, p["numbers"])) + f">{p['target']}:"}]
        truth = row["reward_model"]["ground_truth"]
        assert truth == f"{p['target']}|{','.join(map(str, p['numbers']))}"
        assert compute_score(row["data_source"], p["answers"][0], truth)["score"] == 1.0


def test_fresh_problems_are_new_seeded_and_of_the_task():
    from rlvr_recipes.tiny_task import countdown

    spec = countdown.CountdownSpec(train_size=40, test_size=10, warm_start_size=30, limit=20)
    used = {p["ground_truth"] for part in countdown.countdown_problems(spec, with_warm_start=True) for p in part}
    fresh = countdown.fresh_problems(spec, 25, seed=1)
    truths = [p["ground_truth"] for p in fresh]
    assert len(truths) == 25 and len(set(truths)) == 25 and not set(truths) & used
    assert countdown.fresh_problems(spec, 25, seed=1) == fresh
    assert all(len(p["numbers"]) in spec.sizes and p["solutions"] >= 2 for p in fresh)
    # the seed of the task itself gives back only problems outside its three sets
    assert not {p["ground_truth"] for p in countdown.fresh_problems(spec, 10, seed=spec.seed)} & used
