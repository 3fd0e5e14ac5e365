"""Format rewards, cosine-scaled accuracy, weighted recipes, and compute_score as verl's custom reward function."""

import math
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr_recipes.reward import formats
from rlvr_recipes.reward.math_reward import COMPONENTS, RECIPES, compute_score, cosine_scaled_accuracy, resolve_weights

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize(
    "response, think_answer, delimiter, boxed",
    [
        ("<think>a</think>\n<answer>4</answer>", 1.0, 0.0, 0.0),
        ("  <think>\nwork\n</think>\n<answer>\\boxed{4}</answer>\n", 1.0, 1.0, 1.0),
        ("<think>a</think><answer>4</answer><answer>5</answer>", 0.0, 0.0, 0.0),  # two answers
        ("<answer>4</answer><think>a</think>", 0.0, 0.0, 0.0),  # wrong order
        ("<think>a</think> text <answer>4</answer>", 0.0, 0.0, 0.0),  # text between the blocks
        ("<think>a</think><answer>4</answer> trailing", 0.0, 0.0, 0.0),
        ("reasoning\n</think>\nso \\boxed{3}", 0.0, 1.0, 1.0),  # R1-style: <think> came from the chat template
        ("reasoning\n</think>\nx\n</think>\n", 0.0, 0.0, 0.0),  # the delimiter twice
        ("reasoning</think> answer", 0.0, 0.0, 0.0),
        ("\\boxed{3} in the thoughts\n</think>\nno box after", 0.0, 1.0, 0.0),
        ("so \\boxed{3", 0.0, 0.0, 0.0),
    ],
)
def test_format_rewards(response, think_answer, delimiter, boxed):
    assert formats.think_answer(response) == think_answer
    assert formats.think_delimiter(response) == delimiter
    assert formats.boxed(response) == boxed


def test_cosine_scaled_accuracy_by_hand():
    # 002 Eq. 10 with (0.5, 1.0) correct and (-1.0, -0.5) wrong: cos = 1 at l = 0, 0 at l = L/2, -1 at l = L
    assert cosine_scaled_accuracy(True, 0, 100) == pytest.approx(1.0)
    assert cosine_scaled_accuracy(True, 50, 100) == pytest.approx(0.75)
    assert cosine_scaled_accuracy(True, 100, 100) == pytest.approx(0.5)
    assert cosine_scaled_accuracy(True, 500, 100) == pytest.approx(0.5)  # l/L clipped at 1
    assert cosine_scaled_accuracy(False, 0, 100) == pytest.approx(-1.0)
    assert cosine_scaled_accuracy(False, 50, 100) == pytest.approx(-0.75)
    assert cosine_scaled_accuracy(False, 100, 100) == pytest.approx(-0.5)
    custom = cosine_scaled_accuracy(True, 25, 100, min_value_correct=0.0, max_value_correct=2.0)
    assert custom == pytest.approx(1.0 + math.cos(math.pi / 4))
    with pytest.raises(ValueError, match="max_len"):
        cosine_scaled_accuracy(True, 1, 0)


@settings(max_examples=100, deadline=None)
@given(lengths=st.lists(st.integers(0, 5000), min_size=1, max_size=20), correct=st.lists(st.booleans(), min_size=20,
                                                                                            max_size=20))
def test_cosine_vectorised_matches_scalar_and_is_monotone(lengths, correct):
    correct = correct[: len(lengths)]
    vec = cosine_scaled_accuracy(np.array(correct), np.array(lengths), 1000)
    assert vec.shape == (len(lengths),)
    assert vec.tolist() == pytest.approx([cosine_scaled_accuracy(c, l, 1000) for c, l in zip(correct, lengths)])
    order = np.argsort(lengths, kind="stable")
    for flag in (True, False):  # correct: non-increasing in length; wrong: non-decreasing
        values = [cosine_scaled_accuracy(flag, lengths[i], 1000) for i in order]
        diffs = np.diff(values)
        assert (diffs <= 1e-12).all() if flag else (diffs >= -1e-12).all()


def test_compute_score_returns_every_component_for_every_response():
    ok = "<think>x</think><answer>\\boxed{4}</answer>"
    for response in (ok, "garbage", "", None):
        out = compute_score("math", response, "4")
        assert set(out) == {"score", "acc", *COMPONENTS}
        assert all(isinstance(v, float) for v in out.values())
    assert compute_score("math", ok, "4")["score"] == 1.0


def test_recipes_are_weighted_sums_of_components():
    resp = "think\n</think>\n\\boxed{4}"
    for recipe, weights in RECIPES.items():
        for truth in ("4", "5"):
            out = compute_score("math", resp, truth, recipe=recipe)
            assert out["score"] == pytest.approx(sum(w * out[k] for k, w in weights.items()))
    aapo = compute_score("math", resp, "4", recipe="aapo_1p5b", cosine_max_len=1000)
    assert aapo["score"] == pytest.approx(1.0 + 2.0 * cosine_scaled_accuracy(True, len(resp), 1000))
    cw = compute_score("math", "<think>x</think><answer>\\boxed{4}</answer>", "4", recipe="cw_grpo")
    assert cw["score"] == 2.0
    custom = compute_score("math", "\\boxed{5}", "4", weights={"accuracy": 1.0, "format_boxed": 0.5})
    assert custom["score"] == 0.5 and custom["acc"] == 0.0


