"""Unbiased pass@k against exact combinatorics, and the evaluation pipeline end to end on a fixture."""

import json
import math
import os
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from launch.evaluate import main, pass_at_k, read_training_log, summarise

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "generations.jsonl")


def exact(n, c, k):
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 300), data=st.data())
def test_pass_at_k_equals_exact_combinatorics(n, data):
    c = data.draw(st.integers(0, n))
    k = data.draw(st.integers(1, n))
    assert pass_at_k(n, c, k)[0] == pytest.approx(float(exact(n, c, k)), abs=1e-9)


def test_pass_at_k_by_hand_and_vectorised():
    # n=4, c=1: pass@1 = 1/4, pass@2 = 1 - C(3,2)/C(4,2) = 1/2, pass@4 = 1
    assert pass_at_k(np.array([4, 4, 4]), np.array([1, 0, 4]), 2).tolist() == pytest.approx([0.5, 0.0, 1.0])
    assert pass_at_k(256, 1, 256)[0] == 1.0
    assert pass_at_k(256, 3, 1)[0] == pytest.approx(3 / 256)
    with pytest.raises(ValueError, match="pass@5"):
        pass_at_k(4, 1, 5)


def test_weighted_average_is_by_problem_count():
    rows = [{"data_source": "a", "n": 2, "c": 2}] * 3 + [{"data_source": "b", "n": 2, "c": 0}]
    s = summarise(rows, [1])
    assert s["benchmarks"]["a"]["pass@1"] == 1.0 and s["benchmarks"]["b"]["pass@1"] == 0.0
    assert s["overall"]["pass@1"] == pytest.approx(0.75)  # not the 0.5 of a mean over benchmarks


def test_pipeline_end_to_end(tmp_path):
    main(["--generations", FIXTURE, "--k", "1", "2", "4", "--out", str(tmp_path)])
    s = json.loads((tmp_path / "passk.json").read_text())
    # math500: problem 1 has c=2 of 4 (0.5, 1/2 correct), problem 2 c=0; gsm8k: c=3 of 4
    assert s["benchmarks"]["math500"]["pass@1"] == pytest.approx((0.5 + 0.0) / 2)
    assert s["benchmarks"]["math500"]["pass@2"] == pytest.approx((1 - 1 / 6 + 0.0) / 2)
    assert s["benchmarks"]["gsm8k"]["pass@1"] == pytest.approx(0.75)
    assert s["overall"]["pass@1"] == pytest.approx((0.5 + 0 + 0.75) / 3)
    assert s["benchmarks"]["math500"]["greedy_acc"] == 0.5 and s["benchmarks"]["gsm8k"]["greedy_acc"] == 1.0
    assert (tmp_path / "passk.png").stat().st_size > 1000


def test_training_log_curves(tmp_path):
    log = tmp_path / "m.jsonl"
    log.write_text("\n".join(json.dumps({"step": s, "data": {"acr/acr": 1 - s / 10, "critic/score/mean": s / 10}})
                             for s in range(1, 4)))
    curves = read_training_log(str(log))
    assert curves["acr/acr"] == [(1, 0.9), (2, 0.8), (3, 0.7)]
    main(["--training-log", str(log), "--out", str(tmp_path)])
    assert (tmp_path / "training.png").exists()


def test_bad_generation_record_names_the_key(tmp_path):
    bad = tmp_path / "g.jsonl"
    bad.write_text(json.dumps({"data_source": "x", "responses": []}) + "\n")
    with pytest.raises(ValueError, match="ground_truth"):
        main(["--generations", str(bad), "--out", str(tmp_path)])
