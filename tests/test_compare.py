"""rlvr_recipes.launch.compare: the pieces by hand, and one real comparison (2 methods x 1 seed x 2 steps) on verl's trainer
on a small build of the countdown task."""

from __future__ import annotations

import json
import math
import os
import shlex
import subprocess
import sys
import time
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr_recipes.launch.compare import (EARLY_ACR, PUBLISH_END, PUBLISH_START, TRAINING_FILE, RunPlan, RunSpec,
                                         _change_table, _interrupted_by_signal, _lanes_sentence, _levels_table,
                                         _seed_range, _stop_lanes, acr_by_group_size, check_kept_run, claims,
                                         diff_verdict, keep_training_record, main, paired_change, paired_claim,
                                         passk_change, passk_curve, publish_report, read_train_levels, run_in_lanes,
                                         run_specs, score_own_levels, series, split_by_solve_rate, summarise,
                                         training_record, val_key, welch_test, write_train_levels,
                                         write_training_record)
from rlvr_recipes.launch.cpu_plot import read_metrics
from rlvr_recipes.launch.cpu_run import (TRAIN_LEVELS, level_file, lost_port_race, run_then_release,
                                         run_with_port_retry, train_file)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _dump(path, step, groups):
    with open(path, "w") as f:
        for uid, scores in groups.items():
            for i, s in enumerate(scores):
                f.write(json.dumps({"step": step, "uid": f"{uid}_{i}_0", "score": s}) + "\n")


def test_acr_by_group_size_by_hand(tmp_path):
    # over every g-subgroup: A [1,1,0,0] cut to 2 is collapsed in 2 of its C(4,2) = 6 pairs (1,1 and 0,0), at 4 never;
    # B [0,1,1,1]: 3 of 6 pairs; C [1,1,1,1]: always -> step 1, G=2: (1/3 + 1/2 + 1) / 3, G=4: 1/3
    _dump(tmp_path / "1.jsonl", 1, {"A": [1, 1, 0, 0], "B": [0, 1, 1, 1], "C": [1, 1, 1, 1]})
    # step 2: D [0,0,0,1]: 3 of 6 pairs, at 4 never; E [0,0,0,0]: always -> G=2: (1/2 + 1) / 2, G=4: 1/2
    _dump(tmp_path / "2.jsonl", 2, {"D": [0, 0, 0, 1], "E": [0, 0, 0, 0]})
    got = acr_by_group_size(str(tmp_path), (2, 4, 8))
    assert got == pytest.approx({2: ((1 / 3 + 1 / 2 + 1) / 3 + 3 / 4) / 2, 4: (1 / 3 + 1 / 2) / 2})  # none has 8
    # groups of other sizes weigh one each: F [1,0] (1 pair, not collapsed) beside a 3-group G [1,1,0] (1 of 3 pairs)
    _dump(tmp_path / "3.jsonl", 3, {"F": [1, 0], "G": [1, 1, 0]})
    got = acr_by_group_size(str(tmp_path), (2, 3))
    assert got[2] == pytest.approx(((1 / 3 + 1 / 2 + 1) / 3 + 3 / 4 + (0 + 1 / 3) / 2) / 3)
    # cut to 3: A 0 of C(4,3) = 4, B 1 of 4, C always; D 1 of 4, E always; step 3: G (not collapsed) only
    assert got[3] == pytest.approx(((0 + 1 / 4 + 1) / 3 + (1 / 4 + 1) / 2 + 0) / 3)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.sampled_from([0.0, 1.0, -0.25]), min_size=8, max_size=8), min_size=1, max_size=5),
       st.randoms(use_true_random=False))
def test_acr_by_group_size_is_the_same_in_any_order_the_responses_came_back(groups, rng):
    """A replay samples each group's answers again, in another order (timing decides which comes back first): the
    figure depends on each group's answers alone."""
    import tempfile

    rows = {f"p{i}": g for i, g in enumerate(groups)}
    shuffled = {k: rng.sample(v, len(v)) for k, v in rows.items()}
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        _dump(os.path.join(a, "1.jsonl"), 1, rows)
        _dump(os.path.join(b, "1.jsonl"), 1, dict(reversed(list(shuffled.items()))))
        first, again = acr_by_group_size(a, (2, 4, 8)), acr_by_group_size(b, (2, 4, 8))
    assert first == pytest.approx(again, abs=1e-12)
    # at the full group it is the ACR of the groups themselves
    assert first[8] == pytest.approx(sum(len(set(g)) == 1 for g in groups) / len(groups))


def test_passk_curve_by_hand():
    # 4 samples; problem 0 has 1 correct, problem 1 none: pass@1 = (1/4 + 0)/2, pass@2 = (1 - C(3,2)/C(4,2))/2
    got = passk_curve(np.array([1, 0]), 4)
    assert got == pytest.approx({1: 0.125, 2: (1 - 3 / 6) / 2, 4: 0.5})


def test_diff_verdict():
    assert diff_verdict([0.5, 0.52, 0.51], [0.3, 0.31, 0.29], higher=True)[0] == "held"
    assert diff_verdict([0.5, 0.52, 0.51], [0.3, 0.31, 0.29], higher=False)[0] == "did not hold"
    assert diff_verdict([0.5, 0.1, 0.9], [0.4, 0.8, 0.0], higher=True)[0] == "cannot be judged"
    verdict, why = diff_verdict([0.5], [0.3], higher=True)
    assert verdict == "cannot be judged" and "one seed" in why
    # by hand at 2 + 2 seeds: d = 0.2; each variance (ddof 1) 0.02, s.e. = sqrt(0.02/2 + 0.02/2) = 0.1414; Welch's df =
    # (0.01 + 0.01)^2 / (0.01^2/1 + 0.01^2/1) = 2. With 2 df the t quantile and tail have closed forms:
    # t_q = (2q - 1) / sqrt(2 q (1 - q)) = 4.3027 at q = 0.975, so the interval is 0.2 -/+ 0.6085;
    # P(T > t) = (1 - t / sqrt(t^2 + 2)) / 2, so p = 1 - sqrt(2) / 2 = 0.293 at t = 0.2 / 0.1414 = sqrt(2).
    verdict, why = diff_verdict([0.5, 0.7], [0.3, 0.5], higher=True)
    assert verdict == "cannot be judged"
    assert ("difference +0.200, 95 % interval [-0.408, +0.808] (Welch t-test, df 2.0, p = 0.293, 2 and 2 seeds)"
            in why)
    t = welch_test([0.5, 0.7], [0.3, 0.5])
    q = 0.975
    half = (2 * q - 1) / np.sqrt(2 * q * (1 - q)) * np.sqrt(0.02)
    assert t["df"] == pytest.approx(2.0)
    assert (t["low"], t["high"]) == pytest.approx((0.2 - half, 0.2 + half))
    assert t["p"] == pytest.approx(1 - np.sqrt(2) / 2)
    # a 2-standard-error rule would call this one (d = 0.2, s.e. 0.0816, df 4: t = 2.45); the t-test at 3 + 3 seeds
    # needs t > 2.776 and does not
    assert diff_verdict([0.4, 0.5, 0.6], [0.2, 0.3, 0.4], higher=True)[0] == "cannot be judged"
    # no spread on either side: the sign decides; equal values cannot be judged
    assert diff_verdict([0.2, 0.2], [0.0, 0.0], higher=True)[0] == "held"
    assert diff_verdict([0.0, 0.0], [0.0, 0.0], higher=True)[0] == "cannot be judged"


def test_paired_verdict_by_hand_where_welch_cannot_judge():
    # the seeds move both methods together (0.50, 0.60, 0.70); within each seed a leads by 0.020, 0.021, 0.019.
    # By hand: differences' mean 0.020, sd (ddof 1) 0.001, s.e. 0.001 / sqrt(3) = 0.000577; t_{0.975, 2} = 4.3027
    # (closed form above), so the interval is 0.020 -/+ 0.00248 = [0.0175, 0.0225]: held. Welch's test treats the
    # seeds as independent, and the seed-to-seed spread of 0.1 swallows the 0.02.
    a, b = [0.50, 0.60, 0.70], [0.48, 0.579, 0.681]
    verdict, why = diff_verdict(a, b, higher=True, paired=True)
    assert verdict == "held"
    assert "difference +0.020, 95 % interval [+0.018, +0.022] (paired t-test by seed, df 2" in why
    assert "3 seeds with shared draws" in why
    assert diff_verdict(a, b, higher=False, paired=True)[0] == "did not hold"
    assert diff_verdict(a, b, higher=True)[0] == "cannot be judged"
    # a seed whose figure was not logged drops out on both sides
    assert "2 seeds with shared draws" in diff_verdict([*a[:2], float("nan")], b, higher=True, paired=True)[1]
    with pytest.raises(ValueError, match="one value per seed"):
        diff_verdict(a, b[:2], higher=True, paired=True)


def test_paired_claim_keeps_the_seeds_both_have_and_the_claimed_side():
    # the same figures as above, keyed by seed, with a seed (9) on one side only: it drops out of the test, the
    # differences are a minus b on seeds 1-3, and the claimed side is recorded whatever the verdict
    mine, theirs = {"1": 0.50, "2": 0.60, "3": 0.70, "9": 0.1}, {"1": 0.48, "2": 0.579, "3": 0.681}
    for higher, verdict in ((True, "held"), (False, "did not hold")):
        out = paired_claim("a above b", "src", "a", mine, "b", theirs, higher)
        assert (out["verdict"], out["higher"]) == (verdict, higher)
        assert out["values"]["a"] == {"1": 0.50, "2": 0.60, "3": 0.70} and out["values"]["b"] == theirs
        assert out["values"]["difference by seed"] == pytest.approx({"1": 0.020, "2": 0.021, "3": 0.019})
    unclear = paired_claim("a above b", "src", "a", {"1": 0.5, "2": 0.1}, "b", {"1": 0.4, "2": 0.3}, False)
    assert (unclear["verdict"], unclear["higher"]) == ("cannot be judged", False)


