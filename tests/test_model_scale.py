"""benchmarks/lab_model_scale.py: GRPO at several model sizes taken together (000 Sec. 3.4.4, Fig. 3)."""

from __future__ import annotations

import json
import os

import pytest
from scipy import stats

from benchmarks.lab_model_scale import main, model_words, run_label, scale_claims, size_label, tiny_dir_of
from rlvr_recipes.launch.compare import EARLY_ACR, RunSpec
from rlvr_recipes.launch.cpu_run import embedded_task

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SMALL, BIG = "grpo_0.27M", "grpo_1.1M"


def _figures(acr, acr_std, acc):
    return {"ACR (mean)": dict(zip("012", acr)), "ACR std over steps": dict(zip("012", acr_std)),
            "held-out acc, end": dict(zip("012", acc))}


def test_scale_claims_worked_by_hand():
    """Three seeds. ACR, larger minus smaller: -0.2, -0.1, -0.2, mean -1/6, sd 0.0577, se 1/30, t = -5.0 on 2 df;
    the interval -1/6 -/+ 4.303 / 30 = [-0.310, -0.023] lies below 0, where the claim puts it: held. Accuracy: +0.1,
    0, +0.1, t = 2.0, interval [-0.077, +0.210]: cannot be judged. ACR's std equal at every seed: no difference, p 1.
    Early ACR over the six runs falls on a line of negative slope with final accuracy: r = -1."""
    by_seed = {SMALL: _figures((0.6, 0.5, 0.7), (0.1, 0.1, 0.1), (0.4, 0.6, 0.6)),
               BIG: _figures((0.4, 0.4, 0.5), (0.1, 0.1, 0.1), (0.5, 0.6, 0.7))}
    early = {"early ACR": {SMALL: {"0": 0.9, "1": 0.8, "2": 0.7}, BIG: {"0": 0.6, "1": 0.5, "2": 0.4}},
             "final held-out accuracy": {SMALL: {"0": 0.1, "1": 0.2, "2": 0.3}, BIG: {"0": 0.4, "1": 0.5, "2": 0.6}}}
    out = {c["claim"]: c for c in scale_claims(by_seed, early)}
    assert list(out) == ["GRPO on the 1.1M-parameter model has lower ACR than on the 0.27M-parameter model",
                         "GRPO on the 1.1M-parameter model keeps ACR more stable (smaller std over steps) than on the "
                         "0.27M-parameter model",
                         "GRPO on the 1.1M-parameter model ends with higher held-out accuracy than on the "
                         "0.27M-parameter model", EARLY_ACR]
    acr, std, acc, corr = out.values()
    assert acr["verdict"] == "held" and acr["higher"] is False and acr["source"] == "000 Sec. 3.4.4, Fig. 3"
    assert acr["values"]["difference by seed"] == pytest.approx({"0": -0.2, "1": -0.1, "2": -0.2})
    half = stats.t.ppf(0.975, 2) / 30
    assert f"[{-1 / 6 - half:+.3f}, {-1 / 6 + half:+.3f}]" == "[-0.310, -0.023]" in acr["evidence"]
    assert f"p = {2 * stats.t.sf(5.0, 2):.3g}" in acr["evidence"]
    assert acc["verdict"] == "cannot be judged" and acc["higher"] is True and "[-0.077, +0.210]" in acc["evidence"]
    assert std["verdict"] == "cannot be judged" and "p = 1" in std["evidence"]
    assert corr["verdict"] == "held" and "r = -1.00 over 6 runs" in corr["evidence"]


def test_scale_claims_three_sizes_pair_each_with_the_next_smaller():
    mid = "grpo_0.6M"
    by_seed = {SMALL: _figures((0.6,) * 3, (0.1,) * 3, (0.4,) * 3), mid: _figures((0.5,) * 3, (0.1,) * 3, (0.5,) * 3),
               BIG: _figures((0.4,) * 3, (0.1,) * 3, (0.6,) * 3)}
    out = scale_claims(by_seed, {"early ACR": {}, "final held-out accuracy": {}})
    assert [c["claim"].split(" model ")[0] for c in out[:-1]] == ["GRPO on the 0.6M-parameter"] * 3 + [
        "GRPO on the 1.1M-parameter"] * 3
    assert [c["claim"].rsplit(" on the ", 1)[1] for c in out[:-1]] == ["0.27M-parameter model"] * 3 + [
        "0.6M-parameter model"] * 3
    assert out[-1]["verdict"] == "cannot be judged" and "fewer than 4 runs" in out[-1]["evidence"]


