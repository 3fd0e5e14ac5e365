"""The CPU lab's countdown task as the launchers see it: the task option, the overrides that fit the config to it,
and the measured properties of a warm start (rlvr_recipes/launch/task_properties.py), worked by hand."""

from __future__ import annotations

import json
import math
import os
from typing import Any, Optional

import numpy as np
import pytest

from rlvr_recipes.launch.task_properties import properties, verdicts
from tests.conftest import make_recipe

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: how a lab target of the Makefile puts its summary in the committed one's place (launch.replay --publish)
PUBLISH = ["python", "-m", "rlvr_recipes.launch.replay", "--publish"]


def test_properties_by_hand():
    # 4 prompts x 64 samples: never right, half right, always right, right once
    props = properties(np.array([0, 32, 64, 1]), 64, {"tokens": [10, 20], "distinct_correct": [0, 3, 1, 2]})
    assert props["pass@1"] == pytest.approx((0 + 0.5 + 1 + 1 / 64) / 4)
    assert props["pass@k"][64] == pytest.approx(3 / 4)  # every prompt with a correct sample
    assert props["pass@64-pass@1"] == pytest.approx(0.75 - 1.515625 / 4)
    assert props["spread_0.05_0.95"] == 0.25 and props["below_0.05"] == 0.5 and props["above_0.95"] == 0.25
    assert props["at_0"] == 0.25 and props["at_1"] == 0.25
    acr = (1 + 2 * 0.5**8 + 1 + ((1 / 64) ** 8 + (63 / 64) ** 8)) / 4  # p^8 + (1-p)^8 per prompt
    assert props["expected_acr_g8"] == pytest.approx(acr)
    assert props["mean_response_tokens"] == 15.0 and props["distinct_correct_median"] == 1.5
    met = verdicts(props)
    assert met == {"spread >= 0.40, both ends populated": False, "ACR at G=8 in [0.3, 0.7]": False,
                   "pass@64 - pass@1 >= 0.25": True, "responses >= 10 tokens": True}


def test_both_ends_must_be_populated():
    p = np.array([32] * 6 + [0] * 4)  # spread 0.6, nothing above 0.95
    props = properties(p, 64, {"tokens": [12], "distinct_correct": [1]})
    assert props["spread_0.05_0.95"] == 0.6
    assert not verdicts(props)["spread >= 0.40, both ends populated"]
    props = properties(np.append(p, 64), 64, {"tokens": [12], "distinct_correct": [1]})
    assert verdicts(props)["spread >= 0.40, both ends populated"]


def test_countdown_task_overrides_compose_into_the_cpu_config():
    from rlvr_recipes.launch.cpu_run import TASKS, compose, embedded_task
    from rlvr_recipes.reward.reference import reference_settings

    settings = reference_settings(compose(list(embedded_task("countdown").overrides)))
    assert settings["reward_path"] == "pkg://rlvr_recipes.reward.countdown"
    assert settings["max_response_length"] == 32
    # the task's overrides come after the method's: DAPO's buffer fits countdown answers, not addition's 3 tokens
    from rlvr_recipes.launch.cpu_run import BASELINES

    config = compose([*BASELINES["agrae_dapo"], *TASKS["countdown"].overrides])
    assert config.reward.reward_kwargs.overlong_buffer_cfg.len == 8
    assert TASKS["addition"].overrides == ()
    with pytest.raises(ValueError, match="unknown task 'sudoku'.*addition, countdown"):
        embedded_task("sudoku")


def test_lab_runs_001_table_2_pairs_as_001_ran_them():
    """001 Table 2's "+ A-GRAE" rows in the lab: each differs from its base in the estimator alone; DAPO as 001 ran
    it (App. C.2): no dynamic sampling, binary reward (no overlong shaping), DAPO's clip-higher and token-mean."""
    from omegaconf import OmegaConf

    from rlvr_recipes.launch.cpu_run import BASELINES, TASKS, compose

    def config(method):
        return OmegaConf.to_container(compose([*BASELINES[method], *TASKS["countdown"].overrides]), resolve=False)

    for method, base in (("agrae_dapo_001", "dapo_001"), ("agrae_drgrpo", "drgrpo")):
        a, b = config(method), config(base)
        assert (a["algorithm"].pop("adv_estimator"), b["algorithm"].pop("adv_estimator")) == ("agrae", "grpo")
        assert a == b, method
    dapo = config("dapo_001")
    actor = dapo["actor_rollout_ref"]["actor"]
    assert dapo["algorithm"]["filter_groups"]["enable"] is False
    assert dapo["reward"]["reward_kwargs"]["overlong_buffer_cfg"]["enable"] is False
    assert (actor["clip_ratio_low"], actor["clip_ratio_high"], actor["loss_agg_mode"]) == (0.2, 0.28, "token-mean")
    assert actor["use_kl_loss"] is False
    assert config("dapo")["algorithm"]["filter_groups"]["enable"] is True  # the lab's DAPO keeps DAPO's own sampling


def test_cli_rejects_an_unknown_task(capsys):
    from rlvr_recipes.launch.cpu_run import main

    with pytest.raises(SystemExit):
        main(["train", "grpo", "--task", "sudoku"])
    assert "invalid choice: 'sudoku'" in capsys.readouterr().err


def test_countdown_build_warm_starts_caches_reference_rewards_and_is_reused(tmp_path):
    import pandas as pd

    from rlvr_recipes.launch.cpu_run import compose, embedded_task
    from rlvr_recipes.reward.reference import reference_settings
    from rlvr_recipes.tiny_task.build import COUNTDOWN_MODEL, build
    from rlvr_recipes.tiny_task.countdown import CountdownSpec

    spec = CountdownSpec(train_size=24, test_size=8, warm_start_size=16, limit=20, warm_start_steps=3)
    settings = reference_settings(compose(list(embedded_task("countdown").overrides)))
    paths = build(str(tmp_path / "cd"), COUNTDOWN_MODEL, spec, warm_start_target=0.3, ref_samples=2,
                  ref_settings=settings)
    train = pd.read_parquet(paths["train"])
    assert len(train) == 24 and len(pd.read_parquet(paths["test"])) == 8
    assert all(len(info["ref_rewards"]) == 2 for info in train["extra_info"])
    with open(os.path.join(paths["model"], "warm_start.json")) as f:
        assert json.load(f)["steps"] == 3  # trained: no warm start ships for these settings
    # a second request with the same settings (a tuple among them) reuses the build
    before = os.path.getmtime(os.path.join(paths["model"], "model.safetensors"))
    assert build(str(tmp_path / "cd"), COUNTDOWN_MODEL, spec, warm_start_target=0.3, ref_samples=2,
                 ref_settings=settings) == paths
    assert os.path.getmtime(os.path.join(paths["model"], "model.safetensors")) == before


@pytest.mark.parametrize("task", ["countdown", "addition"])
def test_default_build_loads_the_shipped_warm_start_instead_of_training(task, tmp_path, monkeypatch):
    """Each task's default warm start ships with the package: a default build copies it in (its SHA-256 checked and
    stamped), trains nothing, and is the build of its record (held-out greedy accuracy: 0.520 for the countdown task,
    0.58 for the addition task's 100 prompts; one prompt either way for a CPU whose kernels break a near tie
    otherwise); a build that trained its own is replaced by it."""
    import pandas as pd

    import rlvr_recipes.tiny_task.warmstart as warmstart
    from rlvr_recipes.launch.compare import greedy_accuracy
    from rlvr_recipes.launch.cpu_run import compose, default_build, embedded_task
    from rlvr_recipes.reward.reference import reference_settings, settings_reward
    from rlvr_recipes.tiny_task.build import build, file_sha256, shipped_warm_start

    model, spec, target = default_build(task)
    trainer = "countdown_warm_start" if task == "countdown" else "warm_start"
    record = shipped_warm_start(model, spec, target)
    assert record is not None and file_sha256(record["path"]) == record["sha256"]
    assert os.path.basename(record["path"]) == f"{task}.safetensors"
    trained = []

    def train_instead(model_dir, spec, **kwargs):
        trained.append(model_dir)
        return {"steps": 0, "train_examples": 0, "loss": float("nan"), "seconds": 0.0, "test_acc_sampled_before": 0.0,
                "test_acc_sampled": 0.0, "test_acc_greedy": 0.0}

    monkeypatch.setattr(warmstart, trainer, train_instead)
    out = str(tmp_path / task)
    paths = build(out, model, spec, warm_start_target=target, ref_samples=0, train_warm_start=True)
    assert trained == [paths["model"]]
    paths = build(out, model, spec, warm_start_target=target, ref_samples=0)
    assert trained == [paths["model"]], "the default build trained its warm start instead of loading the shipped one"
    assert file_sha256(os.path.join(paths["model"], "model.safetensors")) == record["sha256"]
    with open(os.path.join(paths["model"], "warm_start.json")) as f:
        assert json.load(f) == {**record["warm_start"], "shipped": f"{task}.safetensors", "sha256": record["sha256"]}
    with open(os.path.join(out, "build.json")) as f:
        assert json.load(f)["warm_start_sha256"] == record["sha256"]
    settings = reference_settings(compose(list(embedded_task(task).overrides)))
    one_prompt = 1 / len(pd.read_parquet(paths["test"]))
    accuracy = greedy_accuracy(paths["model"], paths["test"], settings_reward(settings), settings["max_response_length"])
    assert accuracy == pytest.approx(record["held_out_greedy_acc"], abs=one_prompt + 1e-9)


