"""launch.verdicts: comparisons' verdicts side by side and the count of independent seed sets, worked by hand."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr_recipes.launch.verdicts import (FIGURES_NOTE, GLANCE_NOTE, POOLED_HEADING, PROBES_HEADING, PUBLISH_END,
                                          PUBLISH_START, START_KEY, PlannedPooling, cell, claimed_higher,
                                          count_seed_sets, figure_rows, figures_markdown, glance_markdown, ledger, main,
                                          markdown, p_value, planned_poolings, pooled, pooled_figures, pooled_markdown,
                                          probe_rows, probes_markdown, publish, reading, seed_label, seed_set,
                                          sequential_verdict, start_accuracy)

ENTROPY = "grpo_n keeps entropy above grpo"
PASSK = "grpo_n keeps large-k pass@64 above grpo"


def _summary(first_seed, seeds, claims, methods=("grpo", "grpo_n")):
    return {"setup": {"methods": list(methods), "seeds": seeds, "first_seed": first_seed, "steps": 50,
                      "passk_samples": 64},
            "claims": [{"claim": c, "source": "004 Sec. 4", "verdict": v, "evidence": e} for c, v, e in claims]}


def test_seed_sets_and_labels():
    assert seed_set(_summary(5, 3, [])) == {5, 6, 7}
    assert seed_set(_summary(None, 2, [])) == {0, 1}  # written before --first-seed: seeds from 0
    named = _summary(50, 3, [])
    named["setup"]["seed_list"] = [50, 52, 57]  # a rescoring names its seeds, which need not be consecutive
    assert seed_set(named) == {50, 52, 57}
    assert seed_label(frozenset({5, 6, 7})) == "5-7" and seed_label(frozenset({4})) == "4"
    assert seed_label(frozenset({1, 3})) == "1,3"
    assert seed_label(frozenset({50, 51, 52, 60, 61, 70})) == "50-52,60-61,70"


def test_seed_sets_that_share_a_seed_count_once():
    assert count_seed_sets([]) == 0
    assert count_seed_sets([frozenset({0, 1}), frozenset({2}), frozenset({1, 5}), frozenset({7})]) == 3
    # joined through a third set that shares a seed with each
    assert count_seed_sets([frozenset({0}), frozenset({2}), frozenset({0, 2})]) == 1
    assert count_seed_sets([frozenset({3, 4}), frozenset({3, 4})]) == 1


@settings(max_examples=200, deadline=None)
@given(st.lists(st.frozensets(st.integers(0, 12), min_size=1, max_size=4), max_size=7))
def test_count_is_the_number_of_components_whatever_the_order(sets):
    # components by a search over the graph "two sets share a seed"
    seen, components = set(), 0
    for i in range(len(sets)):
        if i in seen:
            continue
        components += 1
        todo = [i]
        while todo:
            j = todo.pop()
            if j not in seen:
                seen.add(j)
                todo += [k for k in range(len(sets)) if k not in seen and sets[j] & sets[k]]
    assert count_seed_sets(sets) == components
    for perm in itertools.islice(itertools.permutations(sets), 6):
        assert count_seed_sets(list(perm)) == components


def test_cells_give_the_verdict_and_the_tests_p():
    evidence = "0.818 vs 0.848: difference -0.030, 95 % interval [-0.054, -0.006] (Welch t-test, df 7.2, p = 0.0194, 5"
    assert p_value(evidence) == "0.0194"
    assert p_value("(Welch t-test, df 4.3, p = 1.19e-05, 5 and 5 seeds)") == "1.19e-05"
    assert p_value("G=2: 0.816, G=4: 0.660") is None
    assert cell({"claim": PASSK, "verdict": "did not hold", "evidence": evidence}) == "did not hold (p 0.0194)"
    assert cell({"claim": PASSK, "verdict": "cannot be judged", "evidence": "r = 0.1, p = 0.31"}) == "- (p 0.31)"
    assert cell({"claim": "ACR falls", "verdict": "held", "evidence": "G=2: 0.816"}) == "held"
    with pytest.raises(ValueError, match="'ACR falls': unknown verdict 'maybe'"):
        cell({"claim": "ACR falls", "verdict": "maybe", "evidence": ""})


def test_ledger_by_hand():
    a = _summary(0, 5, [(ENTROPY, "cannot be judged", "p = 0.9"), (PASSK, "did not hold", "p = 0.05")],
                 methods=("grpo", "grpo_n", "cw_grpo"))
    b = _summary(40, 3, [(PASSK, "did not hold", "p = 0.004")])
    c = _summary(2, 4, [(PASSK, "held", "p = 0.01")])  # seeds 2-5 overlap a's 0-4
    table = ledger([("b.json", b), ("a.json", a), ("c.json", c)])
    assert [col["name"] for col in table["columns"]] == ["a.json", "c.json", "b.json"]  # by first seed
    assert table["columns"][0]["methods"] == 3 and table["columns"][2]["seeds"] == {40, 41, 42}
    assert [r["claim"] for r in table["rows"]] == [ENTROPY, PASSK]  # a's order: a has most claims
    entropy, passk = table["rows"]
    assert entropy["cells"] == ["- (p 0.9)", "", ""]
    assert (entropy["held"], entropy["did not hold"], entropy["tested"]) == (0, 0, 1)
    assert passk["cells"] == ["did not hold (p 0.05)", "held (p 0.01)", "did not hold (p 0.004)"]
    # did not hold on 0-4 and on 40-42 (two sets); held on 2-5; tested on 0-5 (a and c joined) and 40-42
    assert (passk["held"], passk["did not hold"], passk["tested"]) == (1, 2, 2)
    with pytest.raises(ValueError, match="x.json: not a launch.compare summary"):
        ledger([("x.json", {"setup": {"seeds": 3}, "claims": []})])
    for not_a_summary in ([], {"claims": [{"claim": "c"}], "setup": None}):  # other JSON read as a summary
        with pytest.raises(ValueError, match="y.json: not a launch.compare summary"):
            ledger([("y.json", not_a_summary)])


def test_markdown_by_hand():
    a = _summary(5, 2, [(PASSK, "did not hold", "(paired t-test by seed, df 1, p = 0.004, 2 seeds)")])
    text = markdown(ledger([("s.json", a)]))
    lines = text.splitlines()
    assert lines[0] == "| claim | paper | seeds 5-6 | seed sets: held / did not hold / tested |"
    assert lines[1] == "|---|---|---|---|"
    assert lines[2] == f"| {PASSK} | 004 Sec. 4 | did not hold (p 0.004) | 0 / 1 / 1 |"
    assert lines[-1] == ("- seeds 5-6: `s.json`, 2 methods x 2 seeds, 50 steps, pass@k to 64, paired t-test by "
                         "seed")


def test_reading_of_the_seed_sets_by_hand():
    """test_ledger_by_hand's rows: the entropy claim, tested on one set, never decided; pass@64 both ways (held on
    2-5, did not hold on 0-4 and 40-42); then each count worked out."""
    a = _summary(0, 5, [(ENTROPY, "cannot be judged", "p = 0.9"), (PASSK, "did not hold", "p = 0.05")])
    b = _summary(40, 3, [(PASSK, "did not hold", "p = 0.004")])
    c = _summary(2, 4, [(PASSK, "held", "p = 0.01")])
    table = ledger([("a.json", a), ("b.json", b), ("c.json", c)])
    assert [reading(r) for r in table["rows"]] == ["never decided", "both ways"]
    assert reading(ledger([("a.json", a), ("b.json", b)])["rows"][1]) == "replicated: did not hold"  # 0-4, 40-42
    assert reading(ledger([("a.json", a)])["rows"][1]) == "decided once: did not hold"
    assert reading({"held": 1, "did not hold": 0}) == "decided once: held"
    assert reading({"held": 3, "did not hold": 0}) == "replicated: held"
    # the glance table: a line per claim, and with pooled rows the planned poolings' verdicts (not the others)
    lines = glance_markdown(table).split("\n")
    assert lines[0] == "| claim | paper | seed sets: held / did not hold / tested | reading |"
    assert lines[1] == "|---|---|---|---|"
    assert lines[2] == f"| {ENTROPY} | 004 Sec. 4 | 0 / 0 / 1 | never decided |"
    assert lines[3] == f"| {PASSK} | 004 Sec. 4 | 1 / 2 / 2 | both ways |"
    assert glance_markdown(table).endswith(GLANCE_NOTE)
    rows = [{"claim": PASSK, "seeds": frozenset({0, 1, 40}), "planned": True, "verdict": "did not hold",
             "evidence": "(p = 0.003)"},
            {"claim": PASSK, "seeds": frozenset({5, 6}), "planned": True, "verdict": "cannot be judged",
             "evidence": "(p = 0.4)"},
            {"claim": PASSK, "seeds": frozenset({0, 1, 5, 6, 40}), "planned": False, "verdict": "held",
             "evidence": "(p = 0.01)"}]
    lines = glance_markdown(table, rows).split("\n")
    assert lines[0].endswith(" | reading | planned pooling |") and lines[1] == "|---|---|---|---|---|"
    assert lines[2] == f"| {ENTROPY} | 004 Sec. 4 | 0 / 0 / 1 | never decided |  |"
    assert lines[3] == (f"| {PASSK} | 004 Sec. 4 | 1 / 2 / 2 | both ways | 0-1,40: did not hold (p 0.003); "
                        "5-6: - (p 0.4) |")


def test_publish_and_the_command_line(tmp_path, capsys):
    a = _summary(5, 2, [(PASSK, "held", "p = 0.01")])
    path = tmp_path / "s.json"
    path.write_text(json.dumps(a))
    doc = tmp_path / "lab.md"
    doc.write_text(f"# Lab\n\n{PUBLISH_START}\nold\n{PUBLISH_END}\n\nafter\n")
    assert main([str(path), "--publish", str(doc)]) == 0
    table = glance_markdown(ledger([(str(path), a)])) + markdown(ledger([(str(path), a)]))
    assert doc.read_text() == (f"# Lab\n\n{PUBLISH_START}\n\n`python -m rlvr_recipes.launch.verdicts {path}`\n\n"
                               f"{table}\n{PUBLISH_END}\n\nafter\n")
    assert capsys.readouterr().out.startswith(table)
    bare = tmp_path / "bare.md"
    bare.write_text("# no markers\n")
    with pytest.raises(ValueError, match="bare.md: needs the line"):
        publish("x", str(bare))
    assert main([str(path), "--publish", str(bare)]) == 2
    assert bare.read_text() == "# no markers\n"
    assert main([str(tmp_path / "missing.json")]) == 2
    assert "missing.json" in capsys.readouterr().err


def _paired(first_seed, mine, theirs, verdict="cannot be judged", higher=None, overrides=("a=1",), start=0.52):
    """A summary whose one claim (grpo_n against grpo, ENTROPY) was tested paired by seed on consecutive seeds."""
    seeds = [str(first_seed + i) for i in range(len(mine))]
    claim = {"claim": ENTROPY, "source": "004 Sec. 4", "verdict": verdict, "evidence": "p = 0.5",
             "values": {"grpo_n": dict(zip(seeds, mine)), "grpo": dict(zip(seeds, theirs)),
                        "difference by seed": {s: x - y for s, x, y in zip(seeds, mine, theirs)}}}
    if higher is not None:
        claim["higher"] = higher
    summary = _summary(first_seed, len(mine), [])
    summary["setup"]["overrides"] = list(overrides)
    summary["claims"] = [claim]
    summary["table"] = {m: {"held-out acc, start": [start, 0.0]} for m in ("grpo", "grpo_n")}
    return summary


def test_claimed_direction():
    up = _paired(0, [0.3, 0.4], [0.2, 0.2])["claims"][0]  # mean difference +0.15
    assert claimed_higher([{**up, "higher": False}]) is False  # recorded: taken as it is
    assert claimed_higher([{**up, "verdict": "held"}]) is True
    assert claimed_higher([{**up, "verdict": "did not hold"}]) is False
    assert claimed_higher([up]) is None  # cannot be judged everywhere, nothing recorded
    assert claimed_higher([up, {**up, "verdict": "held"}]) is True


def test_pooled_by_hand():
    """Differences +0.1, +0.3 on seeds 0-1 and +0.2, +0.2 on 5-6: mean 0.2, sd sqrt(0.02 / 3), se 0.0408, t 3.182
    (df 3, 97.5 %) x se = 0.130: [+0.070, +0.330], held; p = 2 P(T_3 > 4.899) = 0.0163."""
    a = _paired(0, [0.6, 0.8], [0.5, 0.5])
    b = _paired(5, [0.7, 0.4], [0.5, 0.2], verdict="held", higher=True)
    replay = _paired(0, [0.0, 0.0], [0.9, 0.9])  # seeds 0-1 again: taken once, from the first
    other_settings = _paired(20, [0.0, 0.0], [0.9, 0.9], overrides=("a=2",))
    other_build = _paired(30, [0.0, 0.0], [0.9, 0.9], start=0.555)
    rows = pooled([("b.json", b), ("replay.json", replay), ("a.json", a), ("o.json", other_settings),
                   ("u.json", other_build)])
    assert len(rows) == 1
    row = rows[0]
    assert row["seeds"] == {0, 1, 5, 6} and row["comparisons"] == ["a.json", "b.json"]
    assert row["verdict"] == "held"
    assert row["evidence"].startswith("0.625 vs 0.425: difference +0.200, 95 % interval [+0.070, +0.330] (paired "
                                      "t-test by seed, df 3, p = 0.0163, 4 seeds")
    # the other way round the same figures do not hold
    down = pooled([("a.json", _paired(0, [0.6, 0.8], [0.5, 0.5], higher=False)), ("b.json", b)])
    assert down[0]["verdict"] == "did not hold"
    # one comparison alone, or no direction known, is left out
    assert pooled([("a.json", a)]) == []
    assert pooled([("a.json", a), ("c.json", _paired(5, [0.7, 0.4], [0.5, 0.2]))]) == []
    assert pooled_markdown(rows).splitlines()[2] == (f"| {ENTROPY} | 004 Sec. 4 | 0-1,5-6 | 2 | no | held (p 0.0163) | "
                                                     f"{row['evidence']} |")
    assert pooled_markdown([]) == "No claim was tested alike by two comparisons.\n"


def test_rescorings_pool_only_with_rescorings_of_their_build():
    """A rescoring (benchmarks/lab_fresh_prompts.py --by-seed) has no table: its build is its setup's START_KEY. Two
    of one build pool as test_pooled_by_hand's a and b do (p 0.0163); one of another build, or one that records none
    (written before the key existed), is left out."""
    def rescoring(summary, start):
        summary = {**summary, "setup": dict(summary["setup"])}
        del summary["table"]
        if start is not None:
            summary["setup"][START_KEY] = start
        return summary

    a = rescoring(_paired(0, [0.6, 0.8], [0.5, 0.5]), 0.555)
    b = rescoring(_paired(5, [0.7, 0.4], [0.5, 0.2], verdict="held", higher=True), 0.555)
    other_build = rescoring(_paired(20, [0.0, 0.0], [0.9, 0.9]), 0.52)
    unknown = rescoring(_paired(30, [0.0, 0.0], [0.9, 0.9]), None)
    assert [start_accuracy(s) for s in (a, other_build, unknown)] == [0.555, 0.52, None]
    assert start_accuracy(_paired(0, [0.6], [0.5], start=0.5204)) == 0.5204  # a comparison's table comes first
    rows = pooled([("a.json", a), ("b.json", b), ("o.json", other_build), ("u.json", unknown)])
    assert [(sorted(r["seeds"]), r["comparisons"]) for r in rows] == [([0, 1, 5, 6], ["a.json", "b.json"])]
    assert "p = 0.0163" in rows[0]["evidence"]


def test_planned_pooling_keeps_its_row_beside_the_pooling_of_all():
    """a (+0.1, +0.3 on seeds 0-1) and b (+0.2, +0.2 on 5-6) were planned together: their row is test_pooled_by_hand's
    (p 0.0163), marked planned. c (+0.2, +0.2 on 10-11) came later: all six differences have mean 0.2, sd
    sqrt(0.02 / 5), se 0.0258, t 7.746 on 5 df, half-width 2.571 x se = 0.066: [+0.134, +0.266], p 0.000573, a row
    marked not planned; means 3.8 / 6 = 0.633 against 2.6 / 6 = 0.433."""
    a = _paired(0, [0.6, 0.8], [0.5, 0.5])
    b = _paired(5, [0.7, 0.4], [0.5, 0.2], verdict="held", higher=True)
    c = _paired(10, [0.4, 0.9], [0.2, 0.7])
    summaries = [("runs/c.json", c), ("benchmarks/a.json", a), ("benchmarks/b.json", b)]
    plan = [PlannedPooling(("a.json", "b.json"))]  # named by file name, whichever folder; every claim
    rows = pooled(summaries, plan)
    assert [(sorted(r["seeds"]), r["planned"], r["verdict"]) for r in rows] == [
        ([0, 1, 5, 6], True, "held"), ([0, 1, 5, 6, 10, 11], False, "held")]
    assert "p = 0.0163" in rows[0]["evidence"]
    assert rows[0]["comparisons"] == ["benchmarks/a.json", "benchmarks/b.json"]
    assert rows[1]["evidence"].startswith("0.633 vs 0.433: difference +0.200, 95 % interval [+0.134, +0.266] "
                                          "(paired t-test by seed, df 5, p = 0.000573")
    lines = pooled_markdown(rows).splitlines()
    assert lines[0] == "| claim | paper | seeds | comparisons | planned | verdict | evidence |"
    assert lines[2].startswith(f"| {ENTROPY} | 004 Sec. 4 | 0-1,5-6 | 2 | yes | held (p 0.0163) |")
    assert lines[3].startswith(f"| {ENTROPY} | 004 Sec. 4 | 0-1,5-6,10-11 | 3 | no | held (p 0.000573) |")
    # a planned pooling that is all the alike comparisons is one row, planned, and so is one that the others add no
    # seed to (a replay of seeds 0-1 is taken from the first)
    assert [r["planned"] for r in pooled(summaries[1:], plan)] == [True]
    replay = _paired(0, [0.0, 0.0], [0.9, 0.9])
    assert [r["planned"] for r in pooled([*summaries[1:], ("r.json", replay)], plan)] == [True]
    # a planned pooling of which only one comparison made the claim alike adds no row
    other = _paired(20, [0.1, 0.2], [0.0, 0.0], overrides=("a=2",))
    assert [r["planned"] for r in pooled([*summaries, ("o.json", other)], [PlannedPooling(("a.json", "o.json"))])] == [
        False]
    with pytest.raises(ValueError, match="x.json is not among the summaries given"):
        planned_poolings(["a.json,x.json"], ["benchmarks/a.json", "benchmarks/b.json"])
    with pytest.raises(ValueError, match="names two summaries or more"):
        planned_poolings(["a.json,benchmarks/a.json"], ["benchmarks/a.json"])
    with pytest.raises(ValueError, match="name the method after ':'"):
        planned_poolings(["a.json,b.json:"], ["a.json", "b.json"])
    assert planned_poolings(["benchmarks/a.json,b.json", "a.json,b.json:grpo_n"], ["benchmarks/a.json", "b.json"]) == [
        PlannedPooling(("benchmarks/a.json", "b.json"), None), PlannedPooling(("a.json", "b.json"), "grpo_n")]
    # without the command's summaries, any names: the plans name them (the other checks stay)
    assert planned_poolings(["a.json,x.json+y.json"]) == [PlannedPooling(("a.json", "x.json", "y.json"), None,
                                                                         ("a.json", "x.json"))]
    with pytest.raises(ValueError, match="names two summaries or more"):
        planned_poolings(["a.json,benchmarks/a.json"])


def test_planned_pooling_of_one_method_leaves_the_other_claims_of_its_summaries_unplanned():
    """a and b each make two claims: grpo_n against grpo (ENTROPY) and grpo against the initial model. The plan
    names grpo_n: its row is planned, as in test_planned_pooling_keeps_its_row_beside_the_pooling_of_all (p 0.0163);
    the other claim's pooling of the same two comparisons is a row too, not planned (differences +0.1, +0.3 and +0.2,
    +0.2 again: p 0.0163)."""
    def two_claims(first_seed, mine, theirs):
        summary = _paired(first_seed, mine, theirs, verdict="held", higher=True)
        other = json.loads(json.dumps(summary["claims"][0]))
        other["claim"] = "grpo ends above the initial model"
        other["values"] = {("grpo" if k == "grpo_n" else "initial model" if k == "grpo" else k): v
                           for k, v in other["values"].items()}
        summary["claims"].append(other)
        return summary

    summaries = [("a.json", two_claims(0, [0.6, 0.8], [0.5, 0.5])), ("b.json", two_claims(5, [0.7, 0.4], [0.5, 0.2]))]
    rows = pooled(summaries, [PlannedPooling(("a.json", "b.json"), "grpo_n")])
    assert [(r["claim"], sorted(r["seeds"]), r["planned"]) for r in rows] == [
        (ENTROPY, [0, 1, 5, 6], True), ("grpo ends above the initial model", [0, 1, 5, 6], False)]
    assert all("p = 0.0163" in r["evidence"] for r in rows)
    assert [r["planned"] for r in pooled(summaries, [PlannedPooling(("a.json", "b.json"), "grpo")])] == [False, True]
    assert [r["planned"] for r in pooled(summaries, [PlannedPooling(("a.json", "b.json"))])] == [True, True]
    with pytest.raises(ValueError, match="a.json,b.json:gspo_n: no paired claim of these summaries is gspo_n's"):
        pooled(summaries, [PlannedPooling(("a.json", "b.json"), "gspo_n")])


def test_planned_pooling_that_adds_seeds_to_a_set_read_before_is_its_second_look():
    """a (+0.1, +0.3 on seeds 0-1) was read before the plan added b (+0.2, +0.1 on 5-6): the four differences have mean
    0.175, sd 0.0957, se 0.0479, t 3.656 on 3 df, half-width 3.182 x se = 0.152: [+0.023, +0.327], p 0.0354; means
    2.4 / 4 = 0.600 against 1.7 / 4 = 0.425. Held at the 5 % level, but as the second look at the claim it decides only
    below Pocock's 0.0294: cannot be judged. Planned without the look (both read after the plan) it holds. With
    test_pooled_by_hand's b (+0.2, +0.2; p 0.0163) the second look reaches the level and holds; a third comparison c
    (+0.2, +0.2 on 10-11) added after a and b were read makes all six differences (p 0.000573) the third look, held
    below 0.0221."""
    a = _paired(0, [0.6, 0.8], [0.5, 0.5])
    b = _paired(5, [0.7, 0.3], [0.5, 0.2], higher=True)
    rows = pooled([("a.json", a), ("b.json", b)], [PlannedPooling(("a.json", "b.json"), None, ("a.json",))])
    assert [(r["planned"], r["looks"], r["verdict"]) for r in rows] == [(True, 2, "cannot be judged")]
    assert rows[0]["evidence"].startswith("0.600 vs 0.425: difference +0.175, 95 % interval [+0.023, +0.327] "
                                          "(paired t-test by seed, df 3, p = 0.0354")
    assert rows[0]["evidence"].endswith("; look 2 at this claim, 1 of its seed sets read before the plan: Pocock's "
                                        "level for 2 looks, p < 0.0294, not reached")
    assert [(r["looks"], r["verdict"]) for r in pooled([("a.json", a), ("b.json", b)],
                                                       [PlannedPooling(("a.json", "b.json"))])] == [(1, "held")]
    assert pooled([("a.json", a), ("b.json", b)])[0]["looks"] is None  # not planned: no look counted
    assert pooled_markdown(rows).splitlines()[2].startswith(
        f"| {ENTROPY} | 004 Sec. 4 | 0-1,5-6 | 2 | yes, look 2 | - (p 0.0354) |")

    b = _paired(5, [0.7, 0.4], [0.5, 0.2], verdict="held", higher=True)
    [row] = pooled([("a.json", a), ("b.json", b)], [PlannedPooling(("a.json", "b.json"), None, ("a.json",))])
    assert (row["looks"], row["verdict"]) == (2, "held") and row["evidence"].endswith("p < 0.0294, reached")
    c = _paired(10, [0.4, 0.9], [0.2, 0.7])
    plan = planned_poolings(["a.json,b.json+c.json:grpo_n"], ["a.json", "b.json", "c.json"])
    assert plan == [PlannedPooling(("a.json", "b.json", "c.json"), "grpo_n", ("a.json", "b.json"))]
    [row] = pooled([("a.json", a), ("b.json", b), ("c.json", c)], plan)
    assert (row["looks"], row["verdict"]) == (3, "held") and "p = 0.000573" in row["evidence"]
    assert row["evidence"].endswith("Pocock's level for 3 looks, p < 0.0221, reached")
    table = glance_markdown({"rows": [{"claim": ENTROPY, "source": "004 Sec. 4", "held": 0, "did not hold": 0,
                                       "tested": 3, "seed sets": []}]}, [row])
    assert "| 0-1,5-6,10-11, look 3: held (p 0.000573) |" in table
    # an earlier summary that adds no seed to the claim's pooling is no look at it
    [row] = pooled([("a.json", a), ("b.json", b)], [PlannedPooling(("a.json", "b.json"), None, ("x.json",))])
    assert row["looks"] == 1
    for bad in ("a.json+b.json+c.json", "+a.json,b.json", "a.json,b.json+", "a.json+,:grpo_n"):
        with pytest.raises(ValueError, match="one '\\+', after the summaries read before the plan"):
            planned_poolings([bad], ["a.json", "b.json", "c.json"])


def test_sequential_verdict_levels():
    """Pocock's levels: a decided verdict is kept below the level for its look and becomes cannot be judged at or
    above it; one look leaves the verdict and evidence as they are; six looks have no level here."""
    assert sequential_verdict("held", "e", 0.04, 1) == ("held", "e")
    assert sequential_verdict("did not hold", "e", 0.0293, 2)[0] == "did not hold"
    assert sequential_verdict("did not hold", "e", 0.0294, 2)[0] == "cannot be judged"
    assert sequential_verdict("held", "e", 0.0221, 3)[0] == "cannot be judged"
    assert sequential_verdict("held", "e", 0.0157, 5)[0] == "held"
    assert sequential_verdict("cannot be judged", "e", 0.2, 2)[0] == "cannot be judged"
    with pytest.raises(ValueError, match="6 looks at one claim"):
        sequential_verdict("held", "e", 0.001, 6)


def test_pool_on_the_command_line(tmp_path, capsys):
    paths = []
    for name, summary in (("a.json", _paired(0, [0.6, 0.8], [0.5, 0.5])),
                          ("b.json", _paired(5, [0.7, 0.4], [0.5, 0.2], verdict="held", higher=True))):
        paths.append(str(tmp_path / name))
        (tmp_path / name).write_text(json.dumps(summary))
    doc = tmp_path / "lab.md"
    doc.write_text(f"{PUBLISH_START}\n{PUBLISH_END}\n")
    assert main([*paths, "--pool", "--publish", str(doc)]) == 0
    out = capsys.readouterr().out
    assert POOLED_HEADING in out and "| 0-1,5-6 | 2 | no | held (p 0.0163) |" in out
    assert f"`python -m rlvr_recipes.launch.verdicts {paths[0]} {paths[1]} --pool`" in doc.read_text()
    assert POOLED_HEADING in doc.read_text()
    assert main(paths) == 0 and POOLED_HEADING not in capsys.readouterr().out
    assert main([*paths, "--pool", "--planned", "a.json,b.json", "--publish", str(doc)]) == 0
    assert "| 0-1,5-6 | 2 | yes | held (p 0.0163) |" in capsys.readouterr().out
    assert f"{paths[1]} --pool --planned a.json,b.json`" in doc.read_text()
    assert main([*paths, "--planned", "a.json,b.json"]) == 2  # marks pooled rows: needs --pool
    assert "give --pool with it" in capsys.readouterr().err
    assert main([*paths, "--pool", "--planned", "a.json,z.json"]) == 2
    assert "z.json is not among the summaries given" in capsys.readouterr().err
    assert main([*paths, "--pool", "--planned", "a.json,b.json:grpo_n"]) == 0
    assert "| 0-1,5-6 | 2 | yes | held (p 0.0163) |" in capsys.readouterr().out
    assert main([*paths, "--pool", "--planned", "a.json,b.json:gspo_n"]) == 2
    assert "no paired claim of these summaries is gspo_n's" in capsys.readouterr().err


def _probe(units, verdict="held", evidence="+0.001 (paired t-test by seed, df 2, p = 0.0021, 3 seeds)"):
    """A probe's JSON (benchmarks/lab_entropy_probe.py) with one claim paired over ``units``."""
    claim = {"claim": "the entropy change of grpo_n's update (adam) lies above grpo's", "effect": "adam",
             "source": "004 Sec. 4", "verdict": verdict, "evidence": evidence,
             "values": {"grpo_n": {str(u): 0.1 for u in units}, "grpo": {str(u): 0.0 for u in units},
                        "difference by seed": {str(u): 0.1 for u in units}}}
    return {"command": "python benchmarks/lab_entropy_probe.py --seeds 3", "claims": [claim]}