@pytest.mark.parametrize("params, label", [(272_256, "0.27M"), (1_062_528, "1.1M"), (4_250_000, "4.2M"),
                                           (65_000, "0.065M"), (12_000_000, "12M")])
def test_size_label(params, label):
    assert size_label(params) == label


def test_a_build_with_another_warm_start_is_named_by_its_steps():
    assert run_label(2_380_224, 850) == "grpo_2.4M"  # the task recipe's 850 steps: the size alone
    assert run_label(2_380_224, 400) == "grpo_2.4M_ws400"
    assert model_words("grpo_2.4M") == "2.4M-parameter model"
    assert model_words("grpo_2.4M_ws400") == "2.4M-parameter model (400 warm-start steps)"
    by_seed = {label: {"ACR (mean)": {"0": 0.5, "1": 0.6}, "ACR std over steps": {"0": 0.1, "1": 0.1},
                       "held-out acc, end": {"0": 0.6, "1": 0.7}} for label in ("grpo_1.1M", "grpo_2.4M_ws400")}
    claim = scale_claims(by_seed, {"early ACR": {}, "final held-out accuracy": {}})[0]["claim"]
    assert claim == ("GRPO on the 2.4M-parameter model (400 warm-start steps) has lower ACR than on the "
                     "1.1M-parameter model")


def test_build_refuses_a_warm_start_of_no_steps(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["build", "--hidden-size", "64", "--out", str(tmp_path / "b"), "--warm-start-steps", "0"])
    assert exc.value.code == 2 and "--warm-start-steps 0: give 1 or more" in capsys.readouterr().err
    assert not (tmp_path / "b").exists()


def test_tiny_dir_of_reads_the_comparison_command(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert tiny_dir_of({"command": "python -m rlvr_recipes.launch.compare --task countdown --tiny-dir runs/t_h64 "
                                   "--out runs/x"}) == "runs/t_h64"
    assert tiny_dir_of({"command": "python -m rlvr_recipes.launch.compare --tiny-dir=runs/a --out b"}) == "runs/a"
    default = tiny_dir_of({"task": "countdown", "command": "python -m rlvr_recipes.launch.compare --task countdown"})
    assert default == embedded_task("countdown").tiny_dir  # not under the working folder: as it is
    monkeypatch.chdir(ROOT)  # under it: as the lab's commands name it
    assert tiny_dir_of({"task": "countdown", "command": "python -m rlvr_recipes.launch.compare"}) \
        == "runs/tiny_countdown"


def test_combine_names_a_comparison_without_its_summary(tmp_path, capsys):
    (tmp_path / "a").mkdir()
    assert main(["combine", str(tmp_path / "a"), str(tmp_path / "b"), "--json", str(tmp_path / "out.json")]) == 2
    assert f"{tmp_path / 'a' / 'summary.json'}: no summary" in capsys.readouterr().err


def test_combine_names_a_comparison_on_a_build_of_another_task(tmp_path, capsys):
    from rlvr_recipes.tiny_task.build import TaskSpec, TinyModelSpec, build_settings

    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "summary.json").write_text(json.dumps({"setup": {
            "methods": ["grpo"], "command": f"python -m rlvr_recipes.launch.compare --tiny-dir {tmp_path / 'tiny'}"}}))
    (tmp_path / "tiny").mkdir()
    (tmp_path / "tiny" / "build.json").write_text(json.dumps(build_settings(TinyModelSpec(), TaskSpec())))
    assert main(["combine", str(tmp_path / "a"), str(tmp_path / "b"), "--json", str(tmp_path / "out.json")]) == 2
    assert f"{tmp_path / 'tiny' / 'build.json'}: a build of the addition task, not of countdown" \
        in capsys.readouterr().err
    assert not (tmp_path / "out.json").exists()


