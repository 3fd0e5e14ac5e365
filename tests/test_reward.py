"""Answer extraction, equivalence, format and shaped rewards; hostile inputs return 0 quickly and never raise."""

import threading
import time

import pytest

from reward.math_reward import (
    compute_score,
    cosine_scaled_accuracy,
    extract_answer,
    format_reward_boxed,
    format_reward_think_answer,
    format_reward_think_delimiter,
    is_equivalent,
)


@pytest.mark.parametrize(
    "response, answer",
    [
        ("so the result is \\boxed{\\frac{1}{2}}.", "\\frac{1}{2}"),
        ("\\boxed{1} then corrected: \\boxed{\\{1, 2\\}}", "\\{1, 2\\}"),
        ("nested \\boxed{\\sqrt{\\frac{a}{b}}} done", "\\sqrt{\\frac{a}{b}}"),
        ("Therefore, the answer is 42.", "42"),
        ("The answer is $x = 3$.\n", "x = 3"),
        ("we get 12 apples and then 1,250 pears", "1250"),
        ("<think>2+2</think><answer>4</answer>", "4"),
        ("no answer here", None),
    ],
)
def test_extraction(response, answer):
    assert extract_answer(response) == answer


@pytest.mark.parametrize(
    "pred, gold",
    [
        ("\\frac{1}{2}", "0.5"),
        ("\\dfrac{3}{4}", "3/4"),
        ("2\\sqrt{2}", "\\sqrt{8}"),
        ("0.3333333", "1/3"),
        ("50\\%", "50"),
        ("90^\\circ", "90"),
        ("10\\text{ cm}", "10"),
        ("[1, 3)", "[1,3)"),
        ("\\pi/2", "\\frac{\\pi}{2}"),
        ("x^2+2x+1", "(x+1)^2"),
        ("\\boxed{7}", "7"),
        ("1,000", "1000"),
    ],
)
def test_equivalent(pred, gold):
    assert is_equivalent(pred, gold), (pred, gold)


@pytest.mark.parametrize(
    "pred, gold",
    [("\\frac{1}{3}", "0.33"), ("2\\sqrt{3}", "\\sqrt{8}"), ("[1, 3)", "(1, 3)"), ("x^2", "x^3"), ("7", "-7"), (None, "1")],
)
def test_not_equivalent(pred, gold):
    assert not is_equivalent(pred, gold)


HOSTILE = [
    "\\boxed{" + "9^" * 50 + "9}",
    "\\boxed{" + "{" * 5000 + "1" + "}" * 5000 + "}",
    "\\\\" * 200_000,
    "x" * 1_000_000,
    "\\boxed{" + "(" * 3000 + "1" + ")" * 3000 + "}",
    "\\boxed{10^{100000000}}",
    "\\boxed{\\frac{" * 500,
    "The answer is " + "1+" * 100_000 + "1",
]


@pytest.mark.parametrize("response", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_inputs_are_zero_fast_and_never_raise(response):
    t0 = time.perf_counter()
    out = compute_score("math", response, "17")
    assert out["score"] == 0.0
    assert time.perf_counter() - t0 < 5.0


def test_hostile_inputs_off_the_main_thread():
    results = []

    def work():
        t0 = time.perf_counter()
        for r in HOSTILE:
            results.append(compute_score("math", r, "17")["score"])
        results.append(time.perf_counter() - t0)
        results.append(compute_score("math", "\\boxed{\\frac{2}{4}}", "0.5")["score"])

    t = threading.Thread(target=work)
    t.start()
    t.join(60)
    assert not t.is_alive()
    assert results[: len(HOSTILE)] == [0.0] * len(HOSTILE)
    assert results[len(HOSTILE)] < 20.0
    assert results[-1] == 1.0


def test_format_rewards():
    assert format_reward_think_answer("<think>a</think>\n<answer>4</answer>") == 1.0
    assert format_reward_think_answer("<think>a</think><answer>4</answer><answer>5</answer>") == 0.0
    assert format_reward_think_answer("<answer>4</answer><think>a</think>") == 0.0
    assert format_reward_think_delimiter("reasoning\n</think>\nanswer") == 1.0
    assert format_reward_think_delimiter("reasoning</think> answer") == 0.0
    assert format_reward_boxed("so \\boxed{3}") == 1.0 and format_reward_boxed("3") == 0.0


def test_cosine_scaled_accuracy_by_hand():
    # l = 0: cos = 1 -> correct 1.0, wrong -1.0; l = L/2: cos = 0 -> 0.75 and -0.75; l >= L: 0.5 and -0.5
    assert cosine_scaled_accuracy(True, 0, 100) == pytest.approx(1.0)
    assert cosine_scaled_accuracy(True, 50, 100) == pytest.approx(0.75)
    assert cosine_scaled_accuracy(True, 500, 100) == pytest.approx(0.5)
    assert cosine_scaled_accuracy(False, 0, 100) == pytest.approx(-1.0)
    assert cosine_scaled_accuracy(False, 50, 100) == pytest.approx(-0.75)
    assert cosine_scaled_accuracy(False, 100, 100) == pytest.approx(-0.5)


def test_compute_score_recipes():
    ok = "<think>x</think><answer>\\boxed{4}</answer>"
    assert compute_score("math", ok, "4") == {"score": 1.0, "acc": 1.0, "accuracy": 1.0}
    out = compute_score("math", ok, "4", recipe="accuracy_format")
    assert out["score"] == 2.0 and out["format_think_answer"] == 1.0
    aapo = compute_score("math", "r\n</think>\n\\boxed{4}", "4", recipe="aapo_1p5b", max_length=1000)
    length = len("r\n</think>\n\\boxed{4}")
    assert aapo["score"] == pytest.approx(1.0 + 2.0 * cosine_scaled_accuracy(True, length, 1000))
    assert compute_score("math", "\\boxed{5}", "4", weights={"accuracy": 1.0, "format_boxed": 0.5})["score"] == 0.5
    with pytest.raises(ValueError, match="unknown reward recipe"):
        compute_score("math", ok, "4", recipe="nope")
    with pytest.raises(ValueError, match="unknown reward component"):
        compute_score("math", ok, "4", weights={"bogus": 1.0})


def test_loads_as_verl_custom_reward_function():
    import os

    from omegaconf import OmegaConf

    from verl.trainer.ppo.reward import get_custom_reward_fn

    path = os.path.join(os.path.dirname(os.path.dirname(__file__)), "reward", "math_reward.py")
    cfg = OmegaConf.create(
        {"reward": {"custom_reward_function": {"path": path, "name": "compute_score", "reward_kwargs": {"recipe": "accuracy"}}}}
    )
    fn = get_custom_reward_fn(cfg)
    assert fn(data_source="x", solution_str="\\boxed{2}", ground_truth="2", extra_info={})["score"] == 1.0