def test_probe_rows_by_hand():
    rows = probe_rows([("benchmarks/p.json", _probe([125, 126, 127])),
                       ("q.json", _probe([117, 119], "cannot be judged", "p = 0.33"))])
    assert [(r["probe"], r["seeds"], r["verdict"]) for r in rows] == [
        ("p.json", frozenset({125, 126, 127}), "held"), ("q.json", frozenset({117, 119}), "cannot be judged")]
    lines = probes_markdown(rows).splitlines()
    assert lines[0] == "| claim | paper | probe | seeds | verdict | evidence |"
    assert lines[2] == ("| the entropy change of grpo_n's update (adam) lies above grpo's | 004 Sec. 4 | `p.json` | "
                        "125-127 | held (p 0.0021) | +0.001 (paired t-test by seed, df 2, p = 0.0021, 3 seeds) |")
    assert lines[3].split(" | ")[3:5] == ["117,119", "- (p 0.33)"]
    with pytest.raises(ValueError, match="s.json: not a probe's JSON"):
        probe_rows([("s.json", _summary(5, 2, [(PASSK, "held", "p = 0.01")]))])
    bare = _probe([1])
    del bare["claims"][0]["values"]
    with pytest.raises(ValueError, match="b.json: claim .* keeps no 'difference by seed'"):
        probe_rows([("b.json", bare)])