def _made_up_comparison(tmp_path, name: str, steps: int, acr: tuple, acc: tuple, early: tuple, seeds: int = 3):
    """A comparison folder of GRPO alone as ``launch.compare`` leaves it, as far as ``combine`` reads it: its
    ``summary.json`` (figures by seed, the early-ACR claim's values, table, pass@k at the start and its change) on a
    countdown build warm-started for ``steps`` steps. Its runs are made up in the tests that use it."""
    from rlvr_recipes.tiny_task.build import TinyModelSpec, build_settings
    from rlvr_recipes.tiny_task.countdown import CountdownSpec

    tiny, out = tmp_path / f"tiny_{name}", tmp_path / name
    tiny.mkdir()
    out.mkdir()
    (tiny / "build.json").write_text(json.dumps(build_settings(TinyModelSpec(), CountdownSpec(
        warm_start_steps=steps))))
    by_seed = {str(s): dict(zip(("acr", "acc", "early"), values))
               for s, values in enumerate(zip(acr, acc, early))}
    (out / "summary.json").write_text(json.dumps({
        "setup": {"task": "countdown", "seeds": seeds, "first_seed": 0, "steps": 4, "passk_samples": 8,
                  "methods": ["grpo"], "machine": "made up", "runs_s": [1.0], "median_step_s": 0.5,
                  "command": f"python -m rlvr_recipes.launch.compare --methods grpo --tiny-dir {tiny} --out {out}"},
        "table": {"grpo": {"ACR (mean)": [sum(acr) / seeds, 0.0]}},
        "figures_by_seed": {"grpo": {"ACR (mean)": {s: v["acr"] for s, v in by_seed.items()},
                                     "held-out acc, end": {s: v["acc"] for s, v in by_seed.items()}}},
        "claims": [{"claim": EARLY_ACR, "values": {
            "early ACR": {"grpo": {s: v["early"] for s, v in by_seed.items()}},
            "final held-out accuracy": {"grpo": {s: v["acc"] for s, v in by_seed.items()}}}}],
        "start_passk": {"1": [0.3, 0.0]}, "change_from_start": {"grpo": {"pass@1": {"mean": 0.1}}},
        "paired_by_seed": True}))
    return str(out)