def test_a_damaged_shipped_warm_start_is_refused_naming_its_file(tmp_path, monkeypatch):
    """A shipped file whose SHA-256 is not its record's (a Git LFS pointer, a damaged copy) is never loaded."""
    import shutil

    import rlvr_recipes.tiny_task.build as tiny_build
    from rlvr_recipes.launch.cpu_run import COUNTDOWN_WARM_START
    from rlvr_recipes.tiny_task.countdown import CountdownSpec

    shipped = tmp_path / "warm_starts"
    shipped.mkdir()
    shutil.copy(os.path.join(tiny_build.SHIPPED_WARM_STARTS, "countdown.json"), shipped / "countdown.json")
    (shipped / "countdown.safetensors").write_text("version https://git-lfs.github.com/spec/v1\n")
    monkeypatch.setattr(tiny_build, "SHIPPED_WARM_STARTS", str(shipped))
    with pytest.raises(ValueError, match=r"warm_starts/countdown.safetensors: SHA-256 \w+ is not its record's"):
        tiny_build.build(str(tmp_path / "cd"), tiny_build.COUNTDOWN_MODEL, CountdownSpec(),
                         warm_start_target=COUNTDOWN_WARM_START, ref_samples=0)


def test_make_lab_names_known_methods_and_publishes_into_the_committed_doc():
    """`make lab` is the one command behind docs/lab.md's comparison: its methods must all resolve, the document it
    publishes into must carry the report markers (else the command would fail after hours of runs), and it publishes
    the summary and the report with `launch.replay --publish`, so that a methods or arguments override leaves both the
    committed ones as they are."""
    import re

    from rlvr_recipes.launch.compare import publish_target
    from rlvr_recipes.launch.cpu_run import method_overrides, registered

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "Makefile")) as f:
        makefile = f.read()
    methods = re.search(r"^LAB_METHODS \?= (\S+)$", makefile, re.M).group(1).split(",")
    estimators, _ = registered()
    for method in methods:
        assert method_overrides(method, estimators), method
    # make lab: the package's six methods, the off-policy ablation, the baselines a claim is judged against
    # (Clip-Cov for CW-GRPO, GSPO for GSPO-N, GRPO for W-REINFORCE) and the papers' other baselines (DAPO, Dr.GRPO)
    assert {"grpo", "avspo", "agrae", "aapo", "cw_grpo", "grpo_n", "grpo_4mb", "grpo_n_4mb"} <= set(methods)
    assert {"clip_cov", "gspo", "gspo_n", "dapo", "drgrpo", "w_reinforce"} <= set(methods)
    # and 001 Table 2's A-GRAE rows on DAPO (as 001 ran it) and on Dr.GRPO, each beside its base
    assert {"dapo_001", "agrae_dapo_001", "agrae_drgrpo"} <= set(methods)
    assert len(set(methods)) == len(methods)
    _, (train, publish) = make_recipe("lab")
    # the doc's markers checked before the runs, the report written into it only by the publish step
    assert "--publish" not in train.split() and train.split()[-4:] == ["--out", "runs/lab", "--check-publish",
                                                                        "docs/lab.md"]
    assert publish.split() == [*PUBLISH, "benchmarks/lab_compare_summary.json", "runs/lab/summary.json",
                               "--report-into", "docs/lab.md"]
    publish_target(os.path.join(root, "docs", "lab.md"))
    # the committed report was made by this command: its methods and its seeds, steps and pass@k samples
    args = re.search(r"^LAB_ARGS \?= (.+)$", makefile, re.M).group(1).split()
    with open(os.path.join(root, "docs", "lab.md")) as f:
        published = re.search(r"^`python -m rlvr_recipes\.launch\.compare (.+?)`", f.read(), re.M).group(1).split()
    assert published[published.index("--methods") + 1] == ",".join(methods)
    for key in ("--seeds", "--steps", "--passk-samples"):
        assert published[published.index(key) + 1] == args[args.index(key) + 1], key


def test_fresh_prompt_scores_are_kept_only_from_a_command_with_the_same_settings(tmp_path):
    from benchmarks.lab_fresh_prompts import build_parser, kept_scores

    path = str(tmp_path / "fresh.json")
    args = build_parser().parse_args(["--json", path, "--keep"])
    assert kept_scores(path, args) == {}  # nothing scored yet
    run = {"seed": 3, "pass@1": 0.5, "pass@8": 0.7, "pass@max": 0.8, "at_0": 0.1, "above_0.95": 0.2}
    record = {"command": f"python benchmarks/lab_fresh_prompts.py --json {path}", "warm_start": {"pass@1": 0.4},
              "runs": {"gspo": [run]}}
    with open(path, "w") as f:
        json.dump(record, f)
    kept = kept_scores(path, args)
    assert kept["warm_start"] == {"pass@1": 0.4} and kept["runs"] == {("gspo", 3): run}
    with pytest.raises(ValueError, match="scored with --samples 64, this command has 256"):
        kept_scores(path, build_parser().parse_args(["--json", path, "--keep", "--samples", "256"]))
    record["command"] += " --fresh-seed 2"
    with open(path, "w") as f:
        json.dump(record, f)
    with pytest.raises(ValueError, match="--fresh-seed 2, this command has 1"):
        kept_scores(path, args)
    # scores on fresh problems are not kept for a command that scores the held-out prompts
    with pytest.raises(ValueError, match="--held-out False, this command has True"):
        kept_scores(path, build_parser().parse_args(["--json", path, "--keep", "--fresh-seed", "2", "--held-out"]))


def _fake_countdown_runs(root, pass_max: dict) -> None:
    """A comparison folder whose finished runs are ``pass_max``'s (method, seed) keys (no models in it)."""
    for method, seed in pass_max:
        if method is None:
            continue
        run = root / "runs" / method / f"seed{seed}"
        run.mkdir(parents=True)
        (run / "done.json").write_text(json.dumps({"settings": {"steps": 50}}))


@pytest.mark.parametrize("text, seeds", [("205-210", [205, 206, 207, 208, 209, 210]), ("3", [3]),
                                         ("7,5-6, 7", [7, 5, 6]), ("4-4", [4])])
def test_seed_list_option_reads_seeds_and_ranges(text, seeds):
    """--seed-list: comma-separated seeds and ranges A-B, both ends in, each seed once, in the order given."""
    from benchmarks.lab_fresh_prompts import build_parser

    assert build_parser().parse_args(["--seed-list", text]).seed_list == seeds


@pytest.mark.parametrize("text, message", [("210-205", "'210-205': the range runs backwards"),
                                           ("5-", "'5-' is not a seed"), ("a", "'a' is not a seed"),
                                           ("1,,2", "'' is not a seed"), ("-3", "'-3' is not a seed")])