def test_probes_on_the_command_line(tmp_path, capsys):
    summary, probe = tmp_path / "s.json", tmp_path / "p.json"
    summary.write_text(json.dumps(_summary(5, 2, [(PASSK, "held", "p = 0.01")])))
    probe.write_text(json.dumps(_probe([125, 126, 127])))
    doc = tmp_path / "lab.md"
    doc.write_text(f"{PUBLISH_START}\n{PUBLISH_END}\n")
    assert main([str(summary), "--probe", str(probe), "--publish", str(doc)]) == 0
    out = capsys.readouterr().out
    table = PROBES_HEADING + probes_markdown(probe_rows([(str(probe), _probe([125, 126, 127]))]))
    assert out.endswith(table + f"[verdicts] table written into {doc}\n") and table in doc.read_text()
    assert f"verdicts {summary} --probe {probe}`" in doc.read_text()
    assert main([str(summary)]) == 0 and PROBES_HEADING not in capsys.readouterr().out
    assert main([str(summary), "--probe", str(summary)]) == 2  # a comparison's summary is not a probe
    assert "not a probe's JSON" in capsys.readouterr().err


def _with_figures(by_seed):
    summary = _summary(1, 3, [], methods=("cw_grpo", "clip_cov"))
    summary["figures_by_seed"] = by_seed
    return summary


