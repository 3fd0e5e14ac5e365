"""Bad data stops with a message naming the file and row, or the sample and the value (rlvr_recipes/trainer/checks.py)."""

import asyncio
import math

import numpy as np
import pandas as pd
import pytest
import torch

from omegaconf import OmegaConf

import verl  # plugin registration first: rlvr_recipes.trainer.extension is imported by it
from rlvr_recipes.advantage.diagnostics import ACRTracker
from rlvr_recipes.trainer.checks import DataError, check_data_config, check_dataset, check_reward_value, check_rewards
from rlvr_recipes.trainer.extension import advantage_step

from tests.helpers import algo, batch


def _rows(truths):
    return pd.DataFrame({
        "data_source": ["math"] * len(truths),
        "prompt": [[{"role": "user", "content": f"q{i}"}] for i in range(len(truths))],
        "reward_model": [{"style": "rule", "ground_truth": t} for t in truths],
        "extra_info": [{"index": i} for i in range(len(truths))],
    })


def test_good_file_passes(tmp_path):
    path = tmp_path / "train.parquet"
    _rows(["1", "x = 3", "\\frac{1}{2}"]).to_parquet(path)
    assert check_dataset(str(path)) == 3


@pytest.mark.parametrize("bad", [None, "", "   ", "\n"], ids=["null", "empty", "blank", "newline"])
def test_missing_or_empty_ground_truth_names_file_and_row(tmp_path, bad):
    path = tmp_path / "train.parquet"
    _rows(["1", "2", bad, "4"]).to_parquet(path)
    with pytest.raises(DataError) as err:
        check_dataset(str(path))
    msg = str(err.value)
    assert f"data.train_files: {path}: row 2 (1 of 4)" in msg and "reward_model.ground_truth" in msg


def test_many_bad_rows_are_counted(tmp_path):
    path = tmp_path / "val.parquet"
    _rows([""] * 8 + ["ok"]).to_parquet(path)
    with pytest.raises(DataError, match=r"data.val_files: .*row 0, 1, 2, 3, 4 and 3 more \(8 of 9\)"):
        check_dataset(str(path), "data.val_files")


def test_list_ground_truth(tmp_path):
    path = tmp_path / "t.parquet"
    df = _rows(["a", "b"])
    df["reward_model"] = [{"ground_truth": ["1", "2"]}, {"ground_truth": []}]
    df.to_parquet(path)
    with pytest.raises(DataError, match=r"row 1 \(1 of 2\)"):
        check_dataset(str(path))


def test_whole_reward_model_missing_in_a_row(tmp_path):
    path = tmp_path / "t.parquet"
    df = _rows(["a", "b"])
    df.loc[0, "reward_model"] = None
    df.to_parquet(path)
    with pytest.raises(DataError, match=r"row 0 \(1 of 2\)"):
        check_dataset(str(path))


@pytest.mark.parametrize("column", ["prompt", "data_source", "reward_model"])
def test_missing_column_names_file_and_column(tmp_path, column):
    path = tmp_path / "train.parquet"
    _rows(["1"]).drop(columns=[column]).to_parquet(path)
    with pytest.raises(DataError, match=rf"{path} has no column '{column}'"):
        check_dataset(str(path))


def test_reward_model_without_ground_truth(tmp_path):
    path = tmp_path / "train.parquet"
    df = _rows(["1"])
    df["reward_model"] = [{"style": "rule"}]
    df.to_parquet(path)
    with pytest.raises(DataError, match="column 'reward_model' has no field 'ground_truth'"):
        check_dataset(str(path))


def test_missing_and_unreadable_files(tmp_path):
    with pytest.raises(DataError, match=r"data.train_files: .*nope.parquet does not exist"):
        check_dataset(str(tmp_path / "nope.parquet"))
    (tmp_path / "junk.parquet").write_text("not parquet")
    with pytest.raises(DataError, match="junk.parquet is not a readable parquet file"):
        check_dataset(str(tmp_path / "junk.parquet"))


def test_config_checks_every_file_with_its_keys(tmp_path):
    good, bad = tmp_path / "a.parquet", tmp_path / "b.parquet"
    _rows(["1"]).to_parquet(good)
    df = _rows(["1"]).rename(columns={"prompt": "question"})
    df.to_parquet(bad)
    cfg = OmegaConf.create({"data": {"train_files": [str(good)], "val_files": str(bad), "prompt_key": "prompt"}})
    with pytest.raises(DataError, match=rf"data.val_files: {bad} has no column 'prompt'"):
        check_data_config(cfg)
    cfg.data.prompt_key = "question"  # data.prompt_key names the column
    with pytest.raises(DataError, match=rf"data.train_files: {good} has no column 'question'"):
        check_data_config(cfg)


@pytest.mark.parametrize("value", [None, "1.0", "correct", float("nan"), float("inf"), [1.0], {"score": 1},
                                   torch.tensor([1.0, 0.0]), torch.tensor(float("nan"))],
                         ids=["none", "numeric-string", "string", "nan", "inf", "list", "dict", "2-tensor", "nan-tensor"])
