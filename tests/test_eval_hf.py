"""rlvr_recipes.launch.evaluate's Hugging Face generation path on a tiny random Llama and character tokenizer built here."""

import json

import pandas as pd
import pytest

from tests.tiny_lm import build_model


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return build_model(tmp_path_factory.mktemp("tiny"))


def test_hf_generation_end_to_end(tiny_model, tmp_path):
    from rlvr_recipes.launch.evaluate import main

    data = tmp_path / "d.parquet"
    pd.DataFrame({
        "data_source": ["toy", "toy"],
        "prompt": [[{"role": "user", "content": "1+1="}], [{"role": "user", "content": "2+2="}]],
        "reward_model": [{"style": "rule", "ground_truth": "2"}, {"style": "rule", "ground_truth": "4"}],
        "extra_info": [{"index": 7}, {"index": 8}],
    }).to_parquet(data)
    result = main(["--model", tiny_model, "--data", str(data), "--backend", "hf", "--n", "3", "--batch-size", "2",
                   "--max-new-tokens", "6", "--out", str(tmp_path)])
    rows = [json.loads(line) for line in (tmp_path / "generations.jsonl").read_text().splitlines()]
    assert [r["index"] for r in rows] == [7, 8]
    assert all(len(r["responses"]) == 3 and all(isinstance(x, str) for x in r["responses"]) for r in rows)
    assert all(isinstance(r["greedy"], str) for r in rows)
    scores = [json.loads(line) for line in (tmp_path / "scores.jsonl").read_text().splitlines()]
    assert [s["n"] for s in scores] == [3, 3]
    summary = result["summary"]
    assert summary["k"] == [1, 2, 3] and summary["benchmarks"]["toy"]["problems"] == 2
    assert 0.0 <= summary["overall"]["weighted"]["pass@3"] <= 1.0