def test_combine_takes_made_up_comparisons_together_smallest_model_first(tmp_path, monkeypatch):
    """``combine`` end to end on three made-up comparisons given largest first: it orders them by parameters, then by
    warm-start steps (the same size from two warm starts is two models, the shorter warm start first), names each by
    :func:`run_label`, adds each run's ACR std over its steps (population std of its curve: steps 0.2, 0.4 give 0.1) and
    the means of its logged groups all right and all wrong, pairs each model with the next one below it, and takes every
    run into the early-ACR claim. ACR, the 850-step model minus the 400-step one: +0.04, +0.06, +0.05, mean 0.05, sd
    0.01, t = 8.66 on 2 df, p 0.013, against the claim: did not hold. Accuracy, the 1.1M model minus the 0.27M (850
    steps): +0.1, 0, +0.1, t = 2.0: cannot be judged."""
    import benchmarks.lab_model_scale as lab_model_scale

    big = _made_up_comparison(tmp_path, "big", 400, (0.5, 0.6, 0.7), (0.6, 0.6, 0.7), (0.2, 0.3, 0.4))
    small = _made_up_comparison(tmp_path, "small", 850, (0.6, 0.7, 0.8), (0.5, 0.6, 0.6), (0.3, 0.4, 0.5))
    small_ws = _made_up_comparison(tmp_path, "small_ws", 400, (0.56, 0.64, 0.75), (0.5, 0.5, 0.6), (0.1, 0.2, 0.3))
    params = {str(tmp_path / "tiny_big" / "model"): 1_062_528, str(tmp_path / "tiny_small" / "model"): 269_120,
              str(tmp_path / "tiny_small_ws" / "model"): 269_120}
    monkeypatch.setattr(lab_model_scale, "parameter_count", lambda model_dir: params[model_dir])
    monkeypatch.setattr(lab_model_scale, "finished_runs", lambda out: {
        "grpo": [RunSpec("grpo", seed, 2, os.path.join(out, "runs", "grpo", f"seed{seed}")) for seed in range(3)]})

    def made_up_run(spec, extra_curves):  # the curves combine reads: ACR, and the groups all right and all wrong
        curves = {"acr/acr": {1: 0.2 + 0.1 * spec.seed, 2: 0.4 + 0.3 * spec.seed},
                  "acr/all_correct_frac": {1: 0.1, 2: 0.3 + 0.1 * spec.seed}, "acr/all_wrong_frac": {1: 0.2, 2: 0.2}}
        assert set(extra_curves) == {"acr/all_correct_frac", "acr/all_wrong_frac"}
        return {"seed": spec.seed, "curves": curves}

    monkeypatch.setattr(lab_model_scale, "load_run", made_up_run)
    combined, runs = lab_model_scale.combine([big, small, small_ws], "python combine ...")
    labels = ["grpo_0.27M_ws400", "grpo_0.27M", "grpo_1.1M_ws400"]
    assert combined["setup"]["methods"] == labels and list(runs) == labels
    models = combined["setup"]["models"]
    assert [(models[label]["comparison"], models[label]["parameters"], models[label]["warm_start_steps"])
            for label in labels] == [(small_ws, 269_120, 400), (small, 269_120, 850), (big, 1_062_528, 400)]
    assert models["grpo_1.1M_ws400"]["tiny_dir"] == str(tmp_path / "tiny_big")
    assert combined["setup"]["command"] == "python combine ..." and combined["setup"]["seeds"] == 3
    # each run's ACR std over its two steps: half the gap between them, 0.1 + 0.1 * seed
    assert combined["figures_by_seed"]["grpo_0.27M"]["ACR std over steps"] == pytest.approx(
        {"0": 0.1, "1": 0.2, "2": 0.3})
    # each run's groups all right and all wrong, mean over its steps: (0.1 + 0.3 + 0.1 * seed) / 2, and 0.2
    assert combined["figures_by_seed"]["grpo_1.1M_ws400"]["groups all right (mean)"] == pytest.approx(
        {"0": 0.2, "1": 0.25, "2": 0.3})
    assert combined["figures_by_seed"]["grpo_1.1M_ws400"]["groups all wrong (mean)"] == pytest.approx(
        {"0": 0.2, "1": 0.2, "2": 0.2})
    claims = {c["claim"]: c for c in combined["claims"]}
    assert len(claims) == 7 and list(claims)[-1] == EARLY_ACR
    acr = claims["GRPO on the 0.27M-parameter model has lower ACR than on the 0.27M-parameter model (400 warm-start "
                 "steps)"]
    assert acr["values"]["difference by seed"] == pytest.approx({"0": 0.04, "1": 0.06, "2": 0.05})
    assert acr["verdict"] == "did not hold" and f"p = {2 * stats.t.sf(0.05 / (0.01 / 3 ** 0.5), 2):.3g}" \
        in acr["evidence"]
    acc = claims["GRPO on the 1.1M-parameter model (400 warm-start steps) ends with higher held-out accuracy than "
                 "on the 0.27M-parameter model"]
    assert acc["values"]["difference by seed"] == pytest.approx({"0": 0.1, "1": 0.0, "2": 0.1})
    assert acc["verdict"] == "cannot be judged"
    assert "over 9 runs" in claims[EARLY_ACR]["evidence"]
    assert combined["table"]["grpo_0.27M"] == {"ACR (mean)": [pytest.approx(0.7), 0.0]}


def test_combine_names_a_comparison_of_other_seeds_and_two_of_one_model(tmp_path, monkeypatch):
    import benchmarks.lab_model_scale as lab_model_scale

    monkeypatch.setattr(lab_model_scale, "parameter_count", lambda model_dir: 269_120)
    monkeypatch.setattr(lab_model_scale, "finished_runs", lambda out: {"grpo": []})
    a = _made_up_comparison(tmp_path, "a", 850, (0.5,) * 3, (0.5,) * 3, (0.5,) * 3)
    b = _made_up_comparison(tmp_path, "b", 850, (0.5,) * 3, (0.5,) * 3, (0.5,) * 3)
    with pytest.raises(ValueError, match="two comparisons of one model size and warm start: "):
        lab_model_scale.combine([a, b], "c")
    summary = json.loads(open(os.path.join(b, "summary.json")).read())
    summary["setup"]["first_seed"] = 8
    open(os.path.join(b, "summary.json"), "w").write(json.dumps(summary))
    with pytest.raises(ValueError, match=f"{b}: first_seed 8, where {a} has 0"):
        lab_model_scale.combine([a, b], "c")
