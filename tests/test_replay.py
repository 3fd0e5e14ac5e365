"""launch.replay: a committed comparison's runs against the same runs trained again, figure by figure, by hand."""

from __future__ import annotations

import copy
import json
import math
import os

import pytest

from rlvr_recipes.launch.compare import ACR_CUT, ACR_CUT_BEFORE, ACR_VS_G
from rlvr_recipes.launch.replay import TOLERANCE, compare_runs, main, replay_argv, run_figures

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMAND = ("python -m rlvr_recipes.launch.compare --task countdown --methods grpo,cw_grpo --seeds 2 --first-seed 80 "
           "--steps 50 --passk-samples 64 --jobs 2 --out runs/lab_x")


def _summary(acc=(0.645, 0.66, 0.675, 0.66), command=COMMAND, keyed=True, cut=ACR_CUT, acr2=0.82):
    """Two methods x seeds 80-81, in launch.compare's summary form; ``acc``: final accuracy of grpo 80, grpo 81,
    cw_grpo 80, cw_grpo 81; ``acr2``: grpo 80's ACR cut to G = 2, made with ``cut``."""
    grpo, cw = {"80": acc[0], "81": acc[1]}, {"80": acc[2], "81": acc[3]}
    return {
        "setup": {"task": "countdown", "methods": ["grpo", "cw_grpo"], "seeds": 2, "first_seed": 80, "steps": 50,
                  "passk_samples": 64, "overrides": ["data.max_response_length=32"], "command": command,
                  "missing_runs": [], "acr_cut": cut},
        "paired_by_seed": keyed,
        "table": {"grpo": {"held-out acc, start": [0.52, 0.0]}, "cw_grpo": {"held-out acc, start": [0.52, 0.0]}},
        "claims": [
            {"claim": ACR_VS_G,
             "values": {"G=2": {"grpo": {"80": acr2, "81": 0.83}, "cw_grpo": {"80": 0.8, "81": 0.78}}}},
            {"claim": "early ACR", "values": {"early ACR": {"grpo": {"80": 0.4, "81": 0.41},
                                                            "cw_grpo": {"80": 0.33, "81": 0.39}},
                                              "final held-out accuracy": {"grpo": grpo, "cw_grpo": cw}}},
            {"claim": "CW-GRPO keeps entropy", "values": {
                "cw_grpo": {"80": 0.0276, "81": 0.0203}, "grpo": {"80": 0.0308, "81": 0.0230},
                "difference by seed": {"80": -0.0032, "81": -0.0027}}},
        ],
        "change_from_start": {"grpo": {"pass@1": {"by_seed": [0.16, 0.18]}, "pass@64": {"by_seed": [-0.04, -0.075]}},
                              "cw_grpo": {"pass@1": {"by_seed": [0.12, 0.13]}, "pass@64": {"by_seed": [0.0, -0.01]}}},
    }


def test_figures_by_run_leave_out_the_differences_and_key_changes_by_seed():
    figures = run_figures(_summary())
    assert sorted(figures) == ["ACR falls as the group size G grows / G=2", "CW-GRPO keeps entropy",
                               "early ACR / early ACR", "early ACR / final held-out accuracy",
                               "pass@1 change from start", "pass@64 change from start"]
    assert figures["CW-GRPO keeps entropy"] == {("cw_grpo", "80"): 0.0276, ("cw_grpo", "81"): 0.0203,
                                                ("grpo", "80"): 0.0308, ("grpo", "81"): 0.0230}
    assert figures["early ACR / final held-out accuracy"][("cw_grpo", "81")] == 0.66
    # the by_seed lists are in seed order: the second entry is seed 81's
    assert figures["pass@64 change from start"] == {("grpo", "80"): -0.04, ("grpo", "81"): -0.075,
                                                    ("cw_grpo", "80"): 0.0, ("cw_grpo", "81"): -0.01}
    # a list that skipped a run (a figure that was not finite) or a missing run cannot be keyed: left out
    short = _summary()
    short["change_from_start"]["grpo"]["pass@1"]["by_seed"] = [0.18]
    assert ("grpo", "80") not in run_figures(short)["pass@1 change from start"]
    missing = _summary()
    missing["setup"]["missing_runs"] = ["cw_grpo seed 81"]
    assert "pass@1 change from start" not in run_figures(missing)