def test_seed_list_option_names_what_it_cannot_read(text, message, capsys):
    """--seed-list: a part that is neither a seed nor a range, or a range that runs backwards, is named (exit 2)."""
    from benchmarks.lab_fresh_prompts import build_parser

    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["--seed-list", text])
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_fresh_prompts_by_seed_scores_each_run_on_its_seed_and_tests_seed_by_seed(tmp_path, monkeypatch, capsys):
    """--by-seed: each run and the warm start at every seed on that seed's draws; changes and the claim's pair by the
    paired t-test, figures worked out by hand (df = 2: p = 1 - t / sqrt(t^2 + 2), t_0.975 = 4.3027)."""
    import benchmarks.lab_fresh_prompts as fresh

    # pass@max of the warm start (method None) and of the runs, by seed
    pass_max = {(None, 1): 0.90, (None, 2): 0.95, (None, 3): 0.90, ("grpo", 1): 0.80, ("grpo", 2): 0.90,
                ("grpo", 3): 0.85, ("grpo_n", 1): 0.78, ("grpo_n", 2): 0.86, ("grpo_n", 3): 0.84,
                ("agrae", 1): 0.5, ("agrae", 2): 0.5, ("agrae", 3): 0.5}
    _fake_countdown_runs(tmp_path, pass_max)
    scored = []

    def fake_scorer(task, samples, prompts=None):
        assert (task, samples, prompts) == ("countdown", 256, None)  # --held-out: the build's held-out prompts

        def score(model_dir, seed=0):
            method = None if model_dir is None else model_dir.split("/runs/")[1].split("/")[0]
            if model_dir is not None:
                assert f"/seed{seed}/" in model_dir  # a run on its own seed's draws
            scored.append((method, seed))
            v = pass_max[(method, seed)]
            return {"pass@1": v / 2, "pass@k": {8: v - 0.1, 256: v}, "at_0": 0.0, "above_0.95": 0.0}

        return score

    monkeypatch.setattr(fresh, "scorer", fake_scorer)
    out = tmp_path / "scores.json"
    argv = ["lab_fresh_prompts.py", "--out", str(tmp_path), "--held-out", "--samples", "256", "--by-seed",
            "--methods", "grpo,grpo_n", "--json", str(out)]
    monkeypatch.setattr("sys.argv", argv)
    assert fresh.main() == 0
    # seed by seed, the warm start first; agrae is not among --methods
    assert scored == [(None, 1), ("grpo", 1), ("grpo_n", 1), (None, 2), ("grpo", 2), ("grpo_n", 2),
                      (None, 3), ("grpo", 3), ("grpo_n", 3)]
    record = json.loads(out.read_text())
    assert record["warm_start"]["2"]["pass@max"] == 0.95
    change = record["by_method"]["grpo"]["pass@max change"]  # -0.10, -0.05, -0.05
    assert change["mean"] == pytest.approx(-0.2 / 3)
    assert change["p"] == pytest.approx(1 - 4 / math.sqrt(18))  # t = 0.0667 / (0.02887 / sqrt 3) = 4
    (pair,) = [p for p in record["claim_pairs"] if p["method"] == "grpo_n" and p["figure"] == "pass@max"]
    assert pair["baseline"] == "grpo" and pair["seeds"] == 3
    t = 7**0.5  # differences -0.02, -0.04, -0.01: mean -0.02333, sd 0.015275, se 0.0088192
    assert pair["d"] == pytest.approx(-0.07 / 3)
    assert pair["p"] == pytest.approx(1 - t / 3)
    assert pair["low"] == pytest.approx(-0.07 / 3 - 4.302653 * 0.0088192, abs=1e-5)
    printed = capsys.readouterr().out
    assert "grpo_n       vs grpo      pass@max  -0.023 [-0.061, +0.015] p=0.12 (3 seeds; 004 Sec. 4)" in printed
    # the claims in launch.compare's summary form, for launch.verdicts: GRPO against the warm start, then the pair
    assert record["setup"] == {"scored": "the build's held-out prompts", "methods": ["grpo", "grpo_n"], "seeds": 3,
                               "first_seed": 1, "seed_list": [1, 2, 3], "steps": 50, "passk_samples": 256}
    boundary, versus = record["claims"]
    assert boundary["claim"] == "grpo's large-k pass@256 ends below the initial model's"
    assert (boundary["higher"], versus["higher"]) == (False, True)  # the claimed side, which launch.verdicts pools on
    assert boundary["values"]["initial model"] == {"1": 0.90, "2": 0.95, "3": 0.90}
    assert boundary["verdict"] == "cannot be judged"  # t = 4 on df 2: p = 0.057
    assert f"p = {1 - 4 / math.sqrt(18):.3g}" in boundary["evidence"]
    assert versus["claim"] == "grpo_n keeps large-k pass@256 above grpo" and versus["source"] == "004 Sec. 4"
    assert versus["values"]["difference by seed"] == pytest.approx({"1": -0.02, "2": -0.04, "3": -0.01})
    assert versus["verdict"] == "cannot be judged" and "[-0.061, +0.015]" in versus["evidence"]
    assert _check_kept_figures("scores.json", record) == 2
    # resumed with --keep: nothing scored again, the same record, its command without --keep
    scored.clear()
    monkeypatch.setattr("sys.argv", [*argv, "--keep"])
    assert fresh.main() == 0 and scored == []
    assert json.loads(out.read_text()) == record
    # a command stopped at a cut-off, recorded on the seeds it had scored (--seed-list, kept): nothing scored,
    # whole seeds
    cut = tmp_path / "cut.json"
    cut.write_text(json.dumps({**record, "runs": {m: rs[:2] for m, rs in record["runs"].items()}}))
    monkeypatch.setattr("sys.argv", [*argv[:-1], str(cut), "--seed-list", "1-2", "--keep"])
    assert fresh.main() == 0 and scored == []
    at_cut = json.loads(cut.read_text())
    assert at_cut["command"].endswith(f"--json {cut} --seed-list 1-2") and sorted(at_cut["warm_start"]) == ["1", "2"]
    assert at_cut["setup"]["seed_list"] == [1, 2] and at_cut["runs"] == {m: rs[:2] for m, rs in record["runs"].items()}
    (pair,) = [p for p in at_cut["claim_pairs"] if p["method"] == "grpo_n" and p["figure"] == "pass@max"]
    assert pair["seeds"] == 2 and pair["d"] == pytest.approx(-0.03)  # differences -0.02, -0.04
    # seeds with no finished run are named, by method
    monkeypatch.setattr("sys.argv", [*argv, "--seed-list", "2,4-5"])
    assert fresh.main() == 2
    assert "--seed-list 4,5: no finished run of grpo in" in capsys.readouterr().err
    # a method with no finished run is named
    monkeypatch.setattr("sys.argv", [*argv[:-4], "--methods", "grpo,cw_grpo"])
    assert fresh.main() == 2
    assert "--methods cw_grpo: no finished run" in capsys.readouterr().err
    # the comparison's own summary in the folder: its task, overrides and build go into setup, and launch.verdicts
    # reads the build there (a rescoring has no table)
    from rlvr_recipes.launch.verdicts import start_accuracy

    (tmp_path / "summary.json").write_text(json.dumps({
        "setup": {"task": "countdown", "overrides": ["a=1"]},
        "table": {"grpo": {"held-out acc, start": [0.55501, 0.0]}, "grpo_n": {"held-out acc, start": [0.55501, 0.0]}}}))
    monkeypatch.setattr("sys.argv", argv)
    assert fresh.main() == 0
    setup = json.loads(out.read_text())["setup"]
    assert setup == {**record["setup"], "task": "countdown", "overrides": ["a=1"], "held-out acc, start": 0.555}
    assert start_accuracy(json.loads(out.read_text())) == 0.555 and start_accuracy(record) is None


#: the committed rescorings to pass@256 (benchmarks/lab_fresh_prompts.py --by-seed): file, the comparison folder whose
#: runs they score, the make target that writes them, and how many claims they test
PASSK256_SCORES = [("lab_confirm_passk256.json", "runs/lab_confirm", "lab-passk256", 4),
                   ("lab_symmetry_passk256.json", "runs/lab_symmetry", "lab-symmetry-passk256", 3),
                   ("lab_symmetry_neg_passk256.json", "runs/lab_symmetry_neg", "lab-symmetry-passk256", 3),
                   ("lab_symmetry_121_passk256.json", "runs/lab_symmetry_121", "lab-symmetry-121-passk256", 2),
                   ("lab_symmetry_pos_passk256.json", "runs/lab_symmetry", "lab-symmetry-pos-passk256", 2),
                   ("lab_grpo_n_181_passk256.json", "runs/lab_grpo_n_181", "lab-grpo-n-181-passk256", 2),
                   ("lab_grpo_n_189_passk256.json", "runs/lab_grpo_n_189", "lab-grpo-n-189-passk256", 2),
                   ("lab_gspo_n_197_passk256.json", "runs/lab_gspo_n_197", "lab-gspo-n-197-passk256", 1),
                   ("lab_gspo_n_205_passk256.json", "runs/lab_gspo_n_205", "lab-gspo-n-205-passk256", 1)]


@pytest.mark.parametrize("name, out, target, n_claims", PASSK256_SCORES)
def test_committed_passk256_scores_give_the_tests_they_record(name, out, target, n_claims):
    """The committed rescorings to pass@256 (docs/lab.md, "pass@256 of the 50-57 runs", "The negative-dominant
    control at k = 256", "The positive-dominant control at k = 256", "GRPO-N against GRPO at k = 256", "GSPO-N
    against GSPO at k = 256" and "The second set at k = 256, and the two sets pooled"): their changes and the claims'
    pairs are what the script's tests give on the per-run figures they record, every run on its own seed's draws,
    whole seeds of the methods their command names."""
    record, args, first = _rescoring_by_seed(name, n_claims)
    assert args.held_out and args.samples == 256 and args.out == out
    assert list(record["runs"]) == args.methods.split(",")
    assert args.seed_list in (None, first)  # --seed-list: the seeds scored by a cut-off, each scored for every method