def test_configuration_errors_name_the_bad_key():
    with pytest.raises(ValueError, match="recipe='nope'"):
        compute_score("math", "x", "4", recipe="nope")
    with pytest.raises(ValueError, match="bogus"):
        compute_score("math", "x", "4", weights={"bogus": 1.0})
    with pytest.raises(ValueError, match="recipie"):
        compute_score("math", "x", "4", recipie="aapo_1p5b")
    with pytest.raises(ValueError, match="cosine_max_len"):
        compute_score("math", "x", "4", cosine_max_len=0)
    with pytest.raises(ValueError, match="finite"):
        resolve_weights(weights={"accuracy": float("nan")})
    # keyword arguments verl itself may pass are accepted
    assert compute_score("math", "\\boxed{4}", "4", reward_router_address=None)["score"] == 1.0


def _ppo_config(overrides):
    from hydra import compose, initialize_config_dir

    import verl

    config_dir = os.path.join(os.path.dirname(verl.__file__), "trainer", "config")
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        return compose(config_name="ppo_trainer", overrides=overrides)


@pytest.mark.parametrize("path", ["pkg://rlvr_recipes.reward.math_reward", os.path.join(ROOT, "rlvr_recipes", "reward", "math_reward.py")])
def test_loads_through_verl_config_keys(path):
    """The exact keys of verl 0.9.1's ppo_trainer.yaml: reward.custom_reward_function.{path,name,reward_kwargs}."""
    from verl.trainer.ppo.reward import get_custom_reward_fn

    cfg = _ppo_config([f"reward.custom_reward_function.path={path}", "reward.custom_reward_function.name=compute_score",
                       "+reward.custom_reward_function.reward_kwargs.recipe=cw_grpo"])
    fn = get_custom_reward_fn(cfg)
    out = fn(data_source="math500", solution_str="<think>x</think><answer>\\boxed{2}</answer>", ground_truth="2",
             extra_info={})
    assert out["score"] == 2.0 and out["format_think_answer"] == 1.0


def test_runs_inside_verl_naive_reward_manager(tmp_path):
    """verl's own reward manager: decodes the response, calls the function from its executor thread, logs extras."""
    import torch

    from tests.tiny_lm import build_tokenizer
    from verl import DataProto
    from verl.trainer.ppo.reward import load_reward_manager

    tok = build_tokenizer(tmp_path)
    cfg = _ppo_config(["reward.custom_reward_function.path=pkg://rlvr_recipes.reward.math_reward",
                       "+reward.custom_reward_function.reward_kwargs.recipe=aapo_1p5b"])
    manager = load_reward_manager(cfg, tok)
    prompt = tok("user: 1+1?\nassistant: ", return_tensors="pt")["input_ids"]
    text = "think\n</think>\nso \\boxed{2}"
    resp = tok(text, return_tensors="pt")["input_ids"]
    pad = torch.zeros(1, 4, dtype=torch.long)
    data = DataProto.from_dict(
        tensors={"prompts": prompt, "responses": torch.cat([resp, pad], 1),
                 "attention_mask": torch.cat([torch.ones_like(prompt), torch.ones_like(resp), pad], 1)},
        non_tensors={"data_source": np.array(["math500"], dtype=object),
                     "reward_model": np.array([{"style": "rule", "ground_truth": "2"}], dtype=object),
                     "extra_info": np.array([{"index": 0}], dtype=object)},
    )
    out = manager.loop.run_until_complete(manager.run_single(data))
    expected = 1.0 + 2.0 * cosine_scaled_accuracy(True, len(text), 1000)
    assert out["reward_score"] == pytest.approx(expected)
    assert out["reward_extra_info"]["acc"] == 1.0 and out["reward_extra_info"]["format_think_delimiter"] == 1.0


@pytest.mark.parametrize("truth", [None, "", "   ", float("nan"), [], [None, ""]], ids=repr)
def test_missing_ground_truth_stops_with_the_sample_named(truth):
    """Bad data (issue 11, item 5): never a silent 0; the message names the data source and the row."""
    from rlvr_recipes.reward.math_reward import MissingGroundTruth

    with pytest.raises(MissingGroundTruth, match=r"data_source='gsm8k' \(split='train', index=17\)"):
        compute_score("gsm8k", "\\boxed{4}", truth, extra_info={"split": "train", "index": 17})
    with pytest.raises(ValueError, match="no index in extra_info"):
        compute_score("gsm8k", "\\boxed{4}", truth)


def test_a_list_with_one_usable_truth_is_scored():
    assert compute_score("gsm8k", "\\boxed{4}", [None, "4"])["score"] == 1.0
    assert compute_score("gsm8k", "\\boxed{4}", 4)["score"] == 1.0