def test_figures_by_run_take_the_table_figures_each_run_kept():
    """A summary with ``figures_by_seed`` (launch.compare's since it keeps them) gives each run's table figures under
    the table's names, for the setup's methods only and less the seconds a step (timing, which no replay gives
    again); one without them gives what it gave before."""
    summary = _summary()
    summary["figures_by_seed"] = {"grpo": {"held-out acc, end": {"80": 0.645, "81": 0.66}},
                                  "cw_grpo": {"held-out acc, end": {"80": 0.675}, "pass@1 end": {"81": 0.58},
                                              "s/step": {"80": 4.8, "81": 4.9}},
                                  "dapo": {"held-out acc, end": {"80": 0.6}}}
    figures = run_figures(summary)
    assert figures["held-out acc, end"] == {("grpo", "80"): 0.645, ("grpo", "81"): 0.66, ("cw_grpo", "80"): 0.675}
    assert figures["pass@1 end"] == {("cw_grpo", "81"): 0.58}
    assert set(figures) - set(run_figures(_summary())) == {"held-out acc, end", "pass@1 end"}  # no "s/step"
    # a changed figure of one run is found at that run
    changed = copy.deepcopy(summary)
    changed["figures_by_seed"]["grpo"]["held-out acc, end"]["81"] = 0.70
    result = compare_runs(summary, changed)
    assert not result["reproduced"] and result["differing_runs"] == {"grpo seed 81": ["held-out acc, end"]}


def test_the_same_runs_reproduce_and_a_changed_answer_is_found_at_its_run():
    same = compare_runs(_summary(), _summary())
    assert same["reproduced"] and len(same["rows"]) == 6 and same["runs"] == [
        ["cw_grpo", "80"], ["cw_grpo", "81"], ["grpo", "80"], ["grpo", "81"]]
    assert all(r["equal"] == r["within"] == r["compared"] == 4 and r["largest"] == 0 and r["at"] is None
               for r in same["rows"])
    # one more prompt answered at cw_grpo seed 81: accuracy up by 1/200
    moved = compare_runs(_summary(), _summary(acc=(0.645, 0.66, 0.675, 0.665)))
    row = next(r for r in moved["rows"] if r["figure"] == "early ACR / final held-out accuracy")
    assert not moved["reproduced"] and row["equal"] == row["within"] == 3
    assert moved["differing_runs"] == {"cw_grpo seed 81": ["early ACR / final held-out accuracy"]}
    assert same["differing_runs"] == {}
    assert row["largest"] == pytest.approx(0.005) and row["at"] == ["cw_grpo", "81"]
    # a float-sum difference within the tolerance is reproduced, but not equal
    summed = _summary()
    summed["claims"][2]["values"]["grpo"]["80"] += 6.1e-7
    near = next(r for r in compare_runs(_summary(), summed)["rows"] if r["figure"] == "CW-GRPO keeps entropy")
    assert near["equal"] == 3 and near["within"] == 4 and near["largest"] == pytest.approx(6.1e-7)
    assert not compare_runs(_summary(), summed, tolerance=1e-7)["reproduced"]


def test_acr_at_a_cut_g_is_expected_again_only_where_both_cut_all_subgroups():
    # both cut every subgroup: a change at grpo seed 80 is a difference
    result = compare_runs(_summary(), _summary(acr2=0.80))
    row = result["rows"][0]
    assert row["figure"] == ACR_VS_G + " / G=2" and row["expected"] and row["at"] == ["grpo", "80"]
    assert not result["reproduced"]
    # committed with the first g responses to come back: shown, but not a replay figure
    for committed, new in ((_summary(cut=ACR_CUT_BEFORE), _summary(acr2=0.80)),
                           (_summary(cut=None), _summary(acr2=0.80))):  # a summary from before records no cut
        result = compare_runs(committed, new)
        assert not result["rows"][0]["expected"] and result["rows"][0]["within"] == 3 and result["reproduced"]
        assert all(row["expected"] for row in result["rows"][1:])