FIGURES = {"cw_grpo": {"pass@1 end": {"1": 0.5, "2": 0.6, "3": 0.7}, "entropy (last 20%)": {"1": 0.2, "3": 0.3},
                       "s/step": {"2": 3.0}},
           "clip_cov": {"pass@1 end": {"1": 0.4, "2": 0.6, "3": 0.5}, "entropy (last 20%)": {"1": 0.1, "2": 0.1},
                        "s/step": {"3": 4.0}}}


def test_figure_rows_by_hand():
    """pass@1: differences +0.1, 0, +0.2 (mean +0.1, sd 0.1, se 0.1 / sqrt 3, t = sqrt 3 on 2 df: two-sided p = 1 -
    t / sqrt(t^2 + 2) = 1 - sqrt(3 / 5), interval +0.1 -/+ 4.3027 * se); entropy: the one seed both kept (+0.1, no
    noise estimate); s/step: no seed both kept, left out."""
    rows = figure_rows(_with_figures(FIGURES), "cw_grpo", "clip_cov")
    assert [r["figure"] for r in rows] == ["pass@1 end", "entropy (last 20%)"]
    p1, ent = rows
    assert p1["method"] == pytest.approx(0.6) and p1["base"] == pytest.approx(0.5) and p1["mean"] == pytest.approx(0.1)
    assert p1["p"] == pytest.approx(1 - (3 / 5) ** 0.5, rel=1e-9)
    half = 4.302652729911275 * 0.1 / 3 ** 0.5
    assert (p1["low"], p1["high"]) == (pytest.approx(0.1 - half), pytest.approx(0.1 + half))
    assert (p1["above"], p1["below"], p1["seeds"]) == (2, 0, 3)
    assert ent["mean"] == pytest.approx(0.1) and ent["seeds"] == 1 and ent["p"] != ent["p"]  # NaN: one seed
    flipped = figure_rows(_with_figures(FIGURES), "clip_cov", "cw_grpo")[0]
    assert flipped["mean"] == pytest.approx(-0.1) and flipped["p"] == pytest.approx(p1["p"])
    assert (flipped["above"], flipped["below"]) == (0, 2)
    table = figures_markdown(rows, "cw_grpo", "clip_cov")
    assert table.splitlines()[0].startswith("| figure | cw_grpo | clip_cov | difference |")
    assert "| pass@1 end | 0.6 | 0.5 | +0.1 | [-0.1484, +0.3484] | 0.225 | 2 / 0 / 3 |" in table