def test_claims_pair_runs_by_seed_only_when_every_run_drew_keyed():
    runs = {"grpo": [_run([1.0] * 4, [0.50 + 0.1 * s] * 4, [0.6] * 4, (0.5, 0.7), {2: 0.6}) for s in range(3)],
            "avspo": [_run([1.0] * 4, [0.48 + 0.1 * s - 0.001 * (s == 1)] * 4, [0.6] * 4, (0.5, 0.7), {2: 0.6})
                      for s in range(3)]}
    claim = "AVSPO lowers the effective ACR against GRPO at equal rollouts"
    for method in runs:
        for seed, r in zip((4, 2, 3), runs[method]):  # seeds out of order: pairs are matched by seed
            r["seed"] = seed
    assert {c["claim"]: c for c in claims(runs, {}, kmax=4)}[claim]["verdict"] == "cannot be judged"  # Welch
    for rs in runs.values():
        for r in rs:
            r["keyed_draws"] = True
    out = {c["claim"]: c for c in claims(runs, {}, kmax=4)}[claim]
    assert out["verdict"] == "held" and "paired t-test by seed" in out["evidence"]
    # the summary keeps the figures the test was taken on: each method's per seed, and their difference by seed
    # (effective ACR 0.48 + 0.1 s - 0.001 [s = 1] against 0.50 + 0.1 s, s the run's index; seeds 4, 2, 3)
    assert out["values"]["grpo"] == pytest.approx({"4": 0.50, "2": 0.60, "3": 0.70})
    assert out["values"]["avspo"] == pytest.approx({"4": 0.48, "2": 0.579, "3": 0.68})
    assert list(out["values"]["difference by seed"]) == ["2", "3", "4"]
    assert out["values"]["difference by seed"] == pytest.approx({"2": -0.021, "3": -0.02, "4": -0.02})
    runs["avspo"] = runs["avspo"][::-1]  # the order of the lists does not matter
    assert {c["claim"]: c for c in claims(runs, {}, kmax=4)}[claim]["evidence"] == out["evidence"]
    del runs["avspo"][0]["keyed_draws"]  # one run from before the keyed draws: back to Welch
    welch = {c["claim"]: c for c in claims(runs, {}, kmax=4)}[claim]
    assert "Welch" in welch["evidence"] and "difference by seed" not in welch["values"]  # no pairs: no differences
    assert welch["values"]["grpo"] == pytest.approx({"4": 0.50, "2": 0.60, "3": 0.70})


def test_claims_without_grpo_judge_each_pair_whose_runs_are_there():
    """A comparison of GSPO and GSPO-N alone (no GRPO) still judges GSPO-N against GSPO; the claims against GRPO
    are left out, not judged against nothing."""
    runs = {"gspo": [_run([0.5] * 4, [0.5] * 4, [0.5] * 4, (0.5, 0.8), {2: 0.6, 4: 0.4}),
                     _run([0.52] * 4, [0.5] * 4, [0.5] * 4, (0.5, 0.81), {2: 0.6, 4: 0.4})],
            "gspo_n": [_run([0.5] * 4, [0.5] * 4, [0.5] * 4, (0.5, 0.6), {2: 0.6, 4: 0.4}),
                       _run([0.51] * 4, [0.5] * 4, [0.5] * 4, (0.5, 0.61), {2: 0.6, 4: 0.4})],
            "cw_grpo": [_run([0.5] * 4, [0.5] * 4, [0.5] * 4, (0.5, 0.6), {2: 0.6}) for _ in range(2)],
            "aapo": [_run([0.5] * 4, [0.2] * 4, [0.5] * 4, (0.5, 0.6), {2: 0.6}) for _ in range(2)]}
    out = {c["claim"]: c for c in claims(runs, {}, kmax=4)}
    assert out["gspo_n keeps large-k pass@4 above gspo"]["verdict"] == "did not hold"  # 0.605 vs 0.805
    assert out["gspo_n keeps entropy above gspo"]["verdict"] == "cannot be judged"
    assert not [c for c in out if "GRPO" in c or c.endswith(" grpo")]  # no GRPO runs: nothing judged against it


def test_series_picks_the_validation_key():
    steps = {0: {"val-core/arithmetic/addition/acc/mean@1": 0.5}, 1: {"critic/score/mean": 0.2},
             2: {"val-core/arithmetic/addition/acc/mean@1": 0.75, "critic/score/mean": float("nan")}}
    assert series(steps, "val") == {0: 0.5, 2: 0.75}
    assert series(steps, "critic/score/mean") == {1: 0.2}


def _run(entropy, eff, acr, passk, acr_g):
    return {"curves": {"actor/entropy": dict(enumerate(entropy)), "acr/effective_acr": dict(enumerate(eff)),
                       "acr/acr": dict(enumerate(acr)), "val": {0: 0.5, 3: 0.6}},
            "passk_end": {1: passk[0], 4: passk[1]}, "acr_by_group_size": acr_g}


def _seeded_run(acr, final, seed):
    """A run of seed ``seed`` with ACR curve ``acr`` and final held-out accuracy ``final``."""
    r = _run([1.0] * 4, [0.5] * 4, acr, (0.5, 0.7), {2: 0.6})
    r["curves"]["val"] = {0: 0.5, 3: final}
    r["seed"], r["keyed_draws"] = seed, True
    return r


def test_the_summary_keeps_each_runs_table_figures_by_seed():
    """``figures_by_seed`` holds each run's figures under the table's names, keyed by seed; their mean and std over
    seeds are the table's, figure by figure, and a figure that is not finite (an empty curve) is left out."""
    def run(seed, entropy, final, passk, s_step):
        r = _run(entropy, [0.4] * 4, [0.5, 0.6, 0.7, 0.8], passk, {2: 0.6})
        r["curves"]["val"] = {0: 0.5, 3: final}
        r["curves"]["critic/score/mean"] = {1: 0.3, 2: 0.5}
        r.update(seed=seed, keyed_draws=True, s_per_step=s_step)
        return r

    runs = {"grpo": [run(7, [1.0, 0.8, 0.6, 0.4, 0.2], 0.70, (0.55, 0.8), 2.0),
                     run(8, [1.0, 0.9, 0.8, 0.7, 0.6], 0.60, (0.45, 0.9), 3.0)]}
    runs["grpo"][1]["curves"]["val"] = {}  # no validation: its accuracies are NaN
    start = {7: {1: 0.5, 4: 0.75}, 8: {1: 0.4, 4: 0.85}}
    summary = summarise(runs, start)
    by_seed = summary["figures_by_seed"]["grpo"]
    assert set(by_seed) == set(summary["table"]["grpo"])
    # worked out by hand: entropy over the last 20 % of 5 steps is the last step's; pass@1 change against its seed
    assert by_seed["entropy (last 20%)"] == {"7": 0.2, "8": 0.6}
    assert by_seed["pass@1 change"] == pytest.approx({"7": 0.05, "8": 0.05})
    assert by_seed["pass@4 end"] == {"7": 0.8, "8": 0.9} and by_seed["s/step"] == {"7": 2.0, "8": 3.0}
    assert by_seed["ACR (mean)"] == pytest.approx({"7": 0.65, "8": 0.65})
    assert by_seed["held-out acc, end"] == {"7": 0.70}  # seed 8's NaN left out
    for name, (mean, std) in summary["table"]["grpo"].items():
        values = list(by_seed[name].values())
        assert mean == pytest.approx(np.mean(values)) and std == pytest.approx(np.std(values, ddof=1)
                                                                              if len(values) > 1 else 0.0), name


def test_the_early_acr_claim_keeps_its_name_with_too_few_runs():
    """One claim, one name: a comparison of one seed (launch.replay's) names the claim as one of many seeds does, so its
    figures by run are found under the same name."""
    runs = {"grpo": [_run([1.0] * 4, [0.5] * 4, [0.5] * 4, (0.5, 0.7), {2: 0.6})]}
    out = {c["claim"]: c for c in claims(runs, {}, kmax=4)}
    assert out[EARLY_ACR]["verdict"] == "cannot be judged" and "fewer than 4 runs" in out[EARLY_ACR]["evidence"]
    assert out[EARLY_ACR]["values"]["early ACR"] == {"grpo": {"0": 0.5}}
    many = {"grpo": [_run([1.0] * 4, [0.5] * 4, [a] * 4, (0.5, 0.7), {2: 0.6}) for a in (0.2, 0.4, 0.5, 0.7)]}
    assert EARLY_ACR in {c["claim"] for c in claims(many, {}, kmax=4)}


def test_group_size_claims_compare_each_g_trained_at_its_own():
    """000 Sec. 3.4.6, Fig. 5: GRPO at G = 8 against G = 4, and G = 4 against G = 2, on mean ACR during training and
    final held-out accuracy, seed by seed."""
    run = _seeded_run
    runs = {"grpo": [run([0.5, 0.3], 0.70, 0), run([0.4, 0.4], 0.72, 1), run([0.45, 0.35], 0.69, 2)],
            "grpo_g4": [run([0.6, 0.6], 0.66, 0), run([0.7, 0.5], 0.71, 1), run([0.62, 0.58], 0.70, 2)],
            "grpo_g2": [run([0.8, 0.8], 0.60, 0), run([0.82, 0.78], 0.61, 2), run([0.9, 0.7], 0.62, 1)]}
    out = {c["claim"]: c for c in claims(runs, {}, kmax=4)}
    lower = out["GRPO trained at G = 8 has lower ACR than at G = 4"]
    # mean ACR by seed: G=8 0.4, 0.4, 0.4; G=4 0.6, 0.6, 0.6 -> every difference -0.2, the interval the point
    assert lower["verdict"] == "held" and lower["values"]["difference by seed"] == pytest.approx(
        {"0": -0.2, "1": -0.2, "2": -0.2})
    assert out["GRPO trained at G = 4 has lower ACR than at G = 2"]["verdict"] == "held"
    # final accuracy, G=8 minus G=4 by seed: +0.04, +0.01, -0.01 (mean +0.0133, sd 0.0252, t 0.92 on 2 df)
    acc = out["GRPO trained at G = 8 ends with higher held-out accuracy than at G = 4"]
    assert acc["verdict"] == "cannot be judged" and acc["source"] == "000 Sec. 3.4.6, Fig. 5"
    # G=4 minus G=2 by seed (runs listed out of seed order are paired by seed): +0.06, +0.09, +0.09
    assert out["GRPO trained at G = 4 ends with higher held-out accuracy than at G = 2"]["values"][
        "difference by seed"] == pytest.approx({"0": 0.06, "1": 0.09, "2": 0.09})
    assert not any("G = 8" in c and "G = 2" in c for c in out)  # adjacent sizes only
    del runs["grpo_g4"]
    assert not any(c.startswith("GRPO trained at G") for c in {c["claim"] for c in claims(runs, {}, kmax=4)})


