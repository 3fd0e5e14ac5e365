"""A custom reward function that returns None for some rows stops verl's real CPU trainer at its first step, with a
message naming the samples, instead of training on a silent 0 (verl 0.9.1 alone pads the failed groups out and goes
on). About 90 s on the shared 2-core machine."""

from __future__ import annotations

import os

import pytest

from tests.test_e2e_cpu import _train, tiny  # noqa: F401  (tiny: the shared fixture)

pytestmark = pytest.mark.e2e

NONE_REWARD = '''
def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    return None if extra_info["index"] % 3 == 0 else 0.0
'''


def test_reward_returning_none_stops_the_run_naming_the_samples(tmp_path, tiny: str) -> None:  # noqa: F811
    reward = tmp_path / "none_reward.py"
    reward.write_text(NONE_REWARD)
    out = str(tmp_path / "run")
    proc, _ = _train("grpo", out, 2, "trainer.val_before_train=false", "trainer.test_freq=-1",
                     f"reward.custom_reward_function.path={reward}", timeout=600)
    with open(os.path.join(out, "train.log")) as f:
        log = f.read()
    assert proc.returncode not in (0, 124), proc.stdout[-3000:]
    assert "the reward function returned None (NoneType) for data source 'arithmetic/addition', row " in log
    assert "DataError: non-finite reward for " in log and "(extra_info.index), uid '" in log, log[-3000:]
    metrics = os.path.join(out, "metrics.jsonl")
    assert not os.path.exists(metrics) or os.path.getsize(metrics) == 0, "a step was logged: it trained on"