def _rescoring_by_seed(name: str, n_claims: int) -> tuple[dict, Any, list[int]]:
    """The committed rescoring ``benchmarks/<name>`` (benchmarks/lab_fresh_prompts.py --by-seed), checked: whole seeds
    of every method it scored, the initial model at each; its changes, the claims' pairs and the claims (which the
    verdicts table reads) are what the script's tests give on the per-run figures it records; ``n_claims`` of them
    keep their figures. Returns the record, its command's arguments and its seeds."""
    import shlex

    from benchmarks.lab_fresh_prompts import build_parser, claims, summarise

    with open(os.path.join(ROOT, "benchmarks", name)) as f:
        record = json.load(f)
    args = build_parser().parse_args(shlex.split(record["command"])[2:])
    assert args.by_seed
    seeds = {m: [r["seed"] for r in rs] for m, rs in record["runs"].items()}
    first = next(iter(seeds.values()))
    assert all(s == first for s in seeds.values()) and sorted(record["warm_start"], key=int) == [str(s) for s in first]
    start = {int(s): f for s, f in record["warm_start"].items()}
    table, pairs = summarise(record["runs"], start, by_seed=True)
    assert json.loads(json.dumps(table)) == record["by_method"]
    assert json.loads(json.dumps(pairs)) == record["claim_pairs"]
    assert json.loads(json.dumps(claims(record["runs"], start, pairs, args.samples))) == record["claims"]
    assert record["setup"]["seed_list"] == first and record["setup"]["methods"] == list(record["runs"])
    assert _check_kept_figures(name, record) == n_claims
    return record, args, first


@pytest.mark.parametrize("target", sorted({target for _, _, target, _ in PASSK256_SCORES}))
def test_make_passk256_targets_are_the_commands_of_their_committed_scores(target):
    """`make lab-passk256`, `lab-symmetry-passk256`, `lab-symmetry-121-passk256`, `lab-symmetry-pos-passk256`,
    `lab-grpo-n-181-passk256`, `lab-grpo-n-189-passk256`, `lab-gspo-n-197-passk256` and `lab-gspo-n-205-passk256`
    run the commands their committed scores record, over the runs of the comparisons they name (`make lab-confirm`,
    `lab-symmetry`, `lab-symmetry-neg`, `lab-symmetry-121`, `lab-grpo-n-181`, `lab-grpo-n-189`, `lab-gspo-n-197`,
    `lab-gspo-n-205`), a score recorded on the seeds scored by a cut-off with ``PASSK256_SEEDS`` as docs/lab.md gives
    it, and keep no committed score (`lab-passk256` only if asked: ``LAB_PASSK256_KEEP=--keep``)."""
    import re
    import shlex

    makefile, recipes = make_recipe(target)
    scores = [(name, out) for name, out, t, _ in PASSK256_SCORES if t == target]
    assert len(recipes) == len(scores)
    with open(os.path.join(ROOT, "docs", "lab.md")) as f:
        doc = f.read()
    for recipe, (name, out) in zip(recipes, scores):
        with open(os.path.join(ROOT, "benchmarks", name)) as f:
            command = shlex.split(json.load(f)["command"])
        if "--seed-list" in command:  # stopped at its cut-off and recorded on the seeds scored by then: the docs say so
            seeds = command[command.index("--seed-list") + 1]
            (recipe,) = make_recipe(target, given={"PASSK256_SEEDS": seeds})[1]
            assert f"make {target} PASSK256_SEEDS={seeds}" in " ".join(doc.split())
        assert shlex.split(recipe) == command
        # the comparison that trains runs/lab_x_y is make lab-x-y
        trained = out.removeprefix("runs/").replace("_", "-")
        assert make_recipe(trained)[1][0].endswith(f" --out {out}")
    assert re.search(r"^LAB_PASSK256_KEEP \?=\s*$", makefile, re.M)


#: the committed rescorings on 200 fresh problems (benchmarks/lab_fresh_prompts.py --by-seed, make lab-fresh-%): file,
#: the comparison folder whose runs they score, the make target's stem, and how many claims they test
FRESH_SCORES = [("lab_cw_clip_cov_257_fresh.json", "runs/lab_cw_clip_cov_257", "cw-clip-cov-257", 1),
                ("lab_off_policy_249_fresh.json", "runs/lab_off_policy_249", "off-policy-249", 1),
                ("lab_off_policy_265_fresh.json", "runs/lab_off_policy_265", "off-policy-265", 1),
                ("lab_w_reinforce_277_fresh.json", "runs/lab_w_reinforce_277", "w-reinforce-277", 2),
                ("lab_agrae_drgrpo_289_fresh.json", "runs/lab_agrae_drgrpo_289", "agrae-drgrpo-289", 2),
                ("lab_agrae_dapo_301_fresh.json", "runs/lab_agrae_dapo_301", "agrae-dapo-301", 2),
                ("lab_w_reinforce_313_fresh.json", "runs/lab_w_reinforce_313", "w-reinforce-313", 2),
                ("lab_agrae_drgrpo_325_fresh.json", "runs/lab_agrae_drgrpo_325", "agrae-drgrpo-325", 2),
                ("lab_agrae_dapo_337_fresh.json", "runs/lab_agrae_dapo_337", "agrae-dapo-337", 2),
                ("lab_agrae_dapo_349_fresh.json", "runs/lab_agrae_dapo_349", "agrae-dapo-349", 2),
                ("lab_agrae_drgrpo_361_fresh.json", "runs/lab_agrae_drgrpo_361", "agrae-drgrpo-361", 2)]


@pytest.mark.parametrize("name, out, stem, n_claims", FRESH_SCORES)
def test_committed_fresh_scores_give_the_tests_they_record(name, out, stem, n_claims):
    """The committed rescorings of the 0.520 build's seed sets compared seed by seed on 200 fresh problems (docs/lab.md,
    "The decided verdicts of the 0.520 build on fresh problems", "A-GRAE on Dr.GRPO and on DAPO on fresh problems",
    "W-REINFORCE against GRPO on twelve more seeds of the 0.520 build (313-324)", "A-GRAE on Dr.GRPO against Dr.GRPO on
    twelve more seeds of the 0.520 build (325-336)", "A-GRAE on DAPO against DAPO, as 001 ran them, on twelve more seeds
    of the 0.520 build (337-348)", "... on a third set of twelve seeds of the 0.520 build (349-360)", "A-GRAE on Dr.GRPO
    against Dr.GRPO on a third set of twelve seeds of the 0.520 build (361-372)"): every run of the comparison scored on
    its own seed's draws and the initial model on every seed's, 64 samples on each of the fresh problems of seed 1;
    their changes, the claims' pairs and the claims are what the script's tests give on the figures they record; and
    `make lab-fresh-STEM` is the command each records, over the runs of the comparison `make lab-STEM` trains."""
    import shlex

    from rlvr_recipes.launch.verdicts import start_accuracy

    record, args, first = _rescoring_by_seed(name, n_claims)
    assert (args.held_out, args.samples, args.fresh, args.fresh_seed, args.out) == (False, 64, 200, 1, out)
    assert args.methods is None and args.seed_list is None  # every run of the comparison, no seed left out
    # the make rule that wrote it, over the runs of the comparison that trained them
    _, (recipe,) = make_recipe("lab-fresh-%", stem)
    assert shlex.split(recipe) == shlex.split(record["command"])
    assert make_recipe(f"lab-{stem}")[1][0].endswith(f" --out {out}")
    # the runs are those of the comparison's committed summary: its task, settings, build, methods and every seed
    with open(os.path.join(ROOT, "benchmarks", name.replace("_fresh.json", "_summary.json"))) as f:
        summary = json.load(f)
    trained = summary["setup"]
    assert {k: record["setup"][k] for k in ("task", "overrides", "steps")} == {
        k: trained[k] for k in ("task", "overrides", "steps")}
    assert sorted(record["runs"]) == sorted(trained["methods"])
    assert first == list(range(trained["first_seed"], trained["first_seed"] + trained["seeds"]))
    assert start_accuracy(record) == start_accuracy(summary)


PLANNED_LATER_SETS = {
    # the set run after the plan, STEM_FIRSTSEED: the heading of the section whose readings named the pooling (its sets
    # and method are LAB_PLANNED's)
    "w_reinforce_313": "#### W-REINFORCE against GRPO on twelve more seeds",
    "agrae_drgrpo_325": "#### A-GRAE on Dr.GRPO against Dr.GRPO on twelve more seeds",
    "agrae_dapo_337": "#### A-GRAE on DAPO against DAPO, as 001 ran them, on twelve more",
    "agrae_dapo_349": "#### A-GRAE on DAPO against DAPO, as 001 ran them, on a third",
    "agrae_drgrpo_361": "#### A-GRAE on Dr.GRPO against Dr.GRPO on a third set",
}