def test_split_by_solve_rate_cuts_most_solved_first_and_ties_by_lot():
    """Counts worked by hand: 7 rows into parts of 3, 2 and 2 rows (np.array_split), most solved first: rows 1 and 6
    (16), row 4 (12); then the three rows at 8 (0, 3, 5) straddle the boundary of the last two parts, so two of them
    go to the middle part and one, by the seed's lot, joins row 2 (0) in the last."""
    counts = np.array([8, 16, 0, 8, 12, 8, 16])
    parts = split_by_solve_rate(counts, 3, seed=0)
    assert parts[0].tolist() == [1, 4, 6]
    assert len(parts[1]) == 2 and set(parts[1]) < {0, 3, 5}
    assert set(parts[2]) == {2} | ({0, 3, 5} - set(parts[1]))
    assert all((np.diff(p) > 0).all() for p in parts)  # each part's rows sorted
    lots = {tuple(split_by_solve_rate(counts, 3, seed=s)[1]) for s in range(30)}
    assert lots == {(0, 3), (0, 5), (3, 5)}  # the tie is cut by the seed, not by row order
    assert [p.tolist() for p in split_by_solve_rate(counts, 3, seed=3)] == [
        p.tolist() for p in split_by_solve_rate(counts, 3, seed=3)]


@given(st.lists(st.integers(0, 16), min_size=3, max_size=60), st.integers(0, 10_000))
@settings(max_examples=60, deadline=None)
def test_split_by_solve_rate_orders_the_parts(counts, seed):
    """Property: a partition of the rows into near-equal parts, each part's counts at least the next part's."""
    counts = np.array(counts)
    parts = split_by_solve_rate(counts, 3, seed)
    assert sorted(np.concatenate(parts).tolist()) == list(range(len(counts)))
    assert max(len(p) for p in parts) - min(len(p) for p in parts) <= 1
    for a, b in zip(parts, parts[1:]):
        assert counts[a].min() >= counts[b].max()


def test_write_train_levels_writes_thirds_and_keeps_them(tmp_path, monkeypatch):
    """The RL prompts split into thirds by solve rate, written where train_file finds them, the held-out prompts
    split alike (their rows recorded), with a record of each level (rates worked by hand) that is kept while samples,
    seed, prompt counts and weights match."""
    import pandas as pd

    import rlvr_recipes.launch.compare as compare_mod

    data, model = tmp_path / "data", tmp_path / "model"
    data.mkdir(), model.mkdir()
    (model / "model.safetensors").write_bytes(b"weights one")
    pd.DataFrame({"ground_truth": [f"p{i}" for i in range(6)]}).to_parquet(data / "train.parquet")
    pd.DataFrame({"ground_truth": [f"t{i}" for i in range(4)]}).to_parquet(data / "test.parquet")
    paths = {"model": str(model), "train": str(data / "train.parquet"), "test": str(data / "test.parquet")}
    calls = []

    def fake_counts(model_dir, data_path, reward_fn, samples, max_new, seed):
        calls.append((data_path, samples, seed))
        if data_path == paths["test"]:
            return np.array([1, 4, 2, 0])  # rates .25, 1, .5, 0: easy row 1, medium row 2, hard rows 0 and 3
        return np.array([4, 0, 3, 1, 4, 2])  # of 4 samples: rates 1, 0, .75, .25, 1, .5

    monkeypatch.setattr(compare_mod, "sample_correct_counts", fake_counts)
    for method in TRAIN_LEVELS:
        with pytest.raises(ValueError, match="not written yet"):
            train_file(method, paths)
    record = write_train_levels(paths, None, 8, samples=4, seed=0)
    assert calls == [(paths["train"], 4, 0), (paths["test"], 4, 0)]
    assert train_file("grpo", paths) == paths["train"]
    rows = {lv: pd.read_parquet(level_file(paths["train"], lv))["ground_truth"].tolist()
            for lv in ("easy", "medium", "hard")}
    assert rows == {"easy": ["p0", "p4"], "medium": ["p2", "p5"], "hard": ["p1", "p3"]}
    assert train_file("grpo_medium", paths) == level_file(paths["train"], "medium")
    # expected ACR at G = 8 of the medium third: ((0.75^8 + 0.25^8) + (0.5^8 + 0.5^8)) / 2
    medium = record["levels"]["medium"]
    assert medium["prompts"] == 2 and medium["solve_rate"] == pytest.approx(0.625)
    assert (medium["min"], medium["max"]) == (0.5, 0.75)
    assert medium["expected_acr_g8"] == pytest.approx((0.75**8 + 0.25**8 + 2 * 0.5**8) / 2)
    assert record["levels"]["hard"]["expected_acr_g8"] == pytest.approx((1 + 0.75**8 + 0.25**8) / 2)
    # 4 held-out rows in thirds of 2, 1, 1: the two most solved first (rates 1 and .5), then .25, then 0
    held = record["heldout_levels"]
    assert {lv: v["rows"] for lv, v in held.items()} == {"easy": [1, 2], "medium": [0], "hard": [3]}
    assert held["easy"]["solve_rate"] == pytest.approx(0.75) and held["hard"]["expected_acr_g8"] == 1.0
    assert read_train_levels(paths, 4, 0) == record
    assert read_train_levels(paths) is None  # made from 4 samples, not the default 16
    assert write_train_levels(paths, None, 8, samples=4, seed=0) == record and len(calls) == 2  # kept
    (model / "model.safetensors").write_bytes(b"weights two")  # another warm start: rated again
    assert read_train_levels(paths, 4, 0) is None
    write_train_levels(paths, None, 8, samples=4, seed=0)
    assert len(calls) == 4
    pd.DataFrame({"ground_truth": ["t0"]}).to_parquet(data / "test.parquet")  # other held-out prompts: again
    write_train_levels(paths, None, 8, samples=4, seed=0)
    assert len(calls) == 6


def test_difficulty_claims_compare_each_level_trained_at_its_own():
    """000 Sec. 3.4.3, Fig. 2: GRPO trained on each third of the prompts; ACR higher on the hardest and on the easiest
    third than on the middle one, final held-out accuracy higher on the middle third than on either, seed by seed."""
    run = _seeded_run
    runs = {"grpo_easy": [run([0.5, 0.5], 0.60, 0), run([0.6, 0.4], 0.61, 1), run([0.45, 0.55], 0.70, 2)],
            "grpo_medium": [run([0.1, 0.1], 0.66, 0), run([0.2, 0.0], 0.67, 1), run([0.05, 0.15], 0.68, 2)],
            "grpo_hard": [run([0.8, 0.8], 0.60, 0), run([0.7, 0.9], 0.62, 1), run([0.9, 0.7], 0.61, 2)]}
    out = {c["claim"]: c for c in claims(runs, {}, kmax=4)}
    hard_acr = out["GRPO trained on the hardest third of the prompts has higher ACR than on the middle third"]
    # mean ACR by seed: hard 0.8, 0.8, 0.8; medium 0.1, 0.1, 0.1 -> every difference +0.7
    assert hard_acr["verdict"] == "held" and hard_acr["source"] == "000 Sec. 3.4.3, Fig. 2"
    assert hard_acr["values"]["difference by seed"] == pytest.approx({"0": 0.7, "1": 0.7, "2": 0.7})
    assert out["GRPO trained on the easiest third of the prompts has higher ACR than on the middle third"][
        "verdict"] == "held"
    # medium minus hard by seed: +0.06, +0.05, +0.07 (mean 0.06, sd 0.01, t 10.4 on 2 df)
    assert out["GRPO trained on the middle third of the prompts ends with higher held-out accuracy than on the hardest "
               "third"]["verdict"] == "held"
    # medium minus easy by seed: +0.06, +0.06, -0.02 (mean 0.0333, sd 0.0462, t 1.25 on 2 df)
    easy = out["GRPO trained on the middle third of the prompts ends with higher held-out accuracy than on the "
               "easiest third"]
    assert easy["verdict"] == "cannot be judged"
    assert easy["values"]["difference by seed"] == pytest.approx({"0": 0.06, "1": 0.06, "2": -0.02})
    assert not any("of the held-out prompts" in c for c in out)  # no run scored on its own third
    del runs["grpo_medium"]
    assert not any("third of the prompts" in c["claim"] for c in claims(runs, {}, kmax=4))


