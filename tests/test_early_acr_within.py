"""benchmarks/lab_early_acr_within.py: early ACR against final accuracy within one setting, each seed set centred."""

from __future__ import annotations

import json
import math

import pytest
from scipy import stats

from benchmarks.lab_early_acr_within import early_acr_methods, main, run_sets, set_runs, within_correlation
from rlvr_recipes.launch.compare import EARLY_ACR

SET_A = [(0.1, 0.5), (0.3, 0.4), (0.2, 0.3)]
SET_B = [(0.5, 0.9), (0.7, 0.8), (0.6, 0.7)]  # set A moved by +0.4 in both figures: its centring removes it
SET_C = [(0.2, 0.1), (0.4, 0.5), (0.3, 0.3)]  # centred: y = 2x, r = +1


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


def test_run_sets_makes_a_set_of_each_methods_runs_and_counts_a_kept_comparison_once():
    """Two summaries that share one method's runs (a comparison kept and taken into a second summary): with every
    method, each summary's method is a set of its own, and the shared runs count once, under the first summary."""
    first = ("benchmarks/lab_x_summary.json", _summary({"small": SET_A, "large": SET_B}))
    second = ("benchmarks/lab_x_matched_summary.json", _summary({"small": SET_A, "large_ws400": SET_C}))
    assert early_acr_methods(second[1]) == ["small", "large_ws400"] and early_acr_methods({"claims": []}) == []
    sets, repeated = run_sets([first, second], ["all"])
    assert sets == {"lab_x:small": SET_A, "lab_x:large": SET_B, "lab_x_matched:large_ws400": SET_C}
    assert repeated == ["lab_x_matched:small"]
    # a comma list picks methods; one method keeps the summaries' own names, as the one-method command always has
    assert run_sets([first, second], ["large", "large_ws400"])[0] == {
        "lab_x:large": SET_B, "lab_x:large_ws400": [], "lab_x_matched:large": [], "lab_x_matched:large_ws400": SET_C}
    assert run_sets([first, second], ["small"]) == ({"lab_x": SET_A}, ["lab_x_matched"])
    # the same runs under another method are not the same set
    assert run_sets([first, ("lab_y_summary.json", _summary({"other": SET_A}))], ["all"])[1] == []


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
    assert result["repeated_sets"] == []
    assert "within-set r = -0.500 over 6 runs of 2 sets" in capsys.readouterr().out


def test_main_with_every_method_names_each_set_and_the_one_counted_once(tmp_path, capsys):
    """Sets A and B under method ``a`` in two summaries, set A again under ``a`` in a third (counted once), set C under
    ``b``: centred, A and B each give x = -0.1, +0.1, 0 against y = +0.1, 0, -0.1 (sum xy = -0.01, sum x^2 = sum
    y^2 = 0.02) and C x = -0.1, +0.1, 0 against y = -0.2, +0.2, 0 (sum xy = 0.04, sum x^2 = 0.02, sum y^2 = 0.08), so
    r = 0.02 / sqrt(0.06 x 0.12) = sqrt(2) / 6 = 0.236 on 9 runs - 3 sets - 1 = 5 df."""
    paths = []
    for name, values in (("lab_a", {"a": SET_A, "b": SET_C}), ("lab_b", {"a": SET_B}), ("lab_c", {"a": SET_A})):
        path = tmp_path / f"{name}_summary.json"
        path.write_text(json.dumps(_summary(values)))
        paths.append(str(path))
    out = tmp_path / "within_all.json"
    assert main([*paths, "--method", "all", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert set(result["by_set"]) == {"lab_a:a", "lab_a:b", "lab_b:a"} and result["repeated_sets"] == ["lab_c:a"]
    assert (result["runs"], result["sets"], result["df"]) == (9, 3, 5)
    assert result["r"] == pytest.approx(math.sqrt(2) / 6)
    printed = capsys.readouterr().out
    assert "counted once (the same runs in an earlier summary): lab_c:a" in printed
    assert "all: within-set r = +0.236 over 9 runs of 3 sets" in printed


def test_main_names_a_missing_summary(tmp_path, capsys):
    missing = str(tmp_path / "lab_gone_summary.json")
    assert main([missing]) == 2
    assert missing in capsys.readouterr().err


@pytest.mark.parametrize("target, name", [("lab-early-acr-within", "lab_early_acr_within"),
                                          ("lab-early-acr-within-all", "lab_early_acr_within_all"),
                                          ("lab-early-acr-within-sizes", "lab_early_acr_within_sizes")])
def test_the_committed_results_are_what_their_make_command_computes(tmp_path, monkeypatch, target, name):
    """Each committed result (docs/lab.md cites them) is what its make target computes from the committed summaries
    today: the command ``make -n`` prints, run with its JSON written elsewhere."""
    import os
    import shlex

    from tests.conftest import ROOT, make_recipe

    _, lines = make_recipe(target)
    assert len(lines) == 1
    args = shlex.split(lines[0])
    assert args[:2] == ["python", "benchmarks/lab_early_acr_within.py"]
    args = args[2:]
    at = args.index("--json")
    assert args[at + 1] == f"benchmarks/{name}.json"
    out = tmp_path / "result.json"
    monkeypatch.chdir(ROOT)  # the summaries' paths are the Makefile's, from the project's root
    assert main([*args[:at], "--json", str(out), *args[at + 2:]]) == 0
    with open(os.path.join(ROOT, "benchmarks", f"{name}.json")) as f:
        assert _same(json.loads(out.read_text()), json.load(f))


def _same(a, b) -> bool:
    """``a`` and ``b`` alike, floats to 1e-12 (NaN equal to NaN)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, rel=1e-12, abs=1e-12)
    return a == b