@pytest.mark.parametrize("pooling, kind, claim, verdict, mean, low, high, p", [
    ("w_reinforce_313", "summary", "w_reinforce keeps large-k pass@64 above grpo", "cannot be judged",
     -0.004, -0.012, +0.003, "0.22"),
    ("w_reinforce_313", "fresh", "w_reinforce keeps large-k pass@64 above grpo", "cannot be judged",
     -0.005, -0.017, +0.008, "0.43"),
    ("agrae_drgrpo_325", "summary", "agrae_drgrpo ends with pass@1 above drgrpo", "cannot be judged",
     -0.006, -0.014, +0.002, "0.12"),
    ("agrae_drgrpo_325", "summary", "agrae_drgrpo keeps large-k pass@64 above drgrpo", "cannot be judged",
     +0.002, -0.005, +0.009, "0.55"),
    ("agrae_drgrpo_325", "fresh", "agrae_drgrpo ends with pass@1 above drgrpo", "did not hold",
     -0.009, -0.015, -0.003, "0.0071"),
    ("agrae_drgrpo_325", "fresh", "agrae_drgrpo keeps large-k pass@64 above drgrpo", "cannot be judged",
     -0.000, -0.012, +0.011, "0.94"),
    ("agrae_dapo_337", "summary", "agrae_dapo_001 ends with pass@1 above dapo_001", "did not hold",
     -0.007, -0.012, -0.002, "0.0083"),
    ("agrae_dapo_337", "summary", "agrae_dapo_001 keeps large-k pass@64 above dapo_001", "cannot be judged",
     -0.002, -0.009, +0.006, "0.61"),
    ("agrae_dapo_337", "fresh", "agrae_dapo_001 ends with pass@1 above dapo_001", "cannot be judged",
     -0.001, -0.006, +0.004, "0.68"),
    ("agrae_dapo_337", "fresh", "agrae_dapo_001 keeps large-k pass@64 above dapo_001", "cannot be judged",
     +0.000, -0.011, +0.012, "0.97"),
    ("agrae_dapo_349", "summary", "agrae_dapo_001 ends with pass@1 above dapo_001", "did not hold",
     -0.005, -0.009, -0.001, "0.011"),
    ("agrae_dapo_349", "summary", "agrae_dapo_001 keeps large-k pass@64 above dapo_001", "cannot be judged",
     -0.002, -0.008, +0.003, "0.42"),
    ("agrae_dapo_349", "fresh", "agrae_dapo_001 ends with pass@1 above dapo_001", "cannot be judged",
     -0.002, -0.006, +0.001, "0.18"),
    ("agrae_dapo_349", "fresh", "agrae_dapo_001 keeps large-k pass@64 above dapo_001", "cannot be judged",
     -0.001, -0.010, +0.008, "0.87"),
    ("agrae_drgrpo_361", "summary", "agrae_drgrpo ends with pass@1 above drgrpo", "cannot be judged",
     -0.006, -0.013, +0.000, "0.062"),
    ("agrae_drgrpo_361", "summary", "agrae_drgrpo keeps large-k pass@64 above drgrpo", "cannot be judged",
     -0.001, -0.006, +0.004, "0.72"),
    ("agrae_drgrpo_361", "fresh", "agrae_drgrpo ends with pass@1 above drgrpo", "did not hold",
     -0.008, -0.013, -0.004, "0.0014"),
    ("agrae_drgrpo_361", "fresh", "agrae_drgrpo keeps large-k pass@64 above drgrpo", "cannot be judged",
     +0.000, -0.008, +0.008, "1.0"),
])
def test_planned_poolings_of_later_seed_sets_give_what_docs_say(pooling, kind, claim, verdict, mean, low, high, p):
    """The poolings of a 0.520-build seed set of twelve with the sets that ran it again, each named in the readings
    before its last set ran (docs/lab.md, "W-REINFORCE against GRPO on twelve more seeds of the 0.520 build (313-324)",
    "A-GRAE on Dr.GRPO against Dr.GRPO on twelve more seeds of the 0.520 build (325-336)", "A-GRAE on DAPO against DAPO,
    as 001 ran them, on twelve more seeds of the 0.520 build (337-348)", "... on a third set of twelve seeds of the
    0.520 build (349-360)", "A-GRAE on Dr.GRPO against Dr.GRPO on a third set of twelve seeds of the 0.520 build
    (361-372)"), on the held-out prompts (the committed summaries) and on the fresh problems (the committed score
    files): each is the look at its claim that its set count makes, on twelve seeds a set, and gives the verdict, the
    mean, the interval and the p the section states. The sets and the method are those of the pooling `LAB_PLANNED`
    ends with the set's summary (`make lab-verdicts` pools the summaries so); the fresh pooling is the same plan over
    the sets' score files."""
    from rlvr_recipes.launch.verdicts import planned_poolings, pooled, read_summaries

    heading = PLANNED_LATER_SETS[pooling]
    (plan,) = [p for p in _makefile_words(_joined_makefile(), "LAB_PLANNED")
               if p.partition("+")[2].split(":")[0] == f"benchmarks/lab_{pooling}_summary.json"]
    plan = plan.replace("_summary.json", f"_{kind}.json")
    earlier, last = plan.split(":")[0].split("+")
    paths = [*earlier.split(","), last]
    summaries = [(path, s) for path, (_, s) in zip(paths, read_summaries([os.path.join(ROOT, q) for q in paths]))]
    rows = [r for r in pooled(summaries, planned_poolings([plan], paths)) if r["planned"] and r["claim"] == claim]
    assert len(rows) == 1
    (row,) = rows
    assert row["looks"] == len(paths) and len(row["seeds"]) == 12 * len(paths) and row["verdict"] == verdict
    interval = f"{mean:+.3f} [{low:+.3f}, {high:+.3f}]"
    assert f"difference {mean:+.3f}, 95 % interval [{low:+.3f}, {high:+.3f}]" in row["evidence"]
    with open(os.path.join(ROOT, "docs", "lab.md")) as f:
        doc = " ".join(f.read().split())
    assert f"{interval}, p = {p}" in doc[doc.index(heading):]


def _make_command(target: str, stem: str = "", given: Optional[dict[str, str]] = None) -> str:
    """The make command for ``target`` as docs/lab.md gives it: the stem in place of ``%``, then each ``given``
    variable, its value in double quotes where it holds a space."""
    return " ".join(["make", target.replace("%", stem),
                     *(f'{k}="{v}"' if " " in v else f"{k}={v}" for k, v in (given or {}).items())])


def _check_kept_figures(name: str, summary: dict) -> int:
    """Each claim of ``summary`` that keeps its figures (launch.compare's ``values``) against its own verdict and
    evidence; returns how many claims were checked."""
    import math

    from scipy import stats

    from rlvr_recipes.launch.compare import paired_change

    checked = 0
    for claim in summary["claims"]:
        values = claim.get("values")
        if values is None:
            continue
        checked += 1
        where = (name, claim["claim"])
        if "difference by seed" in values:
            method, base = (k for k in values if k != "difference by seed")
            diffs = values["difference by seed"]
            for seed, d in diffs.items():
                assert d == pytest.approx(values[method][seed] - values[base][seed]), (*where, seed)
            c = paired_change(list(diffs.values()))
            assert (f"difference {c['mean']:+.3f}, 95 % interval [{c['low']:+.3f}, {c['high']:+.3f}]"
                    in claim["evidence"]), where
            assert f"p = {c['p']:.3g}" in claim["evidence"], where
            assert (claim["verdict"] == "cannot be judged") == (c["low"] <= 0 <= c["high"]), where
        elif "early ACR" in values:
            early, final = values["early ACR"], values["final held-out accuracy"]
            pairs = [(early[m][s], final[m][s]) for m in early for s in early[m]]
            pairs = [(e, f) for e, f in pairs if math.isfinite(e) and math.isfinite(f)]
            r, p = stats.pearsonr([e for e, _ in pairs], [f for _, f in pairs])
            assert f"r = {round(float(r), 2) + 0.0:.2f} over {len(pairs)} runs, p = {p:.3g}" in claim["evidence"], where
        else:  # ACR against G: the mean over every run at each G (NaN: a run whose groups are smaller than G)
            for g, by_method in values.items():
                mean = np.mean([v for runs in by_method.values() for v in runs.values() if math.isfinite(v)])
                assert f"{g}: {mean:.3f}" in claim["evidence"], (*where, g)
    return checked


def test_committed_lab_summaries_keep_the_figures_each_verdict_was_taken_on():
    """A committed summary that keeps each claim's per-seed figures must agree with its own verdicts: the difference
    by seed is the method's figure minus the base's, and the paired t-test over it gives the evidence's difference,
    interval and p; the early-ACR correlation is Pearson's r over the runs' pairs; ACR against G is the mean over the
    runs at each G. A summary edited by hand, or figures kept from other runs, fail."""
    import copy
    import glob

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    checked = {}
    for path in sorted(glob.glob(os.path.join(root, "benchmarks", "lab_*_summary.json"))):
        with open(path) as f:
            checked[os.path.basename(path)] = _check_kept_figures(path, json.load(f))
    # the nine-claims report keeps its figures for every claim it tests (10 lines, 9 of the addition task's claims)
    assert checked["lab_confirm_nine_summary.json"] == 10
    with open(os.path.join(root, "benchmarks", "lab_confirm_nine_summary.json")) as f:
        summary = json.load(f)
    # one seed's figure changed by hand: its difference, then the test, no longer agree
    tampered = copy.deepcopy(summary)
    avspo = next(c for c in tampered["claims"] if c["claim"].startswith("AVSPO"))
    avspo["values"]["avspo"]["50"] += 0.05
    with pytest.raises(AssertionError):
        _check_kept_figures("tampered", tampered)
    avspo["values"]["difference by seed"]["50"] += 0.05
    with pytest.raises(AssertionError):
        _check_kept_figures("tampered", tampered)