def test_each_level_run_is_scored_on_its_own_third_of_the_held_out_prompts():
    """score_own_levels: a level run's own-level accuracy is the mean of its greedy rights over its level's held-out
    rows; the two own-level claims of Fig. 2 compare them seed by seed (numbers worked by hand); a run without rights
    (scored before they were kept), or no held-out levels, leaves the claims out."""
    record = {"heldout_levels": {"easy": {"rows": [0, 1]}, "medium": {"rows": [2, 3]}, "hard": {"rows": [4, 5]}}}
    rights = {  # per seed, over the six held-out prompts
        "grpo_easy": [[1, 1, 0, 0, 0, 0], [1, 0, 1, 1, 0, 0], [1, 1, 1, 0, 1, 0]],  # own: 1, 0.5, 1
        "grpo_medium": [[1, 0, 1, 1, 0, 0], [0, 0, 1, 0, 1, 1], [1, 1, 1, 1, 1, 1]],  # own: 1, 0.5, 1
        "grpo_hard": [[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 0, 0], [0, 0, 0, 0, 1, 0]],  # own: 0, 0, 0.5
    }
    def unscored():
        runs = {m: [dict(_seeded_run([0.5, 0.5], 0.6, seed), heldout_greedy_right=r) for seed, r in enumerate(rs)]
                for m, rs in rights.items()}
        runs["grpo"] = [dict(_seeded_run([0.5, 0.5], 0.6, 0), heldout_greedy_right=[1] * 6)]
        return runs

    runs = unscored()
    score_own_levels(runs, record)
    assert [r["own_level_accuracy"] for r in runs["grpo_hard"]] == [0.0, 0.0, 0.5]
    assert runs["grpo_easy"][1]["heldout_level_accuracy"] == {"easy": 0.5, "medium": 1.0, "hard": 0.0}
    assert "own_level_accuracy" not in runs["grpo"][0]  # not a level method, scored on each third all the same
    assert runs["grpo"][0]["heldout_level_accuracy"] == {"easy": 1.0, "medium": 1.0, "hard": 1.0}
    out = {c["claim"]: c for c in claims(runs, {}, kmax=4)}
    mid = "GRPO trained on the middle third of the prompts ends with higher accuracy on "
    for claim, differences, source in (
            # own-level: medium minus hard by seed +1, +0.5, +0.5 (mean 0.667, sd 0.289, t 4.0 on 2 df, p 0.057);
            # medium minus easy 0, 0, 0
            ("the middle third of the held-out prompts than trained on the hardest third on the hardest third",
             {"0": 1.0, "1": 0.5, "2": 0.5}, "000 Sec. 3.4.3, Fig. 2"),
            ("the middle third of the held-out prompts than trained on the easiest third on the easiest third",
             {"0": 0.0, "1": 0.0, "2": 0.0}, "000 Sec. 3.4.3, Fig. 2"),
            # scored on the base's own third: the middle third's run on the hardest held-out third (0, 1, 1) against
            # the hardest third's (0, 0, 0.5): +0, +1, +0.5 (mean 0.5, sd 0.5, t 1.73 on 2 df); on the easiest third
            # (0.5, 0, 1) against the easiest third's (1, 0.5, 1): -0.5, -0.5, 0 (mean -0.333, t -2.0 on 2 df)
            ("the hardest third of the held-out prompts than trained on the hardest third",
             {"0": 0.0, "1": 1.0, "2": 0.5}, "000 Sec. 3.4.3, reading of Fig. 2"),
            ("the easiest third of the held-out prompts than trained on the easiest third",
             {"0": -0.5, "1": -0.5, "2": 0.0}, "000 Sec. 3.4.3, reading of Fig. 2")):
        c = out[mid + claim]
        assert c["values"]["difference by seed"] == differences, claim
        assert (c["verdict"], c["source"], c["higher"]) == ("cannot be judged", source, True), claim
    runs = unscored()
    runs["grpo_hard"][0]["heldout_greedy_right"] = None  # scored before the rights were kept
    score_own_levels(runs, record)
    assert "own_level_accuracy" not in runs["grpo_hard"][0] and "heldout_level_accuracy" not in runs["grpo_hard"][0]
    # the easy ones only: own-level and on the easiest third
    assert sum("held-out prompts than" in c["claim"] for c in claims(runs, {}, kmax=4)) == 2
    assert not any("the hardest third of the held-out" in c["claim"] for c in claims(runs, {}, kmax=4))
    for no_heldout_levels in (None, {"levels": {}}):
        runs = unscored()
        score_own_levels(runs, no_heldout_levels)
        assert not any("own_level_accuracy" in r or "heldout_level_accuracy" in r for rs in runs.values() for r in rs)


def test_the_middle_thirds_run_against_each_ends_run_on_that_ends_held_out_third():
    """The two claims that score both runs on the base's own held-out third, on four seeds whose differences were
    worked by hand: +0.1, +0.2, +0.1, +0.2 (mean 0.15, sd 0.0577, t 5.20 on 3 df, interval [+0.058, +0.242]: held)
    on the hardest third, and the same negated on the easiest (did not hold)."""
    third = {"grpo_medium": ([0.4, 0.5, 0.4, 0.5], [0.9, 0.8, 0.9, 0.8]),  # (hardest third, easiest third) by seed
             "grpo_hard": ([0.3, 0.3, 0.3, 0.3], [0.5, 0.5, 0.5, 0.5]),
             "grpo_easy": ([0.2, 0.2, 0.2, 0.2], [1.0, 1.0, 1.0, 1.0])}
    runs = {m: [dict(_seeded_run([0.5, 0.5], 0.6, seed),
                     heldout_level_accuracy={"easy": e[seed], "medium": 0.5, "hard": h[seed]}) for seed in range(4)]
            for m, (h, e) in third.items()}  # no own_level_accuracy: these claims read the base's third alone
    out = {c["claim"]: c for c in claims(runs, {}, kmax=4)}
    on_hard = out["GRPO trained on the middle third of the prompts ends with higher accuracy on the hardest third of "
                  "the held-out prompts than trained on the hardest third"]
    assert on_hard["values"]["difference by seed"] == pytest.approx({"0": 0.1, "1": 0.2, "2": 0.1, "3": 0.2})
    assert on_hard["verdict"] == "held" and "[+0.058, +0.242]" in on_hard["evidence"]
    on_easy = out["GRPO trained on the middle third of the prompts ends with higher accuracy on the easiest third of "
                  "the held-out prompts than trained on the easiest third"]
    assert on_easy["values"]["difference by seed"] == pytest.approx({"0": -0.1, "1": -0.2, "2": -0.1, "3": -0.2})
    assert on_easy["verdict"] == "did not hold" and "[-0.242, -0.058]" in on_easy["evidence"]


def test_the_summary_keeps_each_runs_accuracy_on_each_held_out_third():
    """summarise: ``heldout_level_accuracy`` by method, level and seed where runs were scored on each third (a run
    without it, scored before, is left out); none in a summary of runs that were not."""
    def run(seed, levels):
        r = _seeded_run([0.5, 0.5], 0.6, seed)
        r["curves"]["critic/score/mean"] = {1: 0.5}
        r.update(s_per_step=1.0, **({"heldout_level_accuracy": levels} if levels else {}))
        return r

    start = {s: {1: 0.4, 4: 0.6} for s in (3, 4)}
    runs = {"grpo_medium": [run(3, {"easy": 0.9, "hard": 0.2}), run(4, None)], "grpo": [run(3, {"easy": 1.0})]}
    assert summarise(runs, start)["heldout_level_accuracy"] == {"grpo_medium": {"easy": {"3": 0.9}, "hard": {"3": 0.2}},
                                                                "grpo": {"easy": {"3": 1.0}}}
    del runs["grpo_medium"][0]["heldout_level_accuracy"], runs["grpo"][0]["heldout_level_accuracy"]
    assert "heldout_level_accuracy" not in summarise(runs, start)