def test_bad_reward_values_name_the_sample_and_value(value):
    with pytest.raises(DataError) as err:
        check_reward_value(value, "openai/gsm8k", {"index": 17, "split": "train"})
    msg = str(err.value)
    assert "data source 'openai/gsm8k', row 17 (extra_info.index)" in msg and repr(value)[:20] in msg


@pytest.mark.parametrize("value, expected", [(1, 1.0), (0.5, 0.5), (True, 1.0), (np.float32(0.25), 0.25),
                                             (np.int64(0), 0.0), (-1.0, -1.0),
                                             # verl's DAPO manager: score + overlong penalty as a 0-dim tensor
                                             (torch.tensor(0.0) + 1.0, 1.0), (np.array([0.5]), 0.5)])
def test_good_reward_values_pass(value, expected):
    assert check_reward_value(value) == expected


def test_long_values_are_cut_in_the_message():
    with pytest.raises(DataError) as err:
        check_reward_value("x" * 10_000)
    assert len(str(err.value)) < 500


def test_batch_check_names_samples():
    scores = torch.tensor([1.0, float("nan"), 0.0, float("inf")])
    check_rewards(torch.tensor([1.0, 0.0]), ["a", "b"])
    with pytest.raises(DataError) as err:
        check_rewards(scores, ["u0", "u1", "u2", "u3"], ["s"] * 4, [{"index": i} for i in range(4)])
    msg = str(err.value)
    assert "non-finite reward for 2 of 4 samples" in msg
    assert "data source 's', row 1 (extra_info.index), uid 'u1': nan" in msg
    assert "row 3 (extra_info.index), uid 'u3': inf" in msg
    with pytest.raises(DataError, match=r"3 of 3 samples \(uid 'g': nan \(x2\); uid 'h': nan\)"):
        check_rewards(torch.full((3,), float("nan")), ["g", "g", "h"])  # one line per prompt, not per response


def test_advantage_step_refuses_nan_rewards_instead_of_nan_advantages():
    tlr, mask, uid = batch([[1, 0, 0, 0], [1, 1, 0, 0]])
    tlr[5, -1] = float("nan")
    data = verl.DataProto.from_dict(tensors={"token_level_rewards": tlr, "response_mask": mask},
                                    non_tensors={"uid": uid, "data_source": np.array(["d"] * 8, dtype=object)})
    with pytest.raises(DataError, match="data source 'd', uid 'q1': nan"):
        advantage_step(data, algo(None), ACRTracker())


def test_reward_worker_checks_each_score(capsys):
    """verl's RewardLoopWorker.compute_score, wrapped by the plugin: a bad score is logged with the sample and becomes
    NaN (raising there would only drop the sample's group: verl's agent loop catches it)."""
    from verl.experimental.reward_loop.reward_loop import RewardLoopWorker

    assert getattr(RewardLoopWorker.compute_score, "_rlvr_checked", False), "the plugin did not install the check"

    class Manager:
        def __init__(self, score):
            self.score = score

        async def run_single(self, data):
            return {"reward_score": self.score, "reward_extra_info": {}}

    worker = RewardLoopWorker.__new__(RewardLoopWorker)
    worker.config = OmegaConf.create({"reward": {"custom_reward_function": {"path": "x.py"}}})
    one = verl.DataProto.from_dict(tensors={"x": torch.zeros(1, 1)},
                                   non_tensors={"data_source": np.array(["gsm8k"], dtype=object),
                                                "extra_info": np.array([{"index": 3}], dtype=object)})
    worker.reward_manager = Manager(0.5)
    assert asyncio.run(worker.compute_score(one))["reward_score"] == 0.5
    for bad in (None, "1.0", float("nan")):
        worker.reward_manager = Manager(bad)
        out = asyncio.run(worker.compute_score(one))
        assert math.isnan(out["reward_score"])  # the advantage step stops the run on it
        assert "data source 'gsm8k', row 3" in capsys.readouterr().err


def test_cpu_runner_preflight_stops_on_a_bad_file_before_ray(tmp_path):
    """The driver's check (``rlvr_recipes.launch.cpu_run.preflight``, run before Ray starts) names the file, row and column."""
    from rlvr_recipes.launch.cpu_run import compose, preflight, run_overrides

    good, bad = tmp_path / "test.parquet", tmp_path / "train.parquet"
    _rows(["1", "2"]).to_parquet(good)
    _rows(["1", "2", "3", None]).to_parquet(bad)
    paths = {"model": str(tmp_path), "train": str(bad), "test": str(good)}
    with pytest.raises(DataError, match=rf"data.train_files: {bad}: row 3 \(1 of 4\) .*reward_model.ground_truth"):
        preflight(compose(run_overrides("grpo", paths, str(tmp_path / "out"), 1)))