@pytest.mark.parametrize("target, variables, out, summary", [
    ("lab-confirm", "LAB_CONFIRM", "lab_confirm", "lab_confirm_nine_summary.json"),
    ("lab-target", "LAB_TARGET", "lab_target", "lab_target_summary.json"),
    ("lab-exploration", "LAB_EXPLORATION", "lab_exploration", "lab_exploration_summary.json"),
    ("lab-symmetry", "LAB_SYMMETRY", "lab_symmetry", "lab_symmetry_summary.json"),
    ("lab-symmetry-neg", "LAB_SYMMETRY_NEG", "lab_symmetry_neg", "lab_symmetry_neg_summary.json"),
])
def test_make_target_reproduces_its_committed_summary(target, variables, out, summary):
    """`make lab-confirm` is the one command behind the nine-claims report, `make lab-target` behind the 2-hour
    comparison, `make lab-exploration` behind the exploration claims on seeds 113-116, `make lab-symmetry` behind
    001's Control Experiment I on seeds 117-120, `make lab-symmetry-neg` behind its negative-dominant control again on
    seeds 161-164: each runs the command its committed summary records, with methods this package registers, and
    copies the summary it writes over the committed one."""
    import re
    import shlex

    from rlvr_recipes.launch.cpu_run import method_overrides, registered

    makefile, (train, copy) = make_recipe(target)
    methods = re.search(rf"^{variables}_METHODS \?= (\S+)$", makefile, re.M).group(1).split(",")
    estimators, _ = registered()
    for method in methods:
        assert method_overrides(method, estimators), method
    with open(os.path.join(ROOT, "benchmarks", summary)) as f:
        setup = json.load(f)["setup"]
    assert methods == setup["methods"] and setup["missing_runs"] == []
    assert shlex.split(train) == shlex.split(setup["command"])
    assert copy.split() == [*PUBLISH, f"benchmarks/{summary}", f"runs/{out}/summary.json"]
    assert "--task countdown" in setup["command"] and f"--out runs/{out}" in setup["command"]


def test_docs_verdicts_table_is_the_one_the_committed_summaries_give():
    """docs/lab.md's "The verdicts at a glance" is what launch.verdicts writes from the summaries and probes its
    command names, `make lab-verdicts` names the same ones, every committed lab summary is in the table or named as
    left out, and every committed JSON of the entropy probe is in its table: a summary changed or added without the
    table written again fails."""
    import glob
    import re
    import shlex

    from rlvr_recipes.launch.verdicts import (POOLED_HEADING, PROBES_HEADING, PUBLISH_END, PUBLISH_START,
                                              glance_markdown, ledger, markdown, planned_poolings, pooled,
                                              pooled_markdown, probe_rows, probes_markdown, read_summaries)

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "docs", "lab.md")) as f:
        doc = f.read()
    block = doc[doc.index(PUBLISH_START) + len(PUBLISH_START): doc.index(PUBLISH_END)].strip()
    command, table = block.split("\n\n", 1)
    words = shlex.split(command.strip("`"))
    assert words[:3] == ["python", "-m", "rlvr_recipes.launch.verdicts"]
    pool = words.index("--pool")  # with the pooled table, then the poolings planned before their last run, then
    paths, options = words[3:pool], words[pool + 1:]  # the probes
    flags = options[0::2]
    assert len(options) % 2 == 0 and flags == sorted(flags) and set(flags) == {"--planned", "--probe"}
    planned = [v for f, v in zip(flags, options[1::2]) if f == "--planned"]
    probes = [v for f, v in zip(flags, options[1::2]) if f == "--probe"]
    summaries = [(p, s) for p, (_, s) in zip(paths, read_summaries([os.path.join(root, p) for p in paths]))]
    probed = [(p, s) for p, (_, s) in zip(probes, read_summaries([os.path.join(root, p) for p in probes]))]
    pooled_rows = pooled(summaries, planned_poolings(planned, paths))
    assert table + "\n" == (glance_markdown(ledger(summaries), pooled_rows) + markdown(ledger(summaries))
                            + POOLED_HEADING + pooled_markdown(pooled_rows)
                            + PROBES_HEADING + probes_markdown(probe_rows(probed)))
    makefile = _joined_makefile()
    assert _makefile_words(makefile, "LAB_SUMMARIES") == paths
    assert _makefile_words(makefile, "LAB_PLANNED") == planned
    assert _makefile_words(makefile, "LAB_PROBES") == probes
    assert re.search(r"^lab-verdicts:.*\n\t.*-m rlvr_recipes\.launch\.verdicts \$\(LAB_SUMMARIES\) --pool "
                     r"\$\(addprefix --planned ,\$\(LAB_PLANNED\)\)\s+\$\(addprefix --probe ,\$\(LAB_PROBES\)\)"
                     r"\s+--publish docs/lab\.md$", makefile, re.M)
    intro = doc[doc.index("## The verdicts at a glance"): doc.index(PUBLISH_START)]
    for path in glob.glob(os.path.join(root, "benchmarks", "lab_*_summary.json")):
        name = os.path.basename(path)
        left_out = re.sub(r"_summary\.json$", "", name)
        assert (f"benchmarks/{name}" in paths or f"`{left_out}`" in intro
                or (left_out.startswith("lab_lanes_") and "`lab_lanes_*`" in intro)), name
    for path in glob.glob(os.path.join(root, "benchmarks", "*.json")):
        with open(path) as f:
            written = json.load(f)
        if isinstance(written, dict) and str(written.get("command", "")).startswith(
                "python benchmarks/lab_entropy_probe.py"):
            assert f"benchmarks/{os.path.basename(path)}" in probes, path


def _joined_makefile() -> str:
    """The Makefile with its continuation lines joined (make's `$\\` joins without a space, `\\` with one)."""
    import re

    with open(os.path.join(ROOT, "Makefile")) as f:
        return re.sub(r"\$\\\n\s*", "", f.read()).replace("\\\n", " ")


def _makefile_words(makefile: str, name: str) -> list[str]:
    """The words of the Makefile variable ``name`` (set with ``?=``) in ``makefile`` (:func:`_joined_makefile`)."""
    import re

    return re.search(rf"^{name} \?= (.*)$", makefile, re.M).group(1).split()


def test_docs_count_and_name_the_poolings_the_makefile_plans():
    """docs/lab.md's account of the planned poolings is the Makefile's: "N poolings were planned" counts `LAB_PLANNED`,
    every pooling kept to one method's claims (`:METHOD`) is named with it, and "the N later-look poolings", the chance
    of deciding a null and the levels for 5 % it states are those of `benchmarks/lab_sequential_levels.json`, written by
    `make lab-sequential-levels` from the same `LAB_PLANNED`: a pooling added to the Makefile without the docs' list
    and the simulation following fails."""
    planned = _makefile_words(_joined_makefile(), "LAB_PLANNED")
    with open(os.path.join(ROOT, "benchmarks", "lab_sequential_levels.json")) as f:
        levels = json.load(f)
    assert levels["command"] == " ".join(["python benchmarks/lab_sequential_levels.py", *planned])
    rows = levels["rows"]
    with open(os.path.join(ROOT, "docs", "lab.md")) as f:
        doc = " ".join(f.read().split())
    intro = doc[doc.index("## The verdicts at a glance"): doc.index("<!-- verdicts: start")]
    numbers = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
               "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty",
               "twenty-one", "twenty-two", "twenty-three", "twenty-four", "twenty-five"]
    assert f"{numbers[len(planned)].capitalize()} poolings were planned:" in intro
    for pooling in planned:
        if ":" in pooling:
            assert f"`:{pooling.rsplit(':', 1)[1]}`" in intro, pooling
    assert f"the look sizes of the {numbers[len(rows)]} later-look poolings" in intro
    chances = [100 * r["error_at_nominal"] for r in rows]
    assert f"with chance {min(chances):.1f} % to {max(chances):.1f} %, not 5 %" in intro
    two = [r["level_for_5_percent"] for r in rows if r["looks"] == 2]
    assert f"{min(two):.4f} to {max(two):.4f} for two looks" in intro


GROUP_SIZE_METHODS = ["grpo", "grpo_g4", "grpo_g2"]
TARGET_METHODS = ["grpo", "avspo", "agrae", "aapo", "cw_grpo", "grpo_n", "grpo_4mb", "grpo_n_4mb", "clip_cov", "gspo",
                  "gspo_n", "dapo", "drgrpo", "w_reinforce"]