def test_claims_read_the_runs():
    runs = {
        "grpo": [_run([1.0, 0.8, 0.6, 0.4], [0.5] * 4, [0.5] * 4, (0.5, 0.7), {2: 0.6, 4: 0.4}),
                 _run([1.0, 0.8, 0.6, 0.42], [0.52] * 4, [0.5] * 4, (0.5, 0.71), {2: 0.62, 4: 0.41})],
        "avspo": [_run([1.0] * 4, [0.2] * 4, [0.5] * 4, (0.5, 0.7), {2: 0.6, 4: 0.4}),
                  _run([1.0] * 4, [0.21] * 4, [0.5] * 4, (0.5, 0.7), {2: 0.6, 4: 0.42})],
    }
    out = {c["claim"]: c for c in claims(runs, {}, kmax=4)}
    assert out["ACR falls as the group size G grows"]["verdict"] == "held"
    assert out["ACR falls as the group size G grows"]["values"] == {
        "G=2": {"grpo": {"0": 0.6, "1": 0.62}, "avspo": {"0": 0.6, "1": 0.6}},
        "G=4": {"grpo": {"0": 0.4, "1": 0.41}, "avspo": {"0": 0.4, "1": 0.42}}}
    assert out["AVSPO lowers the effective ACR against GRPO at equal rollouts"]["verdict"] == "held"
    runs["avspo"][0]["curves"]["acr/effective_acr"] = dict(enumerate([0.9] * 4))
    runs["avspo"][1]["curves"]["acr/effective_acr"] = dict(enumerate([0.91] * 4))
    out = {c["claim"]: c for c in claims(runs, {}, kmax=4)}
    assert out["AVSPO lowers the effective ACR against GRPO at equal rollouts"]["verdict"] == "did not hold"
    # each exploration claim is judged against the baseline its paper compares with: GSPO-N against GSPO
    runs["gspo"] = [_run([0.5] * 4, [0.5] * 4, [0.5] * 4, (0.5, 0.6), {2: 0.6}),
                    _run([0.52] * 4, [0.5] * 4, [0.5] * 4, (0.5, 0.61), {2: 0.6})]
    runs["gspo_n"] = [_run([0.9] * 4, [0.5] * 4, [0.5] * 4, (0.5, 0.8), {2: 0.6}),
                      _run([0.91] * 4, [0.5] * 4, [0.5] * 4, (0.5, 0.81), {2: 0.6})]
    out = {c["claim"]: c for c in claims(runs, {}, kmax=4)}
    assert out["gspo_n keeps entropy above gspo"]["verdict"] == "held"
    assert out["gspo_n keeps large-k pass@4 above gspo"]["verdict"] == "held"
    assert "grpo_n keeps entropy above grpo" not in out  # no grpo_n runs
    # W-REINFORCE's claim is 001 Table 2's, on large-k pass@k only (the table shows no entropy): pass@4 0.60/0.61
    # vs GRPO's 0.70/0.71
    runs["w_reinforce"] = [_run([0.9] * 4, [0.5] * 4, [0.5] * 4, (0.5, 0.60), {2: 0.6}),
                           _run([0.9] * 4, [0.5] * 4, [0.5] * 4, (0.5, 0.61), {2: 0.6})]
    out = {c["claim"]: c for c in claims(runs, {}, kmax=4)}
    assert out["w_reinforce keeps large-k pass@4 above grpo"]["verdict"] == "did not hold"
    assert out["w_reinforce keeps large-k pass@4 above grpo"]["source"] == "001 Table 2 (W-REINFORCE row)"
    assert "w_reinforce keeps entropy above grpo" not in out
    # A-GRAE on Dr.GRPO (001 Table 2) is judged on pass@1 and on large-k pass@k against Dr.GRPO, not GRPO, and on no
    # entropy: pass@1 0.55/0.56 vs 0.45/0.46 (held), pass@4 0.70/0.71 vs 0.70/0.71 (no difference)
    runs["drgrpo"] = [_run([0.5] * 4, [0.5] * 4, [0.5] * 4, (0.45, 0.70), {2: 0.6}),
                      _run([0.5] * 4, [0.5] * 4, [0.5] * 4, (0.46, 0.71), {2: 0.6})]
    runs["agrae_drgrpo"] = [_run([0.5] * 4, [0.5] * 4, [0.5] * 4, (0.55, 0.70), {2: 0.6}),
                            _run([0.5] * 4, [0.5] * 4, [0.5] * 4, (0.56, 0.71), {2: 0.6})]
    out = {c["claim"]: c for c in claims(runs, {}, kmax=4)}
    assert out["agrae_drgrpo ends with pass@1 above drgrpo"]["verdict"] == "held"
    assert "0.555 vs 0.455" in out["agrae_drgrpo ends with pass@1 above drgrpo"]["evidence"]
    assert out["agrae_drgrpo keeps large-k pass@4 above drgrpo"]["verdict"] == "cannot be judged"
    assert out["agrae_drgrpo ends with pass@1 above drgrpo"]["source"] == "001 Table 2 (Dr.GRPO + A-GRAE row)"
    assert "agrae_drgrpo keeps entropy above drgrpo" not in out
    assert "w_reinforce ends with pass@1 above grpo" not in out  # W-REINFORCE's claim is on large k only
    assert "agrae_dapo_001 ends with pass@1 above dapo_001" not in out  # no runs of that pair
    # 001's Control Experiment I: the positive-dominant control is claimed below GRPO (entropy, large-k pass@k), the
    # negative-dominant above it. GRPO's entropy over the last 20 % of its 4 steps is 0.40/0.42 and its pass@4
    # 0.70/0.71. Positive-dominant's 0.20/0.23 (differences -0.20, -0.19) and 0.60/0.62 (-0.10, -0.09) lie below
    # (held); negative-dominant's entropy 0.20/0.23 does not lie above (did not hold), its pass@4 0.70/0.71 is
    # GRPO's (every difference 0: cannot be judged), and its pass@1 0.60/0.61 against GRPO's 0.50/0.50 (differences
    # +0.10, +0.11: mean +0.105, sd 0.00707, t 21 on 1 df, above 12.71) lies above (held)
    runs["agrae_pos_dominant"] = [_run([0.20] * 4, [0.5] * 4, [0.5] * 4, (0.5, 0.60), {2: 0.6}),
                                  _run([0.23] * 4, [0.5] * 4, [0.5] * 4, (0.5, 0.62), {2: 0.6})]
    runs["agrae_neg_dominant"] = [_run([0.20] * 4, [0.5] * 4, [0.5] * 4, (0.60, 0.70), {2: 0.6}),
                                  _run([0.23] * 4, [0.5] * 4, [0.5] * 4, (0.61, 0.71), {2: 0.6})]
    out = {c["claim"]: c for c in claims(runs, {}, kmax=4)}
    pos, neg = "agrae_pos_dominant", "agrae_neg_dominant"
    assert out[f"{pos} ends with entropy below grpo"]["verdict"] == "held"
    assert out[f"{pos} ends with entropy below grpo"]["higher"] is False
    assert out[f"{pos} ends with large-k pass@4 below grpo"]["verdict"] == "held"
    assert out[f"{neg} keeps entropy above grpo"]["verdict"] == "did not hold"
    assert out[f"{neg} keeps large-k pass@4 above grpo"]["verdict"] == "cannot be judged"
    assert out[f"{neg} ends with pass@1 above grpo"]["verdict"] == "held"
    assert "0.605 vs 0.500" in out[f"{neg} ends with pass@1 above grpo"]["evidence"]
    assert f"{pos} ends with pass@1 above grpo" not in out  # 001 claims no pass@1 of positive-dominant against GRPO
    assert out[f"{neg} keeps entropy above grpo"]["source"] == "001 Sec. 4.2, Fig. 2-3 (Table 1 negative-dominant)"
    assert f"{pos} keeps entropy above grpo" not in out and f"{neg} ends with entropy below grpo" not in out


def small_countdown_build(out: str) -> None:
    """A small build of the lab's countdown task: the lab's model, 100 warm-start steps instead of 850, 64 training
    and 32 held-out prompts, 8 reference rewards a prompt for AAPO's groups of 8 (the lab's build takes 4-7 min)."""
    from rlvr_recipes.launch.cpu_run import compose, embedded_task
    from rlvr_recipes.reward.reference import reference_settings
    from rlvr_recipes.tiny_task.build import COUNTDOWN_MODEL, build
    from rlvr_recipes.tiny_task.countdown import CountdownSpec

    spec = CountdownSpec(train_size=64, test_size=32, warm_start_size=1000, warm_start_steps=100)
    settings = reference_settings(compose(list(embedded_task("countdown").overrides)))
    build(out, COUNTDOWN_MODEL, spec, warm_start_target=0.3, ref_samples=8, ref_settings=settings)


@pytest.fixture(scope="module")
def small_countdown(tmp_path_factory) -> str:
    """The small countdown build of :func:`small_countdown_build`, made once for this module's e2e tests."""
    out = str(tmp_path_factory.mktemp("small_countdown") / "tiny")
    small_countdown_build(out)
    return out


