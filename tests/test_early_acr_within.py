"""benchmarks/lab_early_acr_within.py: early ACR against final accuracy within one method, each seed set centred."""

from __future__ import annotations

import json
import math

import pytest
from scipy import stats

from benchmarks.lab_early_acr_within import main, set_runs, within_correlation
from rlvr_recipes.launch.compare import EARLY_ACR

SET_A = [(0.1, 0.5), (0.3, 0.4), (0.2, 0.3)]
SET_B = [(0.5, 0.9), (0.7, 0.8), (0.6, 0.7)]  # set A moved by +0.4 in both figures: its centring removes it


def test_within_correlation_worked_by_hand():
    """Centred, both sets are x = -0.1, +0.1, 0 and y = +0.1, 0, -0.1: sum xy = -0.02, sum x^2 = sum y^2 = 0.04, so
    r = -0.5; df = 6 runs - 2 sets - 1 = 3, t = 0.5 sqrt(3 / 0.75) = 1.0. A set of two runs is left out."""
    out = within_correlation({"a": SET_A, "b": SET_B, "c": [(0.9, 0.1), (0.1, 0.9)]})
    assert (out["runs"], out["sets"], out["df"]) == (6, 2, 3) and set(out["by_set"]) == {"a", "b"}
    assert out["r"] == pytest.approx(-0.5)
    assert out["p"] == pytest.approx(2 * stats.t.sf(1.0, 3))
    assert out["by_set"]["a"]["r"] == pytest.approx(-0.5) and out["by_set"]["b"]["final_mean"] == pytest.approx(0.8)
    # the offset between the sets is not a correlation: uncentred, the six runs give r = +0.79
    uncentred = stats.pearsonr([x for x, _ in SET_A + SET_B], [y for _, y in SET_A + SET_B])[0]
    assert uncentred == pytest.approx(0.786, abs=1e-3)


def test_within_correlation_without_enough_runs_or_spread():
    assert math.isnan(within_correlation({"a": SET_A[:2]})["r"])
    flat = within_correlation({"a": [(0.2, 0.5), (0.2, 0.6), (0.2, 0.7)]})
    assert math.isnan(flat["r"]) and math.isnan(flat["by_set"]["a"]["r"])


def _summary(method_values):
    early = {m: {str(s): e for s, (e, _) in enumerate(v)} for m, v in method_values.items()}
    final = {m: {str(s): f for s, (_, f) in enumerate(v)} for m, v in method_values.items()}
    return {"claims": [{"claim": "ACR falls as the group size G grows", "values": {}},
                       {"claim": EARLY_ACR, "values": {"early ACR": early, "final held-out accuracy": final}}]}


def test_set_runs_reads_one_methods_runs_from_the_claim():
    summary = _summary({"grpo": SET_A + [(float("nan"), 0.5)], "agrae": SET_B})
    assert set_runs(summary, "grpo") == SET_A  # the NaN run left out
    assert set_runs(summary, "drgrpo") == [] and set_runs({"claims": []}, "grpo") == []


def test_main_reads_the_summaries_and_writes_the_json(tmp_path, capsys):
    paths = []
    for name, runs in (("lab_a", SET_A), ("lab_b", SET_B)):
        path = tmp_path / f"{name}_summary.json"
        path.write_text(json.dumps(_summary({"grpo": runs})))
        paths.append(str(path))
    other = tmp_path / "lab_a_passk256.json"  # not a summary: skipped
    other.write_text("{}")
    out = tmp_path / "within.json"
    assert main([*paths, str(other), "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["method"] == "grpo" and result["r"] == pytest.approx(-0.5) and result["runs"] == 6
    assert "within-set r = -0.500 over 6 runs of 2 sets" in capsys.readouterr().out


def test_main_names_a_missing_summary(tmp_path, capsys):
    missing = str(tmp_path / "lab_gone_summary.json")
    assert main([missing]) == 2
    assert missing in capsys.readouterr().err