@pytest.mark.parametrize("target,stem,name,first_seed,methods,seeds,given", [
    ("lab-group-size", "", "lab_group_size", 90, GROUP_SIZE_METHODS, 3, {}),
    ("lab-group-size-%", "93", "lab_group_size_93", 93, GROUP_SIZE_METHODS, 3, {}),
    ("lab-group-size-%", "96", "lab_group_size_96", 96, GROUP_SIZE_METHODS, 3, {}),
    ("lab-symmetry-%", "121", "lab_symmetry_121", 121, ["grpo", "agrae_pos_dominant"], 4, {}),
    ("lab-symmetry-neg-%", "165", "lab_symmetry_neg_165", 165, ["grpo", "agrae_neg_dominant"], 8, {}),
    ("lab-exploration-%", "173", "lab_exploration_173", 173, ["grpo", "agrae"], 8, {}),
    ("lab-grpo-n-%", "181", "lab_grpo_n_181", 181, ["grpo", "grpo_n"], 8, {}),
    ("lab-grpo-n-%", "189", "lab_grpo_n_189", 189, ["grpo", "grpo_n"], 8, {}),
    ("lab-gspo-n-%", "197", "lab_gspo_n_197", 197, ["gspo", "gspo_n"], 8, {}),
    ("lab-gspo-n-%", "205", "lab_gspo_n_205", 205, ["gspo", "gspo_n"], 8, {}),
    ("lab-off-policy-%", "229", "lab_off_policy_229", 229, ["grpo_4mb", "grpo_n_4mb"], 8, {}),
    ("lab-cw-clip-cov-%", "237", "lab_cw_clip_cov_237", 237, ["cw_grpo", "clip_cov"], 12, {}),
    ("lab-off-policy-%", "249", "lab_off_policy_249", 249, ["grpo_4mb", "grpo_n_4mb"], 8, {}),
    ("lab-cw-clip-cov-%", "257", "lab_cw_clip_cov_257", 257, ["cw_grpo", "clip_cov"], 8,
     {"LAB_CW_CLIP_COV_SEEDS": "8"}),
    ("lab-off-policy-%", "265", "lab_off_policy_265", 265, ["grpo_4mb", "grpo_n_4mb"], 12,
     {"LAB_OFF_POLICY_SEEDS": "12"}),
    ("lab-w-reinforce-%", "277", "lab_w_reinforce_277", 277, ["grpo", "w_reinforce"], 12, {}),
    ("lab-w-reinforce-%", "313", "lab_w_reinforce_313", 313, ["grpo", "w_reinforce"], 12, {}),
    ("lab-agrae-drgrpo-%", "289", "lab_agrae_drgrpo_289", 289, ["drgrpo", "agrae_drgrpo"], 12, {}),
    ("lab-agrae-drgrpo-%", "325", "lab_agrae_drgrpo_325", 325, ["drgrpo", "agrae_drgrpo"], 12, {}),
    ("lab-agrae-dapo-%", "301", "lab_agrae_dapo_301", 301, ["dapo_001", "agrae_dapo_001"], 12, {}),
    ("lab-agrae-dapo-%", "337", "lab_agrae_dapo_337", 337, ["dapo_001", "agrae_dapo_001"], 12, {}),
    ("lab-agrae-dapo-%", "349", "lab_agrae_dapo_349", 349, ["dapo_001", "agrae_dapo_001"], 12, {}),
    ("lab-agrae-drgrpo-%", "361", "lab_agrae_drgrpo_361", 361, ["drgrpo", "agrae_drgrpo"], 12, {}),
    ("lab-target-%", "373", "lab_target_373", 373, TARGET_METHODS, 3, {}),
    ("lab-difficulty-%", "376", "lab_difficulty_376", 376, ["grpo_easy", "grpo_medium", "grpo_hard"], 6, {}),
    ("lab-difficulty-%", "382", "lab_difficulty_382", 382, ["grpo_easy", "grpo_medium", "grpo_hard"], 6, {}),
    ("lab-difficulty-%", "388", "lab_difficulty_388", 388, ["grpo_easy", "grpo_medium", "grpo_hard"], 6, {}),
])
def test_make_pattern_target_is_the_command_of_its_committed_summary(target, stem, name, first_seed, methods, seeds,
                                                                     given):
    """`make lab-group-size` (and `make lab-group-size-93` and `-96`, by the pattern rule) runs the command its
    committed summary records (docs/lab.md, "ACR and accuracy against the group size, each G trained at its own"), and
    copies its summary there; so do `make lab-symmetry-121` (docs/lab.md, "The positive-dominant control again on seeds
    121-124"), `make lab-symmetry-neg-165` ("The negative-dominant control on eight more seeds") and `make
    lab-exploration-173` ("A-GRAE against GRPO on eight more seeds"), `make lab-grpo-n-181` ("GRPO-N against GRPO on
    eight more seeds"), `make lab-grpo-n-189` ("GRPO-N against GRPO on a third seed set of eight"), `make
    lab-gspo-n-197` ("GSPO-N against GSPO on eight seeds of this build"), `make lab-gspo-n-205` ("GSPO-N against GSPO on
    a second seed set of this build"), `make lab-off-policy-229` ("GRPO-N against GRPO at four updates a batch, on eight
    seeds of this build"), `make lab-cw-clip-cov-237` ("CW-GRPO against Clip-Cov on twelve seeds of this build"), `make
    lab-off-policy-249` ("GRPO-N against GRPO at four updates a batch, on eight more seeds (249-256)"), `make
    lab-w-reinforce-277` ("W-REINFORCE against GRPO on twelve seeds of the 0.520 build (277-288)"), `make
    lab-w-reinforce-313` ("W-REINFORCE against GRPO on twelve more seeds of the 0.520 build (313-324)"), `make
    lab-agrae-drgrpo-289` ("A-GRAE on Dr.GRPO against Dr.GRPO on twelve seeds of the 0.520 build (289-300)"), `make
    lab-agrae-drgrpo-325` ("A-GRAE on Dr.GRPO against Dr.GRPO on twelve more seeds of the 0.520 build (325-336)"), `make
    lab-agrae-dapo-301` ("A-GRAE on DAPO against DAPO, as 001 ran them, on twelve seeds of the 0.520 build (301-312)"),
    `make lab-agrae-dapo-337` ("... on twelve more seeds of the 0.520 build (337-348)"), `make lab-agrae-dapo-349`
    ("... on a third set of twelve seeds of the 0.520 build (349-360)"), `make lab-agrae-drgrpo-361` ("A-GRAE on
    Dr.GRPO against Dr.GRPO on a third set of twelve seeds of the 0.520 build (361-372)"), `make lab-target-373` ("The
    2-hour comparison again, from a fresh clone, on three new seeds of the 0.520 build (373-375)") and `make
    lab-difficulty-376` ("ACR and accuracy across difficulty levels, each level trained at its own (376-381)"). Those
    run with a seed count of their own (``given``) are run so, and docs/lab.md gives them so: `make lab-cw-clip-cov-257
    LAB_CW_CLIP_COV_SEEDS=8` ("CW-GRPO against Clip-Cov on eight seeds of the 0.520 build") and `make lab-off-policy-265
    LAB_OFF_POLICY_SEEDS=12` ("GRPO-N against GRPO at four updates a batch, on twelve seeds of the 0.520 build
    (265-276)")."""
    import shlex

    _, (train, copy) = make_recipe(target, stem, given)
    with open(os.path.join(ROOT, "benchmarks", f"{name}_summary.json")) as f:
        setup = json.load(f)["setup"]
    assert shlex.split(train) == shlex.split(setup["command"])
    assert copy.split() == [*PUBLISH, f"benchmarks/{name}_summary.json", f"runs/{name}/summary.json"]
    assert setup["acr_cut"] == "all subgroups" and setup["methods"] == methods
    assert setup["first_seed"] == first_seed and setup["seeds"] == seeds
    if given:
        with open(os.path.join(ROOT, "docs", "lab.md")) as f:
            assert _make_command(target, stem, given) in f.read()


#: the models of the model-scale sets by (hidden size, warm-start steps; None: the task recipe's 850)
SCALE_LABELS = {(64, None): "grpo_0.27M", (128, None): "grpo_1.1M", (192, None): "grpo_2.4M",
                (64, 400): "grpo_0.27M_ws400", (128, 400): "grpo_1.1M_ws400", (192, 400): "grpo_2.4M_ws400"}