@pytest.mark.e2e
def test_compare_two_methods_one_seed_on_the_countdown_task(tmp_path, small_countdown):
    """One real comparison on verl's trainer: GRPO and AAPO (which reads the build's reference cache), 1 seed x 2
    steps, on a small countdown build that ``--tiny-dir`` uses as it is, the two runs at once in two lanes (each a
    Ray cluster of its own); then resuming, a resume with other settings, and ``--report-only``."""
    out = tmp_path / "cmp"
    cmd = [sys.executable, "-m", "rlvr_recipes.launch.compare", "--methods", "grpo,aapo", "--seeds", "1", "--steps", "2",
           "--passk-samples", "4", "--task", "countdown", "--tiny-dir", small_countdown, "--out", str(out),
           "--jobs", "2"]
    # the lanes' Ray clusters shut down with them: one left behind would hold the output pipe open past the timeout
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "a build with its own settings, used as it is" in proc.stdout, proc.stdout[-2000:]
    assert "[compare] run 2/2: aapo seed 0: done" in proc.stdout
    assert "[compare] run 1/2: grpo seed 0: training 2 steps, lane" in proc.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["table"]) == {"grpo", "aapo"}
    assert (summary["setup"]["jobs"], summary["setup"]["trained_runs"]) == (2, 2)
    record = json.loads((out / TRAINING_FILE).read_text())  # what a later --report-only names
    assert {k: record[k] for k in ("jobs", "trained_runs", "interrupted")} == {"jobs": 2, "trained_runs": 2,
                                                                              "interrupted": False}
    for method in ("grpo", "aapo"):
        run_dir = out / "runs" / method / "seed0"
        done = json.loads((run_dir / "done.json").read_text())
        assert set(done["passk_end"]) == {"1", "2", "4"}
        assert 0.0 <= done["passk_end"]["1"] <= done["passk_end"]["4"] <= 1.0
        steps = read_metrics(str(run_dir / "metrics.jsonl"))
        assert sorted(s for s, d in steps.items() if "critic/score/mean" in d) == [1, 2]
        data = {k: v for s in sorted(steps) for k, v in steps[s].items()}
        assert any(k.startswith("val-core/countdown/") for k in data), sorted(data)[:20]
        assert 0.0 <= data["critic/score/mean"] <= 1.0
        assert data["response_length/mean"] >= 10  # countdown answers, not 3-token sums
        # each held-out prompt's final greedy answer and pass@k count kept (what a run is scored on a part by): the
        # greedy answers' accuracy is the trainer's own last validation
        right, counts = done["heldout_greedy_right"], done["heldout_correct_counts"]
        assert len(right) == len(counts) > 0 and set(right) <= {0, 1} and all(0 <= c <= 4 for c in counts)
        key = val_key(data)
        assert np.mean(right) == pytest.approx(steps[max(s for s, d in steps.items() if key in d)][key])
    assert "aapo/margin_mean" in data  # AAPO drew its reference rewards from the cache
    # keyed draws: at step 1 both methods hold the initial model, so one seed gives them the same answers (here from
    # two Ray clusters at once)
    step1 = {m: Counter((r["input"], r["output"]) for r in map(json.loads, (out / "runs" / m / "seed0" / "rollouts" /
                                                                               "1.jsonl").read_text().splitlines()))
             for m in ("grpo", "aapo")}
    assert step1["grpo"] == step1["aapo"] and sum(step1["grpo"].values()) >= 8
    assert all(json.loads((out / "runs" / m / "seed0" / "done.json").read_text())["keyed_draws"] for m in step1)
    report = (out / "report.md").read_text()
    assert "the paired t-test by seed" in report and "This command trained 2 runs 2 at a time" in report
    assert report.index("![curves]") < report.index("| method |") < report.index("| claim |")
    assert "| method | pass@1 change | pass@4 change |" in report  # against the initial model, paired by seed
    for png in ("curves.png", "passk.png", "acr_vs_group_size.png"):
        assert (out / png).stat().st_size > 10_000
    # resumable: a second call repeats no run
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and proc.stdout.count("finished earlier, kept") == 2, proc.stdout[-2000:]
    # a resume with other settings stops before any run instead of mixing them in one report
    other = list(cmd)
    other[other.index("--steps") + 1] = "3"
    proc = subprocess.run(other, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2 and "kept run has steps=2, this comparison 3" in proc.stderr, proc.stderr[-2000:]
    # --report-only trains nothing and reports on the finished runs, naming those it lacks (seed 1 here)
    partial = list(cmd)
    partial[partial.index("--seeds") + 1] = "2"
    proc = subprocess.run([*partial, "--report-only"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "training" not in proc.stdout
    report = (out / "report.md").read_text()
    assert "**Partial report**: 2 run(s) not finished yet: grpo seed 1, aapo seed 1." in report
    # ... and goes on naming the command that trained the runs (the resume above), not itself
    setup = json.loads((out / "summary.json").read_text())["setup"]
    assert "--report-only" not in setup["command"].split() and "--report-only" in setup["report_command"].split()
    assert "rewritten from its finished runs by" in report
    assert not (out / "runs" / "grpo" / "seed1").exists()


def _interrupt_after(cmd: list[str], marker: str, timeout_s: float, how: str = "ctrl-c", env: dict | None = None
                     ) -> tuple[subprocess.Popen, list[str], float]:
    """Start ``cmd`` as a terminal's foreground job (a process group of its own, SIGINT at its default even when
    this test runs in a background job, which ignores it) and, once a line of its output holds ``marker``, stop it:
    ``how="ctrl-c"`` sends SIGINT to the whole group, as a terminal does; ``how="sigterm"`` sends SIGTERM to the
    command's process alone, as ``kill PID`` or ``timeout`` do. Returns the process, its output lines so far (the
    reading goes on) and the time of the signal."""
    import signal
    import threading

    def as_foreground_job() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.setsid()

    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=as_foreground_job)
    lines: list[str] = []
    seen = threading.Event()

    def read() -> None:
        for line in proc.stdout:
            lines.append(line)
            if marker in line:
                seen.set()

    threading.Thread(target=read, daemon=True).start()
    if not seen.wait(timeout_s):
        os.killpg(proc.pid, signal.SIGKILL)
        raise AssertionError(f"no {marker!r} line within {timeout_s:.0f} s: " + "".join(lines)[-3000:])
    if how == "ctrl-c":
        os.killpg(proc.pid, signal.SIGINT)
    else:
        os.kill(proc.pid, signal.SIGTERM)
    return proc, lines, time.monotonic()


@pytest.mark.e2e
@pytest.mark.parametrize("how,jobs", [("ctrl-c", "1"), ("sigterm", "1"), ("sigterm", "2")])
def test_an_interrupt_stops_a_comparison_at_once(tmp_path, small_countdown, how, jobs):
    """Ctrl-C (SIGINT to the process group) in the middle of a run trained in the command's own Ray cluster, and
    SIGTERM to the command alone in the middle of two runs trained in two lanes: the command ends within 45 s with
    the shell's code for an interrupt (130), says how many runs are kept and that the same command resumes, prints no
    traceback of its own, and leaves no process behind (the lanes and the Ray clusters ran in its process group).
    Before the fix, Ctrl-C took 64-66 s (each run waited a minute for the rollout servers that its interrupted
    TaskRunner still held), and SIGTERM ended the command at once but left both lanes training on, and then idle
    with their Ray clusters, 10 minutes later still."""
    import signal
    import uuid

    from tests.test_e2e_fault import RUN_TAG_ENV, _tagged

    out = tmp_path / "cmp"
    cmd = [sys.executable, "-m", "rlvr_recipes.launch.compare", "--methods", "grpo,aapo", "--seeds", "1", "--steps",
           "30", "--passk-samples", "4", "--task", "countdown", "--tiny-dir", small_countdown, "--out", str(out),
           "--jobs", jobs]
    tag = uuid.uuid4().hex  # every process the command starts inherits it, in its group or not
    proc, lines, t_signal = _interrupt_after(cmd, "step:2 ", timeout_s=600, how=how,
                                             env={**os.environ, RUN_TAG_ENV: tag})
    try:
        code = proc.wait(timeout=45)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise AssertionError(f"still running 45 s after {how}: " + "".join(lines)[-3000:])
    print(f"ended {time.monotonic() - t_signal:.1f} s after {how}")
    time.sleep(1)  # the reader has the last lines
    printed = "".join(lines)
    assert code == 130, printed[-3000:]
    assert f"2 runs finished and are kept in {out}; the same command resumes" in printed, printed[-3000:]
    assert "0 of 2 runs" in printed
    assert 'compare.py", line' not in printed, printed[-3000:]  # no traceback of the command itself
    assert not (out / "runs" / "grpo" / "seed0" / "done.json").exists()
    record = json.loads((out / TRAINING_FILE).read_text())  # written though no summary is: --report-only names it
    assert (record["jobs"], record["trained_runs"], record["interrupted"]) == (int(jobs), 0, True), record
    assert record["command"].split()[-2:] == ["--jobs", jobs]
    time.sleep(3)
    with pytest.raises(ProcessLookupError):  # nothing of the group is left: no lane, no raylet, no Ray worker
        os.killpg(proc.pid, 0)
    assert _tagged(tag) == []  # nor a process of the command's outside its group (a Ray worker may sit in its own)


def test_kept_run_must_match_the_comparison_settings(tmp_path):
    done = tmp_path / "done.json"
    settings = {"task": "countdown", "steps": 50, "passk_samples": 64, "overrides": ["a=1"], "method": "grpo", "seed": 0}
    check_kept_run(str(done), settings)  # not there yet: a run to do
    done.write_text(json.dumps({"seconds": 1.0, "settings": settings}))
    check_kept_run(str(done), settings)
    with pytest.raises(ValueError, match=r"done.json: kept run has steps=50, this comparison 12"):
        check_kept_run(str(done), {**settings, "steps": 12})
    with pytest.raises(ValueError, match=r"overrides=\['a=1'\], this comparison \['a=2'\]"):
        check_kept_run(str(done), {**settings, "overrides": ["a=2"]})
    done.write_text(json.dumps({"seconds": 1.0}))  # an older run without its settings
    with pytest.raises(ValueError, match="without its settings"):
        check_kept_run(str(done), settings)


def test_a_replication_runs_the_seeds_after_the_first_comparisons(tmp_path, capsys):
    specs = run_specs(["grpo", "cw_grpo"], range(5, 7), 50, str(tmp_path))
    assert [(s.method, s.seed) for s in specs] == [("grpo", 5), ("cw_grpo", 5), ("grpo", 6), ("cw_grpo", 6)]
    assert specs[3].out == os.path.join(str(tmp_path), "runs", "cw_grpo", "seed6")
    assert specs[3].final_model.endswith(os.path.join("seed6", "checkpoints", "global_step_50", "actor", "huggingface"))
    assert _seed_range({"seeds": 5, "first_seed": 5}) == " (seeds 5-9)"
    assert _seed_range({"seeds": 5, "first_seed": 0}) == _seed_range({"seeds": 5}) == ""
    assert main(["--first-seed", "-1", "--out", str(tmp_path)]) == 2
    assert "--first-seed must be >= 0, got -1" in capsys.readouterr().err


def test_passk_change_is_taken_against_each_seeds_own_start():
    runs = [{"seed": 0, "passk_end": {1: 0.59, 64: 0.86}}, {"seed": 1, "passk_end": {1: 0.50, 64: 0.80}}]
    start = {0: {1: 0.44, 64: 0.89}, 1: {1: 0.40, 64: 0.88}}
    assert passk_change(runs, start, 1) == pytest.approx([0.15, 0.10])


def test_paired_change_by_hand():
    # changes 0.1, 0.2, 0.3: mean 0.2, sd 0.1, se 0.1 / sqrt(3); t = 2 sqrt(3) on 2 df, where the two-sided p is
    # 1 - t / sqrt(t^2 + 2) = 1 - sqrt(12 / 14), and t_{0.975, 2} = 4.302653
    c = paired_change([0.1, 0.2, 0.3])
    assert c["mean"] == pytest.approx(0.2)
    assert c["p"] == pytest.approx(1 - math.sqrt(12 / 14))
    half = 4.302653 * 0.1 / math.sqrt(3)
    assert (c["low"], c["high"]) == pytest.approx((0.2 - half, 0.2 + half), abs=1e-6)
    assert c["by_seed"] == pytest.approx([0.1, 0.2, 0.3])
    assert c["se"] == pytest.approx(0.1 / math.sqrt(3))  # sd 0.1 (ddof 1) over sqrt(3)
    one = paired_change([-0.05])  # one seed: no noise estimate
    assert one["mean"] == pytest.approx(-0.05) and math.isnan(one["low"]) and math.isnan(one["p"])
    assert math.isnan(one["se"])
    equal = paired_change([0.02, 0.02])
    assert (equal["low"], equal["high"], equal["p"]) == pytest.approx((0.02, 0.02, 0.0))
    assert paired_change([0.0, 0.0])["p"] == 1.0
    assert paired_change([float("nan"), 0.1, 0.3])["by_seed"] == pytest.approx([0.1, 0.3])
    assert math.isnan(paired_change([])["mean"])


def test_change_table_pairs_each_run_with_its_own_seeds_start():
    runs = [{"seed": 0, "passk_end": {1: 0.59, 64: 0.86}}, {"seed": 1, "passk_end": {1: 0.50, 64: 0.80}}]
    start = {0: {1: 0.44, 64: 0.89}, 1: {1: 0.40, 64: 0.88}}
    assert passk_change(runs, start, 64) == pytest.approx([-0.03, -0.08])
    lines = _change_table({"grpo": {f"pass@{k}": paired_change(passk_change(runs, start, k)) for k in (1, 64)}})
    assert "| method | pass@1 change | pass@64 change |" in lines
    row = next(line for line in lines if line.startswith("| grpo |"))
    assert "+0.125 [" in row and "(+0.150, +0.100)" in row and "-0.055 [" in row and "(-0.030, -0.080)" in row
    one_seed = _change_table({"grpo": {"pass@1": paired_change([0.15])}})
    assert "| grpo | +0.150 (+0.150) |" in one_seed
    assert _change_table({}) == []


def test_levels_table_gives_each_runs_accuracy_on_each_held_out_third():
    """The report's per-third table: mean and std (ddof 1) over seeds, worked by hand, each third's prompt count in
    its head; a run scored at one seed shows its figure alone; nothing when no run was scored on the thirds."""
    by_level = {"grpo_medium": {"easy": {"1": 0.9, "2": 1.0}, "medium": {"1": 0.8, "2": 0.6},
                                "hard": {"1": 0.3, "2": 0.2}},
                "grpo_hard": {"easy": {"1": 0.85}, "hard": {"1": 0.25}}}
    heldout = {"easy": {"prompts": 67}, "medium": {"prompts": 67}, "hard": {"prompts": 66}}
    lines = _levels_table(by_level, heldout)
    assert "| method | easy third (67) | medium third (67) | hard third (66) |" in lines
    # 0.9, 1.0: mean 0.95, std 0.0707; 0.8, 0.6: 0.7, 0.1414; 0.3, 0.2: 0.25, 0.0707
    assert "| grpo_medium | 0.950 +/- 0.071 | 0.700 +/- 0.141 | 0.250 +/- 0.071 |" in lines
    assert "| grpo_hard | 0.850 | n/a | 0.250 |" in lines
    assert "| method | easy third | medium third | hard third |" in _levels_table(by_level, {})
    assert _levels_table({}, heldout) == []


def test_early_acr_claim_is_pearsons_test():
    # six runs whose early ACR and final held-out accuracy fall on a line of negative slope: r = -1, p = 0
    def run(early, final):
        r = _run([0.5] * 10, [0.5] * 10, [early] * 2 + [0.3] * 8, (0.5, 0.6), {2: 0.6})
        r["curves"]["val"] = {0: 0.5, 9: final}
        return r

    runs = {"grpo": [run(0.1 * i, 0.9 - 0.1 * i) for i in range(6)]}
    out = {c["claim"]: c for c in claims(runs, {}, kmax=4)}
    early = out["early ACR (first 20 % of steps) predicts final held-out accuracy (negative correlation)"]
    assert early["verdict"] == "held" and "r = -1.00 over 6 runs" in early["evidence"]
    # each run's pair of figures is kept (runs without a seed are named by their index)
    assert early["values"]["early ACR"]["grpo"] == pytest.approx({str(i): 0.1 * i for i in range(6)})
    assert early["values"]["final held-out accuracy"]["grpo"] == pytest.approx({str(i): 0.9 - 0.1 * i
                                                                                 for i in range(6)})
    # the same runs with the accuracy rising with early ACR: the opposite sign
    runs = {"grpo": [run(0.1 * i, 0.3 + 0.1 * i) for i in range(6)]}
    early = {c["claim"]: c for c in claims(runs, {}, kmax=4)}[early["claim"]]
    assert early["verdict"] == "did not hold"
    # no relation: r = 0 (early 0.1, 0.2, 0.3, 0.4 against final 0.5, 0.7, 0.7, 0.5), p = 1
    runs = {"grpo": [run(e, f) for e, f in ((0.1, 0.5), (0.2, 0.7), (0.3, 0.7), (0.4, 0.5))]}
    early = {c["claim"]: c for c in claims(runs, {}, kmax=4)}[early["claim"]]
    assert early["verdict"] == "cannot be judged" and "r = 0.00 over 4 runs, p = 1" in early["evidence"]


def test_publish_copies_the_report_between_the_markers(tmp_path):
    out = tmp_path / "runs" / "lab"
    out.mkdir(parents=True)
    (out / "report.md").write_text("# Methods side by side\n\n![curves](curves.png)\n\n## Final figures\n\n| a |\n")
    (out / "curves.png").write_bytes(b"png")
    doc = tmp_path / "docs" / "lab.md"
    doc.parent.mkdir()
    doc.write_text(f"# Lab\n\n## The comparison\n\nkept\n\n{PUBLISH_START}\nold report\n{PUBLISH_END}\n\n## After\n")
    img_dir = publish_report(str(out), str(doc))
    assert img_dir == str(tmp_path / "docs" / "img" / "lab")
    assert (tmp_path / "docs" / "img" / "lab" / "curves.png").read_bytes() == b"png"
    assert doc.read_text() == (f"# Lab\n\n## The comparison\n\nkept\n\n{PUBLISH_START}\n\n### Methods side by side\n\n"
                               f"![curves](img/lab/curves.png)\n\n#### Final figures\n\n| a |\n\n{PUBLISH_END}\n\n"
                               "## After\n")
    # publishing again gives the same document
    before = doc.read_text()
    publish_report(str(out), str(doc))
    assert doc.read_text() == before


def test_publish_needs_the_markers_and_is_checked_before_any_run(tmp_path, capsys):
    from rlvr_recipes.launch.compare import main

    doc = tmp_path / "lab.md"
    doc.write_text("# Lab without markers\n")
    with pytest.raises(ValueError, match="report.md: no report to publish"):
        publish_report(str(tmp_path), str(doc))  # the report is looked for first
    (tmp_path / "report.md").write_text("# r\n")
    with pytest.raises(ValueError, match="lab.md: needs the line"):
        publish_report(str(tmp_path), str(doc))
    # the command refuses before it builds or trains anything
    assert main(["--methods", "grpo", "--seeds", "1", "--steps", "1", "--out", str(tmp_path / "cmp"),
                 "--publish", str(doc)]) == 2
    assert "lab.md: needs the line" in capsys.readouterr().err
    assert not (tmp_path / "cmp").exists()
    # as it does for a doc that a later step publishes into (make lab), which it only checks
    assert main(["--methods", "grpo", "--seeds", "1", "--steps", "1", "--out", str(tmp_path / "cmp"),
                 "--check-publish", str(doc)]) == 2
    assert "lab.md: needs the line" in capsys.readouterr().err
    assert not (tmp_path / "cmp").exists()


def test_each_method_of_the_lab_gets_its_own_colour():
    from rlvr_recipes.launch.compare import method_colors

    lab = ("grpo,avspo,agrae,aapo,cw_grpo,grpo_n,grpo_4mb,grpo_n_4mb,clip_cov,gspo,gspo_n,dapo,drgrpo,w_reinforce,"
           "dapo_001,agrae_dapo_001,agrae_drgrpo")
    colors = method_colors(lab.split(","))
    assert len({tuple(c) for c in colors.values()}) == 17  # tab10 alone repeats its 1st colour at the 11th
    assert colors["gspo_n"] == (0.0, 0.0, 0.0)


#: what torch's TCPStore raised in a worker of a lab run (its remote traceback is in the Ray task error's text)
PORT_TAKEN = ("The server socket has failed to listen on any local network address. port: 44989, useIpv6: false, "
              "code: -98, name: EADDRINUSE, message: address already in use")


def test_a_run_that_lost_its_rendezvous_port_is_run_again_after_a_clean():
    def wrapped() -> Exception:  # as compare sees it: the port error is the cause of the error raised to it
        try:
            raise OSError(PORT_TAKEN)
        except OSError as exc:
            try:
                raise RuntimeError("ray::TaskRunnerV1.run() failed") from exc
            except RuntimeError as outer:
                return outer

    assert lost_port_race(wrapped()) and lost_port_race(RuntimeError(PORT_TAKEN))
    assert not lost_port_race(RuntimeError("CUDA out of memory")) and not lost_port_race(ValueError("bad key"))

    calls, cleans, said = [], [], []

    def train():
        calls.append(len(cleans))
        if len(calls) < 3:
            raise wrapped()
        return "config"

    assert run_with_port_retry(train, lambda: cleans.append(1), said.append, "run 5/9", tries=3) == "config"
    assert calls == [0, 1, 2]  # each try after the clean of the one before
    assert len(said) == 2 and all("EADDRINUSE" in s and "run 5/9" in s for s in said)

    # the last try's error is raised; any other error at once, with nothing cleaned
    calls.clear(), cleans.clear()
    with pytest.raises(RuntimeError, match="TaskRunnerV1"):
        run_with_port_retry(train, lambda: cleans.append(1), said.append, "run", tries=2)
    assert calls == [0, 1]
    cleans.clear()

    def broken():
        raise ValueError("bad key")

    with pytest.raises(ValueError, match="bad key"):
        run_with_port_retry(broken, lambda: cleans.append(1), said.append, "run")
    assert cleans == []


def test_run_then_release_releases_after_a_run_or_a_failure_but_not_after_an_interrupt():
    released: list[int] = []
    run_then_release(lambda: None, lambda: released.append(1))
    assert released == [1]

    def fails() -> None:
        raise RuntimeError("TaskRunner died")

    with pytest.raises(RuntimeError, match="TaskRunner died"):  # the next run or a retry needs the cluster
        run_then_release(fails, lambda: released.append(2))
    assert released == [1, 2]
    for interrupt in (KeyboardInterrupt, SystemExit):
        def interrupted() -> None:
            raise interrupt()

        with pytest.raises(interrupt):  # the process is ending: no minute's wait for the servers
            run_then_release(interrupted, lambda: released.append(3))
    assert released == [1, 2]


def test_lanes_stop_handing_out_runs_after_a_failure(tmp_path, capfd):
    """Three runs in two lanes, every one failing at its config (an unknown method, before Ray starts): the first two
    start at once, the failure is raised naming its run, and the third never starts."""
    plan = RunPlan(paths={}, steps=1, extra=(), estimators=("grpo",), settings={}, metrics_root=str(tmp_path / "m"),
                   reward_path="", reward_name="", passk_samples=4, max_new=8)
    todo = [(f"[compare] run {i}/3: nosuch{i} seed 0", RunSpec(f"nosuch{i}", 0, 1, str(tmp_path / f"r{i}")))
            for i in (1, 2, 3)]
    said: list[str] = []
    import signal

    sigterm = signal.getsignal(signal.SIGTERM)
    with pytest.raises(RuntimeError, match=r"nosuch[12] seed 0 failed: ValueError: unknown method 'nosuch[12]'"):
        run_in_lanes(todo, plan, 2, said.append, 0.0)
    assert signal.getsignal(signal.SIGTERM) is sigterm  # its SIGTERM handler lasts while the lanes run
    printed = capfd.readouterr().out
    assert "run 1/3: nosuch1 seed 0: training 1 steps, lane" in printed
    assert "run 2/3: nosuch2 seed 0: training 1 steps, lane" in printed
    assert "nosuch3" not in printed and not any("nosuch3" in line for line in said)
    assert sum("failed; no new run starts" in line for line in said) == 2
    assert not any((tmp_path / f"r{i}" / "done.json").exists() for i in (1, 2, 3))


@pytest.mark.parametrize("jobs,threads,share", [(1, 2, 2), (2, 2, 1), (3, 2, 1), (2, 8, 4), (3, 8, 2), (0, 2, 2)])
def test_lane_torch_threads_is_the_lanes_share_of_the_cores(jobs, threads, share):
    from rlvr_recipes.launch.compare import lane_torch_threads

    assert lane_torch_threads(jobs, threads) == share


def test_a_lane_scores_with_its_share_of_torchs_threads(monkeypatch, tmp_path):
    """Two lanes scoring at once with torch's 2 threads each took 2-3 times as long as with 1 each (docs/lab.md,
    "pass@k scoring in lanes"): a lane's process sets its share before its first run."""
    import multiprocessing.util

    import torch

    from rlvr_recipes.launch import compare as compare_module
    from rlvr_recipes.launch import cpu_run

    started, threads = [], []
    monkeypatch.setattr(cpu_run, "start_cluster_runs", started.append)
    monkeypatch.setattr(multiprocessing.util, "Finalize", lambda *args, **kwargs: None)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)
    monkeypatch.setattr(torch, "set_num_threads", threads.append)
    compare_module._lane_start(str(tmp_path), 2)
    assert started == [str(tmp_path)] and threads == [1]


def test_stop_lanes_sends_sigterm_only_to_lanes_still_running_after_the_grace(monkeypatch):
    from concurrent.futures import Future

    import rlvr_recipes.launch.compare as compare_module

    class Lane:
        def __init__(self, alive: bool) -> None:
            self.alive, self.terminated = alive, False

        def is_alive(self) -> bool:
            return self.alive

        def terminate(self) -> None:
            self.terminated = True

    class Pool:
        def __init__(self) -> None:
            self._processes = {1: Lane(True), 2: Lane(False)}

    monkeypatch.setattr(compare_module, "LANE_STOP_GRACE_S", 0.2)
    ended = Future()
    ended.set_exception(KeyboardInterrupt())  # a lane that the terminal's Ctrl-C reached
    pool = Pool()
    _stop_lanes(pool, [ended])
    assert not any(lane.terminated for lane in pool._processes.values())
    t0 = time.monotonic()
    _stop_lanes(pool, [ended, Future()])  # a run goes on: the signal reached this process alone
    assert time.monotonic() - t0 >= 0.2
    assert pool._processes[1].terminated and not pool._processes[2].terminated  # a lane already gone is left
    with pytest.raises(KeyboardInterrupt, match="signal 15"):
        _interrupted_by_signal(15, None)


def test_a_second_interrupt_ends_the_grace_at_once_and_stops_the_lanes(monkeypatch):
    """``kill PID`` twice, or Ctrl-C pressed again: the second signal, raised inside the grace's wait, must not leave
    it without a SIGTERM to the lanes (the pool's shutdown would then wait for runs that train on)."""
    import signal
    import threading
    from concurrent.futures import Future

    import rlvr_recipes.launch.compare as compare_module

    class Lane:
        terminated = False

        def is_alive(self) -> bool:
            return True

        def terminate(self) -> None:
            self.terminated = True

    class Pool:
        _processes = {1: Lane()}

    monkeypatch.setattr(compare_module, "LANE_STOP_GRACE_S", 60.0)
    second = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGTERM))
    with compare_module._sigterm_as_interrupt():
        t0 = time.monotonic()
        second.start()
        try:
            _stop_lanes(Pool(), [Future()])  # a run goes on
        except KeyboardInterrupt:
            pytest.fail("the second interrupt left the grace without stopping the lanes")
        took = time.monotonic() - t0
    second.join()
    assert Pool._processes[1].terminated
    assert 0.3 <= took < 10, took  # not the 60 s grace