def test_a_subset_of_runs_and_non_finite_figures():
    one = _summary()  # trained again: grpo at seed 81 only
    one["setup"].update(methods=["grpo"], seeds=1, first_seed=81)
    one["claims"] = [{"claim": "early ACR", "values": {"final held-out accuracy": {"grpo": {"81": 0.66}}}}]
    one["change_from_start"] = {"grpo": {"pass@1": {"by_seed": [0.18]}}}
    result = compare_runs(_summary(), one)
    assert result["runs"] == [["grpo", "81"]] and result["reproduced"]
    assert [r["figure"] for r in result["rows"]] == ["early ACR / final held-out accuracy", "pass@1 change from start"]
    nan_one = _summary()
    nan_one["claims"][2]["values"]["grpo"]["81"] = math.nan
    assert compare_runs(nan_one, copy.deepcopy(nan_one))["reproduced"]  # NaN on both sides: equal
    row = next(r for r in compare_runs(_summary(), nan_one)["rows"] if r["figure"] == "CW-GRPO keeps entropy")
    assert row["largest"] == math.inf and row["at"] == ["grpo", "81"]


@pytest.mark.parametrize("change, words", [
    (lambda s: s["setup"].update(steps=20), "steps: 50 -> 20"),
    (lambda s: s["setup"].update(overrides=[]), "overrides"),
    (lambda s: s.update(paired_by_seed=False), "new summary's runs did not all draw keyed"),
    (lambda s: s["table"]["grpo"].update({"held-out acc, start": [0.555, 0.0]}),
     "grpo's held-out greedy accuracy at the start: 0.520 committed, 0.555 new"),
    (lambda s: (s["setup"].update(first_seed=90), s.update(claims=[])), "no run (method and seed) in common"),
])
def test_summaries_that_cannot_be_compared_are_refused_naming_why(change, words):
    other = _summary()
    change(other)
    with pytest.raises(ValueError, match=words.replace("(", r"\(").replace(")", r"\)")):
        compare_runs(_summary(), other)


def test_the_replay_command_is_the_recorded_one_at_one_seed():
    assert replay_argv(_summary(), 81, "runs/replay_81") == [
        "--task", "countdown", "--methods", "grpo,cw_grpo", "--steps", "50", "--passk-samples", "64", "--jobs", "2",
        "--seeds", "1", "--first-seed", "81", "--out", "runs/replay_81"]
    # a report-only command trains again what it reported; --publish and = forms are dropped or replaced
    report = COMMAND.replace("--out runs/lab_x", "--out=runs/lab_x --report-only --publish docs/lab.md")
    argv = replay_argv(_summary(command=report), 80, "o", methods="cw_grpo")
    assert argv == ["--task", "countdown", "--steps", "50", "--passk-samples", "64", "--jobs", "2", "--seeds", "1",
                    "--first-seed", "80", "--out", "o", "--methods", "cw_grpo"]
    with pytest.raises(ValueError, match="seed 79 is not one of the comparison's seeds \\(80-81\\)"):
        replay_argv(_summary(), 79, "o")
    with pytest.raises(ValueError, match="--methods dapo: not among"):
        replay_argv(_summary(), 80, "o", methods="grpo,dapo")
    with pytest.raises(ValueError, match="not a launch.compare command"):
        replay_argv(_summary(command="python benchmarks/lab_fresh_prompts.py --by-seed"), 80, "o")