@pytest.mark.parametrize("stem", ["394", "418"])
def test_make_lab_model_scale_runs_the_commands_its_committed_summary_records(stem):
    """`make lab-model-scale-394` (docs/lab.md, "ACR and accuracy across model sizes (394-401)" and "A third model
    size") and `make lab-model-scale-418` ("The 1.1M and 0.27M models from the task's 850-step warm start on eight new
    seeds (418-425)", run first with `LAB_MODEL_SCALE_HIDDEN=64`, and "The 2.4M model from the task's 850-step warm
    start added on 418-425") build the hidden-64 and hidden-192 tasks. Each runs one comparison a built size after its
    build, then the default (hidden 128) build's, with the commands the committed summary records for each, and takes
    them together with the summary's own command, into the summary's path; docs/lab.md gives the command on a line of
    its own."""
    import re
    import shlex

    built = (64, 192)
    _, lines = make_recipe("lab-model-scale-%", stem)
    commands = [shlex.split(line) for line in lines]
    with open(os.path.join(ROOT, "benchmarks", f"lab_model_scale_{stem}_summary.json")) as f:
        setup = json.load(f)["setup"]
    # each built size is built, then compared; then the default (hidden 128) build; the summary orders by size
    assert commands[0:2 * len(built):2] == [["python", "benchmarks/lab_model_scale.py", "build", "--hidden-size",
                                             str(hidden), "--out", f"runs/tiny_countdown_h{hidden}"]
                                            for hidden in built]
    compared = [*commands[1:2 * len(built):2], commands[2 * len(built)]]
    assert sorted(compared) == sorted(shlex.split(model["command"]) for model in setup["models"].values())
    assert commands[-1] == shlex.split(setup["command"]) and len(commands) == 2 * len(built) + 2
    assert f"--json benchmarks/lab_model_scale_{stem}_summary.json" in setup["command"]
    sizes = sorted({*built, 128})
    assert setup["methods"] == [SCALE_LABELS[(hidden, None)] for hidden in sizes]
    assert (setup["first_seed"], setup["seeds"]) == (int(stem), 8)
    assert [model["tiny_dir"] for model in setup["models"].values()] == [
        "runs/tiny_countdown" if hidden == 128 else f"runs/tiny_countdown_h{hidden}" for hidden in sizes]
    with open(os.path.join(ROOT, "docs", "lab.md")) as f:
        assert re.search(r"^" + re.escape(_make_command("lab-model-scale-%", stem)) + r" *(#|$)", f.read(), re.M)


MATCHED_3 = ((64, None), (128, 400), (192, 400))


@pytest.mark.parametrize("target, stem, given, sizes, name", [
    ("lab-model-scale-matched-%", "394", {}, ((64, None), (192, 400)), "matched"),
    ("lab-model-scale-matched-%", "402", {"LAB_MODEL_SCALE_MATCHED_SIZE": "128"}, ((64, None), (128, 400)), "matched"),
    ("lab-model-scale-matched3-%", "394", {}, MATCHED_3, "matched3"),
    ("lab-model-scale-matched3-%", "402", {}, MATCHED_3, "matched3"),
    ("lab-model-scale-same-steps-%", "402", {}, ((64, 400), (128, 400), (192, 400)), "same_steps"),
    ("lab-model-scale-same-steps-%", "410", {"LAB_MODEL_SCALE_SAME_STEPS_HIDDEN": "64 128"}, ((64, 400), (128, 400)),
     "same_steps"),
    ("lab-model-scale-same-steps-%", "410", {"LAB_MODEL_SCALE_SAME_STEPS_NAME": "same_steps3"},
     ((64, 400), (128, 400), (192, 400)), "same_steps3"),
])
def test_make_lab_model_scale_sets_from_their_own_starts_run_the_commands_their_summaries_record(target, stem, given,
                                                                                                 sizes, name):
    """The model-scale sets with warm starts of their own, as docs/lab.md gives each: `make lab-model-scale-matched-394`
    ("The 2.4M model from a shorter warm start"), `make lab-model-scale-matched-402 LAB_MODEL_SCALE_MATCHED_SIZE=128`
    ("The 1.1M model from 400 steps against the 0.27M on eight new seeds (402-409)"), `make
    lab-model-scale-matched3-394` ("The three sizes from matched starts"), `make lab-model-scale-matched3-402` ("The
    three sizes from matched starts on the new seeds (402-409)"), `make lab-model-scale-same-steps-402` ("The three
    sizes from the same warm-start length (402-409)"), `make lab-model-scale-same-steps-410
    LAB_MODEL_SCALE_SAME_STEPS_HIDDEN="64 128"` ("The 1.1M and 0.27M models from the same warm-start length on eight new
    seeds (410-417)") and `make lab-model-scale-same-steps-410 LAB_MODEL_SCALE_SAME_STEPS_NAME=same_steps3` ("The three
    sizes from the same warm-start length on 410-417: the 2.4M model added"). Each builds every size's task (a 400-step
    warm start where ``sizes`` gives one), runs one comparison a size after its build, and takes them together, each
    with the command its committed summary records, into the summary's path."""
    import shlex

    _, lines = make_recipe(target, stem, given)
    commands = [shlex.split(line) for line in lines]
    with open(os.path.join(ROOT, "benchmarks", f"lab_model_scale_{stem}_{name}_summary.json")) as f:
        setup = json.load(f)["setup"]
    folders = [f"runs/tiny_countdown_h{hidden}" + (f"_ws{steps}" if steps else "") for hidden, steps in sizes]
    builds = [["python", "benchmarks/lab_model_scale.py", "build", "--hidden-size", str(hidden),
               *(["--warm-start-steps", str(steps)] if steps else []), "--out", folder]
              for (hidden, steps), folder in zip(sizes, folders)]
    assert setup["methods"] == [SCALE_LABELS[size] for size in sizes]
    assert (setup["first_seed"], setup["seeds"]) == (int(stem), 8)
    models = setup["models"]
    assert commands[0:-1:2] == builds
    assert commands[1:-1:2] == [shlex.split(models[label]["command"]) for label in setup["methods"]]
    assert commands[-1] == shlex.split(setup["command"]) and len(commands) == 2 * len(builds) + 1
    assert f"--json benchmarks/lab_model_scale_{stem}_{name}_summary.json" in setup["command"]
    assert [(models[SCALE_LABELS[size]]["tiny_dir"], models[SCALE_LABELS[size]]["warm_start_steps"])
            for size in sizes] == [(folder, steps or 850) for (_, steps), folder in zip(sizes, folders)]
    with open(os.path.join(ROOT, "docs", "lab.md")) as f:
        assert _make_command(target, stem, given) in f.read()


@pytest.mark.parametrize("stem", ["394", "402", "410"])
def test_model_scale_summaries_of_one_seed_set_share_the_runs_of_each_model(stem):
    """The model-scale rules keep each size's comparison where it ran first (`launch.compare` resumes it), so every
    committed summary of one seed set that holds a model holds the same runs of it: the same record, command and
    figures (e.g. the 0.27M model's runs of `make lab-model-scale-394` in the matched sets of 394-401)."""
    import glob

    models: dict[str, list[tuple[str, dict]]] = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "benchmarks", f"lab_model_scale_{stem}*_summary.json"))):
        with open(path) as f:
            for label, model in json.load(f)["setup"]["models"].items():
                models.setdefault(label, []).append((os.path.basename(path), model))
    shared = {label: held for label, held in models.items() if len(held) > 1}
    assert shared, f"no model of seeds {stem} is in two summaries"
    for label, held in shared.items():
        first_name, first = held[0]
        for name, model in held[1:]:
            assert model == first, (label, first_name, name)


def test_group_size_runs_with_their_own_arguments_are_the_commands_of_their_summaries():
    """The group-size comparisons that ran with other methods or seeds (docs/lab.md gives each as `make
    lab-group-size-N LAB_GROUP_SIZE_MORE_ARGS="..."`): the pattern rule with those arguments runs the command the
    committed summary records, from the first seed N, and copies the summary there. Every committed group-size summary
    is checked here or by the test above."""
    import glob
    import re
    import shlex

    with open(os.path.join(ROOT, "docs", "lab.md")) as f:
        doc = f.read()
    given = {seed: " ".join(args.split())
             for seed, args in re.findall(r'`make lab-group-size-(\d+) LAB_GROUP_SIZE_MORE_ARGS="([^"]+)"`', doc)}
    assert {"99", "105"} <= set(given)
    for seed, args in given.items():
        name = f"lab_group_size_{seed}"
        _, (train, copy) = make_recipe("lab-group-size-%", seed, {"LAB_GROUP_SIZE_MORE_ARGS": args})
        with open(os.path.join(ROOT, "benchmarks", f"{name}_summary.json")) as f:
            setup = json.load(f)["setup"]
        assert shlex.split(train) == shlex.split(setup["command"]), seed
        assert copy.split() == [*PUBLISH, f"benchmarks/{name}_summary.json", f"runs/{name}/summary.json"]
        assert setup["first_seed"] == int(seed) and setup["acr_cut"] == "all subgroups"
    checked = {"lab_group_size", "lab_group_size_93", "lab_group_size_96", *(f"lab_group_size_{s}" for s in given)}
    for path in glob.glob(os.path.join(ROOT, "benchmarks", "lab_group_size*_summary.json")):
        assert os.path.basename(path)[: -len("_summary.json")] in checked, path