def test_lanes_sentence_only_when_runs_were_trained_in_lanes():
    assert _lanes_sentence({"jobs": 1, "trained_runs": 10, "trained_wall_s": 600.0, "steps": 50}) == ""
    assert _lanes_sentence({"jobs": 2, "trained_runs": 1, "trained_wall_s": 600.0, "steps": 50}) == ""
    assert _lanes_sentence({"steps": 50}) == ""  # a summary written before lanes
    # 930 s over 4 runs x 50 steps: 4.65 s a step
    assert _lanes_sentence({"jobs": 2, "trained_runs": 4, "trained_wall_s": 930.0, "steps": 50}) == (
        " This command trained 4 runs 2 at a time (one Ray cluster per lane) in 15.5 min of wall time: 4.65 s per "
        "step trained, each run's start-up and pass@k scoring included.")


def test_a_report_only_report_keeps_the_training_record_of_the_summary_before(tmp_path):
    trained = {"command": "python -m rlvr_recipes.launch.compare --methods gspo,gspo_n --jobs 2", "jobs": 2,
               "trained_runs": 10, "trained_wall_s": 2436.2, "steps": 50}
    report = {"command": "python -m rlvr_recipes.launch.compare --methods gspo,gspo_n --report-only", "jobs": 1,
              "trained_runs": 0, "trained_wall_s": 0.0, "steps": 50, "runs_s": 4380.5}
    path = tmp_path / "summary.json"
    assert keep_training_record(report, str(tmp_path)) == report  # no summary before: nothing to keep
    path.write_text(json.dumps({"setup": trained}))
    kept = keep_training_record(report, str(tmp_path))
    assert kept == {**report, "command": trained["command"], "jobs": 2, "trained_runs": 10, "trained_wall_s": 2436.2,
                    "report_command": report["command"]}
    # a second --report-only keeps the same record (the summary before now holds it)
    path.write_text(json.dumps({"setup": kept}))
    assert keep_training_record(report, str(tmp_path)) == kept
    # a summary written by --report-only before this change recorded no training: nothing to keep
    path.write_text(json.dumps({"setup": report}))
    assert keep_training_record(report, str(tmp_path)) == report
    path.write_text("{not json")
    assert keep_training_record(report, str(tmp_path)) == report