def test_main_exit_codes_and_table(tmp_path, capsys):
    paths = {}
    for name, summary in (("a", _summary()), ("b", _summary(acc=(0.645, 0.66, 0.675, 0.665))),
                          ("c", _summary(keyed=False))):
        paths[name] = str(tmp_path / f"{name}.json")
        with open(paths[name], "w") as f:
            json.dump(summary, f)
    assert main([paths["a"], paths["a"], "--json", str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    assert "Runs compared: cw_grpo seeds 80-81, grpo seeds 80-81. 24 figures; reproduced: every figure within" in out
    assert json.load(open(tmp_path / "r.json"))["reproduced"] is True
    assert main([paths["a"], paths["b"]]) == 1
    out = capsys.readouterr().out
    assert "| early ACR / final held-out accuracy | 4 | 3 | 3 | 0.005 | cw_grpo seed 81 |" in out
    assert f"NOT reproduced: 1 of 24 figures differ by more than {TOLERANCE:g}" in out
    assert ("Runs that differ: cw_grpo seed 81 (1: early ACR / final held-out accuracy). The others reproduce every "
            "figure.") in out
    assert main([paths["a"], paths["c"]]) == 2
    assert "did not all draw keyed" in capsys.readouterr().err
    assert main([paths["a"], str(tmp_path / "none.json")]) == 2
    assert "none.json" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([paths["a"]])  # neither a new summary nor --train


def test_publish_copies_runs_of_the_same_experiment_and_keeps_the_committed_summary_of_another(tmp_path, capsys):
    """--publish (a lab target's last step): a replay with other figures is compared, then written in the committed
    summary's place byte for byte; one with a method left out, or other seeds, or other settings, leaves the committed
    summary as it is and says why; a missing committed summary is written; exit 0 each time."""
    def write(name, summary):
        path = tmp_path / name
        path.write_text(json.dumps(summary, indent=1))
        return str(path)

    committed = write("committed.json", _summary())
    replayed = write("replayed.json", _summary(acc=(0.645, 0.66, 0.675, 0.665)))
    assert main(["--publish", committed, replayed]) == 0
    out = capsys.readouterr().out
    assert "NOT reproduced: 1 of 24 figures differ" in out and f"[replay] {replayed} written to {committed}" in out
    assert open(committed).read() == open(replayed).read()

    one_method = _summary()
    one_method["setup"]["methods"] = ["grpo"]
    other_seeds = _summary()
    other_seeds["setup"]["first_seed"] = 90
    other_steps = _summary()
    other_steps["setup"]["steps"] = 40
    for name, summary, why in (("one.json", one_method, "methods: ['grpo', 'cw_grpo'] -> ['grpo']"),
                               ("seeds.json", other_seeds, "seeds: 80-81 -> 90-91"),
                               ("steps.json", other_steps, "steps: 50 -> 40")):
        before = open(committed).read()
        assert main(["--publish", committed, write(name, summary)]) == 0
        out = capsys.readouterr().out
        assert f"is not of the experiment of {committed} ({why}): {committed} left as it is" in out, name
        assert open(committed).read() == before, name

    fresh = str(tmp_path / "new_target.json")
    assert main(["--publish", fresh, replayed]) == 0
    assert open(fresh).read() == open(replayed).read()
    unreadable = write("broken.json", {})
    (tmp_path / "broken.json").write_text("{")
    assert main(["--publish", committed, unreadable]) == 2
    assert "broken.json" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--publish", committed, "--train", "80"])


def test_publish_puts_the_report_into_the_doc_only_where_the_summary_is_written(tmp_path, capsys):
    """--publish --report-into DOC (`make lab`'s last step): the report beside a summary of the committed experiment
    goes into DOC between its markers, headings two levels down; an override's summary leaves DOC as it is too; a DOC
    without the markers, or no report beside the summary, fails before the committed summary is touched."""
    from rlvr_recipes.launch.compare import PUBLISH_END, PUBLISH_START

    runs = tmp_path / "runs" / "lab"
    runs.mkdir(parents=True)
    committed = tmp_path / "committed.json"
    committed.write_text(json.dumps(_summary(), indent=1))
    replayed = runs / "summary.json"
    replayed.write_text(json.dumps(_summary(acc=(0.645, 0.66, 0.675, 0.665)), indent=1))
    (runs / "report.md").write_text("# Methods side by side\n\n![curves](curves.png)\n")
    doc = tmp_path / "lab.md"
    doc.write_text(f"# Lab\n\n{PUBLISH_START}\nold\n{PUBLISH_END}\n")
    before = doc.read_text()

    other = runs / "other.json"
    one_method = _summary()
    one_method["setup"]["methods"] = ["grpo"]
    other.write_text(json.dumps(one_method))
    assert main(["--publish", str(committed), str(other), "--report-into", str(doc)]) == 0
    assert f"{doc} left as it is too" in capsys.readouterr().out
    assert doc.read_text() == before

    assert main(["--publish", str(committed), str(replayed), "--report-into", str(doc)]) == 0
    out = capsys.readouterr().out
    assert f"written to {committed}" in out and f"report copied into {doc}" in out
    assert committed.read_text() == replayed.read_text()
    assert doc.read_text() == (f"# Lab\n\n{PUBLISH_START}\n\n### Methods side by side\n\n![curves](img/lab/curves.png)"
                               f"\n\n{PUBLISH_END}\n")

    committed.write_text(json.dumps(_summary(), indent=1))
    kept = committed.read_text()
    doc.write_text("# Lab, no markers\n")
    assert main(["--publish", str(committed), str(replayed), "--report-into", str(doc)]) == 2
    assert "lab.md" in capsys.readouterr().err and committed.read_text() == kept
    doc.write_text(before)
    (runs / "report.md").unlink()
    assert main(["--publish", str(committed), str(replayed), "--report-into", str(doc)]) == 2
    assert "report.md: no report to publish" in capsys.readouterr().err and committed.read_text() == kept
    with pytest.raises(SystemExit):
        main([str(committed), str(replayed), "--report-into", str(doc)])


def test_committed_comparisons_of_the_same_seeds_replay_each_other():
    """The lanes measurements (docs/lab.md, "Lanes") trained GRPO and CW-GRPO at seeds 10-11 again, in two lanes,
    after the 4-seed paired comparison had trained them in one: their pass@k changes are the same runs'."""
    def read(name):
        with open(os.path.join(ROOT, "benchmarks", name)) as f:
            return json.load(f)

    paired = read("lab_paired_summary.json")
    for lanes in ("lab_lanes_cuts_summary.json", "lab_lanes_scoring_summary.json",
                  "lab_lanes_one_server_summary.json"):
        result = compare_runs(paired, read(lanes))
        assert result["reproduced"] and result["runs"] == [["cw_grpo", "10"], ["cw_grpo", "11"], ["grpo", "10"],
                                                           ["grpo", "11"]], lanes


def test_every_committed_comparison_can_be_trained_again_at_one_seed():
    """`make lab-replay`'s default, and each committed summary whose runs drew keyed: its recorded command at its first
    seed, with the same settings."""
    import glob
    import re

    with open(os.path.join(ROOT, "Makefile")) as f:
        makefile = f.read()
    default = re.search(r"^LAB_REPLAY_SUMMARY \?= (\S+)$", makefile, re.M).group(1)
    seed = int(re.search(r"^LAB_REPLAY_SEED \?= (\d+)$", makefile, re.M).group(1))
    keyed = []
    for path in sorted(glob.glob(os.path.join(ROOT, "benchmarks", "lab_*summary.json"))):
        with open(path) as f:
            summary = json.load(f)
        if not summary.get("paired_by_seed"):
            continue
        keyed.append(os.path.relpath(path, ROOT))
        setup = summary["setup"]
        first = seed if keyed[-1] == default else setup["first_seed"]
        # comparisons of GRPO taken together (benchmarks/lab_model_scale.py, one a model size): each of them
        parts = [{"setup": {**setup, "command": model["command"], "methods": ["grpo"]}}
                 for model in setup["models"].values()] if "models" in setup else [summary]
        for part in parts:
            argv = replay_argv(part, first, "runs/r")
            assert argv[argv.index("--steps") + 1] == str(setup["steps"]) and "--report-only" not in argv, path
            assert argv[argv.index("--methods") + 1] == ",".join(part["setup"]["methods"]), path
            assert argv[-6:] == ["--seeds", "1", "--first-seed", str(first), "--out", "runs/r"], path
    assert default in keyed and len(keyed) >= 10
