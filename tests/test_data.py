"""Data preparation on small fixtures: verl schema, templates, answers, difficulty selection, clear errors."""

import os

import pandas as pd
import pytest

from launch.data import main, select_by_difficulty, to_verl
from reward.math_reward import compute_score

FIX = os.path.join(os.path.dirname(__file__), "fixtures")


def test_gsm8k_to_verl(tmp_path):
    out = tmp_path / "g.parquet"
    main(["convert", "--dataset", "gsm8k", "--input", os.path.join(FIX, "gsm8k_sample.jsonl"), "--output", str(out),
          "--split", "test"])
    df = pd.read_parquet(out)
    assert list(df["reward_model"].map(lambda r: r["ground_truth"])) == ["7", "2000"]
    msgs = list(df["prompt"][0])
    assert msgs[0]["role"] == "system" and msgs[1]["content"].endswith("put your final answer within \\boxed{}.")
    assert df["extra_info"][1]["split"] == "test" and df["extra_info"][1]["index"] == 1
    # the stored ground truth is what the reward compares against
    assert compute_score("gsm8k", "so \\boxed{2,000}", df["reward_model"][1]["ground_truth"])["score"] == 1.0


def test_math_solutions_give_boxed_answers_and_templates():
    raw = pd.read_json(os.path.join(FIX, "math_sample.jsonl"), lines=True)
    df = to_verl(raw, "math", template="think_answer")
    assert [r["ground_truth"] for r in df["reward_model"]] == ["\\frac{3}{4}", "2", "8"]
    assert "<think>" in df["prompt"][0][0]["content"]
    assert len(to_verl(raw, "math", template="plain")["prompt"][0]) == 1


def test_clear_errors():
    with pytest.raises(ValueError, match="no question column"):
        to_verl(pd.DataFrame({"q": ["x"], "answer": ["1"]}), "math500")
    with pytest.raises(ValueError, match="--template 'r2'"):
        to_verl(pd.DataFrame({"problem": ["x"], "answer": ["1"]}), "math500", template="r2")
    with pytest.raises(FileNotFoundError, match="neither a file"):
        main(["convert", "--dataset", "math", "--input", "/no/such.jsonl", "--output", "/tmp/x.parquet"])


def test_difficulty_selection():
    df = to_verl(pd.read_json(os.path.join(FIX, "math_sample.jsonl"), lines=True), "math")
    rollouts = pd.DataFrame({"index": [0] * 4 + [1] * 4 + [2] * 4,
                             "correct": [1, 1, 1, 1] + [1, 0, 0, 1] + [0, 0, 0, 0]})
    out = select_by_difficulty(df, rollouts, 0.2, 0.8, None)
    assert [e["index"] for e in out["extra_info"]] == [1]
    assert out["extra_info"][0]["selector_solve_rate"] == 0.5
    with pytest.raises(ValueError, match="'correct'"):
        select_by_difficulty(df, rollouts.rename(columns={"correct": "ok"}), 0, 1, None)