def test_an_interrupted_comparisons_training_record_is_what_report_only_names(tmp_path, monkeypatch):
    """An interrupted comparison writes no summary, only its training record (training.json): the report-only report
    names that command, says it was interrupted and gives no cost per step for its wall time."""
    specs = [RunSpec("grpo", s, 50, str(tmp_path / "runs" / "grpo" / f"seed{s}")) for s in (50, 51, 52)]
    for spec in specs[:2]:  # two of the three runs finished before the interrupt
        os.makedirs(spec.out)
        (tmp_path / "runs" / "grpo" / f"seed{spec.seed}" / "done.json").write_text("{}")
    todo = [(f"run {i}", spec) for i, spec in enumerate(specs, 1)]
    monkeypatch.setattr(sys, "argv", ["compare.py", "--methods", "grpo", "--seeds", "3", "--jobs", "2"])
    record = training_record(2, todo, 3725.04, interrupted=True)
    assert record == {"command": "python -m rlvr_recipes.launch.compare --methods grpo --seeds 3 --jobs 2", "jobs": 2,
                      "trained_runs": 2, "trained_wall_s": 3725.0, "interrupted": True}
    assert training_record(2, todo, 10.0)["trained_runs"] == 3  # a command that finished trained all of its runs
    write_training_record(str(tmp_path), record)
    assert json.loads((tmp_path / TRAINING_FILE).read_text()) == record
    report = {"command": "python -m rlvr_recipes.launch.compare --methods grpo --seeds 3 --report-only", "jobs": 1,
              "trained_runs": 0, "trained_wall_s": 0.0, "interrupted": False, "steps": 50}
    # the record wins over a summary's setup (here one written by a report-only command before the record existed)
    (tmp_path / "summary.json").write_text(json.dumps({"setup": report}))
    kept = keep_training_record(report, str(tmp_path))
    assert kept == {**report, **record, "report_command": report["command"]}
    assert _lanes_sentence(kept) == (" This command trained 2 runs 2 at a time (one Ray cluster per lane) before it "
                                     "was interrupted.")
    # a record written by a report-only command (never written so, but read with care) is not a training record
    (tmp_path / TRAINING_FILE).write_text(json.dumps(report))
    assert keep_training_record(report, str(tmp_path)) == report


def test_a_run_left_without_done_json_is_trained_again_from_an_empty_folder(monkeypatch, tmp_path):
    """A comparison interrupted while a run was scored leaves the run's folder with its final checkpoint and metrics
    but no ``done.json``; the resume trains that run from an empty folder (verl would resume from the checkpoint, and
    the metrics of that tail would replace the run's)."""
    from rlvr_recipes.launch import cpu_run
    from rlvr_recipes.launch.compare import train_and_score

    spec = RunSpec("grpo", 55, 50, str(tmp_path / "runs" / "grpo" / "seed55"))
    os.makedirs(os.path.join(spec.out, "checkpoints", "global_step_50"))
    (tmp_path / "runs" / "grpo" / "seed55" / "metrics.jsonl").write_text('{"step": 1, "data": {}}\n')
    seen = []

    def cluster_run(method, run_dir, *args, **kwargs):
        seen.append((method, run_dir, os.path.exists(run_dir)))
        raise OSError("stop here")

    monkeypatch.setattr(cpu_run, "cluster_run", cluster_run)
    plan = RunPlan(paths={}, steps=50, extra=(), estimators=(), settings={}, metrics_root=str(tmp_path / "metrics"),
                   reward_path="", reward_name="", passk_samples=4, max_new=32)
    with pytest.raises(RuntimeError, match="grpo seed 55 failed: OSError: stop here"):
        train_and_score(spec, plan)
    assert seen == [("grpo", spec.out, False)]


def test_the_recorded_command_is_the_one_main_was_given(monkeypatch):
    """launch.replay calls main with arguments of its own: the summary records those, not the replay's command line."""
    import rlvr_recipes.launch.compare as compare_module

    seen = []
    monkeypatch.setattr(compare_module, "compare", lambda *a, **k: seen.append(compare_module.this_command()))
    monkeypatch.setattr(sys, "argv", ["replay.py", "benchmarks/x_summary.json", "--train", "50"])
    assert main(["--methods", "grpo", "--seeds", "1", "--first-seed", "50", "--out", "runs/r"]) == 0
    assert seen == ["python -m rlvr_recipes.launch.compare --methods grpo --seeds 1 --first-seed 50 --out runs/r"]
    # outside main, the process's own command line
    assert compare_module.this_command() == ("python -m rlvr_recipes.launch.compare benchmarks/x_summary.json "
                                             "--train 50")
    # an argument with a space or a quote is quoted, so that the line runs again as given
    monkeypatch.setattr(sys, "argv", ["compare.py", "--out", "runs/my lab", "--methods", "grpo'x"])
    line = compare_module.this_command()
    assert shlex.split(line)[3:] == ["--out", "runs/my lab", "--methods", "grpo'x"]