def test_figure_rows_name_what_is_missing():
    with pytest.raises(ValueError, match="keeps no figures by seed"):
        figure_rows(_summary(1, 3, []), "cw_grpo", "clip_cov")
    with pytest.raises(ValueError, match="'grpo' is not a method of this summary .it has cw_grpo, clip_cov"):
        figure_rows(_with_figures(FIGURES), "grpo", "clip_cov")


def test_figures_on_the_command_line(tmp_path, capsys):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(_with_figures(FIGURES)))
    assert main([str(path), "--figures", "cw_grpo,clip_cov"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{path}: cw_grpo against clip_cov\n\n{FIGURES_NOTE}\n")
    assert figures_markdown(figure_rows(_with_figures(FIGURES), "cw_grpo", "clip_cov"), "cw_grpo", "clip_cov") in out
    assert main([str(path), "--figures", "cw_grpo"]) == 2 and "give two methods" in capsys.readouterr().err
    old = tmp_path / "old.json"
    old.write_text(json.dumps(_summary(1, 3, [])))
    assert main([str(path), str(old), "--figures", "cw_grpo,clip_cov"]) == 2  # nothing printed before the error
    captured = capsys.readouterr()
    assert captured.out == "" and f"{old}: this summary keeps no figures by seed" in captured.err
    assert main([str(path), "--figures", "cw_grpo,clip_cov", "--publish", str(tmp_path / "d.md")]) == 2
    assert "leave out --publish" in capsys.readouterr().err
    assert main([str(path), "--figures", "cw_grpo,clip_cov", "--pool"]) == 2
    assert "two summaries or more" in capsys.readouterr().err


def _figures_of(first_seed, seeds, by_seed, start=0.555, steps=50):
    summary = _with_figures(by_seed)
    summary["setup"].update(first_seed=first_seed, seeds=seeds, steps=steps)
    summary["table"] = {"cw_grpo": {START_KEY: [start, 0.0]}, "clip_cov": {START_KEY: [start, 0.0]}}
    return summary


LATER = {"cw_grpo": {"pass@1 end": {"3": 0.9, "4": 0.3, "5": 0.5}},
         "clip_cov": {"pass@1 end": {"3": 0.0, "4": 0.4, "5": 0.2}}}


def test_pooled_figures_by_hand():
    """Seeds 1-3 (FIGURES) with 3-5 (LATER): seed 3 is taken once, from the summary of the first seed, so the pass@1
    differences are +0.1, 0, +0.2 (seeds 1-3) and -0.1, +0.3 (4, 5): mean +0.1, sd sqrt(0.1 / 4) = 0.158, t on 4 df =
    0.1 / (0.158 / sqrt 5) = sqrt 2, two-sided p = 0.2302; the figures only the first keeps come from it alone."""
    later, first = ("b.json", _figures_of(3, 3, LATER)), ("a.json", _figures_of(1, 3, FIGURES))
    merged = pooled_figures([later, first], "cw_grpo", "clip_cov")
    assert merged["figures_by_seed"]["cw_grpo"]["pass@1 end"] == {"1": 0.5, "2": 0.6, "3": 0.7, "4": 0.3, "5": 0.5}
    rows = {r["figure"]: r for r in figure_rows(merged, "cw_grpo", "clip_cov")}
    p1 = rows["pass@1 end"]
    assert (p1["mean"], p1["seeds"], p1["above"], p1["below"]) == (pytest.approx(0.1), 5, 3, 1)
    assert p1["p"] == pytest.approx(0.230200, abs=1e-6)
    assert p1["method"] == pytest.approx(0.52) and p1["base"] == pytest.approx(0.42)
    assert rows["entropy (last 20%)"]["seeds"] == 1  # only seeds 1-3 keep it, and both methods only seed 1
    with pytest.raises(ValueError, match="b.json: not of a.json's experiment .settings .* build 0.52"):
        pooled_figures([first, ("b.json", _figures_of(4, 2, LATER, start=0.52))], "cw_grpo", "clip_cov")
    with pytest.raises(ValueError, match="b.json: not of a.json's experiment .settings .None, 100, 64, None."):
        pooled_figures([first, ("b.json", _figures_of(4, 2, LATER, steps=100))], "cw_grpo", "clip_cov")
    with pytest.raises(ValueError, match="b.json: this summary keeps no figures by seed"):
        pooled_figures([first, ("b.json", {**_figures_of(4, 2, LATER), "figures_by_seed": {}})], "cw_grpo", "clip_cov")
    with pytest.raises(ValueError, match="b.json: 'clip_cov' is not a method of this summary .it has cw_grpo.$"):
        pooled_figures([first, ("b.json", _figures_of(4, 2, {"cw_grpo": LATER["cw_grpo"]}))], "cw_grpo", "clip_cov")
    with pytest.raises(ValueError, match="b.json: 'cw_grpo' is not a method of this summary .it has clip_cov.$"):
        pooled_figures([first, ("b.json", _figures_of(4, 2, {"clip_cov": LATER["clip_cov"]}))], "cw_grpo", "clip_cov")


def test_pooled_figures_on_the_command_line(tmp_path, capsys):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(_figures_of(1, 3, FIGURES)))
    b.write_text(json.dumps(_figures_of(3, 3, LATER)))
    assert main([str(b), str(a), "--figures", "cw_grpo,clip_cov", "--pool"]) == 0
    out = capsys.readouterr().out
    merged = pooled_figures([(str(a), _figures_of(1, 3, FIGURES)), (str(b), _figures_of(3, 3, LATER))], "cw_grpo",
                            "clip_cov")
    assert out.startswith(f"{b} + {a} taken together: cw_grpo against clip_cov\n\n{FIGURES_NOTE}\n")
    assert figures_markdown(figure_rows(merged, "cw_grpo", "clip_cov"), "cw_grpo", "clip_cov") in out
    b.write_text(json.dumps(_figures_of(4, 2, LATER, start=0.52)))
    assert main([str(a), str(b), "--figures", "cw_grpo,clip_cov", "--pool"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and f"{b}: not of {a}'s experiment" in captured.err
