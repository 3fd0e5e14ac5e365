"""Difficulty-selected subsets (the ACR paper's Level3-500: selector solve rate 30-50 %, 500 problems, seed 42)."""

import json
import os

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr_recipes.launch.data import main, select_by_difficulty, solve_rates, to_verl

RAW = os.path.join(os.path.dirname(__file__), "fixtures", "raw")


def _data(n: int) -> pd.DataFrame:
    return to_verl(pd.DataFrame({"problem": [f"p{i}" for i in range(n)], "answer": [str(i) for i in range(n)]}), "math")


def test_rollout_layouts_give_the_same_rates():
    per_sample = pd.DataFrame({"index": [0] * 4 + [1] * 4, "correct": [1, 1, 0, 0, True, False, False, False]})
    per_problem = pd.DataFrame({"index": [0, 1], "n": [4, 4], "c": [2, 1]})
    lists = pd.DataFrame({"index": [0, 1], "correct": [[1, 1, 0, 0], [1, 0, 0, 0]]})
    for table in (per_sample, per_problem, lists):
        rates = solve_rates(table)
        assert rates[["index", "n", "c"]].values.tolist() == [[0, 4, 2], [1, 4, 1]]
        assert rates["rate"].tolist() == [0.5, 0.25]


def test_selection_keeps_the_rate_band():
    data = _data(6)
    rates = [1.0, 0.5, 0.3, 0.25, 0.0, 0.45]  # of 20 samples each
    rollouts = pd.DataFrame({"index": range(6), "n": 20, "c": [int(r * 20) for r in rates]})
    out = select_by_difficulty(data, rollouts, 0.3, 0.5, count=None)
    assert [e["index"] for e in out["extra_info"]] == [1, 2, 5]  # 0.3 and 0.5 included, data order kept
    assert [e["selector_solve_rate"] for e in out["extra_info"]] == [0.5, 0.3, 0.45]
    assert {e["selector_samples"] for e in out["extra_info"]} == {20}
    assert out["reward_model"][0]["ground_truth"] == "1"


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 8), min_size=5, max_size=60), st.integers(1, 20), st.integers(0, 10**6))
def test_sampling_is_without_replacement_inside_the_band_and_seeded(cs, count, seed):
    data = _data(len(cs))
    rollouts = pd.DataFrame({"index": range(len(cs)), "n": 8, "c": cs})
    out = select_by_difficulty(data, rollouts, 0.25, 0.625, count=count, seed=seed)
    eligible = [i for i, c in enumerate(cs) if 0.25 <= c / 8 <= 0.625]
    kept = [e["index"] for e in out["extra_info"]]
    assert len(kept) == min(count, len(eligible)) and len(set(kept)) == len(kept)
    assert set(kept) <= set(eligible) and kept == sorted(kept)
    again = select_by_difficulty(data, rollouts, 0.25, 0.625, count=count, seed=seed)
    assert [e["index"] for e in again["extra_info"]] == kept


def test_level3_500_defaults_on_a_larger_pool(capsys):
    rng = np.random.default_rng(0)
    cs = rng.integers(0, 17, size=3000)
    data = _data(3000)
    out = select_by_difficulty(data, pd.DataFrame({"index": range(3000), "n": 16, "c": cs}))  # 0.3-0.5, 500, 42
    rates = np.array([e["selector_solve_rate"] for e in out["extra_info"]])
    assert len(out) == 500 and ((rates >= 0.3) & (rates <= 0.5)).all()
    assert "sampled 500 of them without replacement (seed 42)" in capsys.readouterr().out


def test_data_sources_are_part_of_the_key():
    a = to_verl(pd.DataFrame({"problem": ["a0", "a1"], "answer": ["1", "2"]}), "aime24")
    b = to_verl(pd.DataFrame({"problem": ["b0", "b1"], "answer": ["1", "2"]}), "amc23")
    data = pd.concat([a, b], ignore_index=True)
    rollouts = pd.DataFrame({"data_source": ["aime24", "aime24", "amc23", "amc23"], "index": [0, 1, 0, 1],
                             "n": 4, "c": [2, 0, 0, 2]})
    out = select_by_difficulty(data, rollouts, 0.5, 0.5, count=None)
    assert [p[-1]["content"].split("\n")[0] for p in out["prompt"]] == ["a0", "b1"]
    with pytest.raises(ValueError, match="mixes data sources"):
        select_by_difficulty(data, rollouts.drop(columns="data_source"), 0.5, 0.5, None)


def test_errors_name_the_bad_input():
    data = _data(3)
    with pytest.raises(ValueError, match="need an 'index' column"):
        select_by_difficulty(data, pd.DataFrame({"id": [0], "correct": [1]}))
    with pytest.raises(ValueError, match=r"'correct' \(or 'acc'\)"):
        select_by_difficulty(data, pd.DataFrame({"index": [0], "ok": [1]}))
    with pytest.raises(ValueError, match="must be 0/1 or true/false"):
        select_by_difficulty(data, pd.DataFrame({"index": [0], "correct": ["maybe"]}))
    with pytest.raises(ValueError, match="0 <= c <= n"):
        select_by_difficulty(data, pd.DataFrame({"index": [0], "n": [2], "c": [3]}))
    with pytest.raises(ValueError, match="no problem of --data has rollouts"):
        select_by_difficulty(data, pd.DataFrame({"index": [7], "n": [2], "c": [1]}))
    with pytest.raises(ValueError, match="--min-rate"):
        select_by_difficulty(data, pd.DataFrame({"index": [0], "n": [2], "c": [1]}), 0.6, 0.4)


def test_cli_from_evaluate_scores(tmp_path, capsys):
    """`rlvr_recipes.launch.evaluate` writes scores.jsonl (index, n, c); `rlvr_recipes.launch.data select` reads it as rollouts."""
    from rlvr_recipes.launch.evaluate import main as eval_main

    data = tmp_path / "math500.parquet"
    main(["convert", "--dataset", "math500", "--input", os.path.join(RAW, "math500.jsonl"), "--output", str(data)])
    stub = os.path.join(os.path.dirname(__file__), "fixtures", "eval", "stub_generations.jsonl")
    eval_main(["--data", str(data), "--backend", "stub", "--stub-generations", stub, "--n", "8", "--no-greedy",
               "--out", str(tmp_path / "sel")])
    out = tmp_path / "subset.parquet"
    main(["select", "--data", str(data), "--rollouts", str(tmp_path / "sel" / "scores.jsonl"), "--min-rate", "0.4",
          "--max-rate", "0.6", "--count", "2", "--output", str(out)])
    subset = pd.read_parquet(out)
    scores = {json.loads(line)["index"]: json.loads(line)["c"] / 8
              for line in (tmp_path / "sel" / "scores.jsonl").read_text().splitlines()}
    assert len(subset) == 2 and all(0.4 <= scores[e["index"]] <= 0.6 for e in subset["extra_info"])
    assert "problems solved at a rate in [0.4, 0.6]" in capsys.readouterr().out
    with pytest.raises(FileNotFoundError, match="--data"):
        main(["select", "--data", str(tmp_path / "none.parquet"), "--rollouts", str(out), "--output", str(out)])
