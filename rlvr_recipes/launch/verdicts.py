"""The verdicts of several comparisons side by side: each claim of ``launch.compare``'s report, one column per
comparison, and on how many disjoint seed sets it came out held or did not hold.

One comparison's verdict is one test at the 5 % level; a verdict that comes out the same way on seed sets that share
no seed is a replication, one that comes out once, or both ways, is not. This reads the ``summary.json`` that
``launch.compare`` writes for each comparison, or a rescoring's JSON that holds the same ``setup`` and ``claims``
(``benchmarks/lab_fresh_prompts.py --by-seed``: the runs scored again at a larger k), trains and scores nothing, and
prints Markdown tables:

    python -m rlvr_recipes.launch.verdicts runs/lab/summary.json runs/lab_replication/summary.json

The first table has a line per claim: on how many seed sets it held, did not hold and was tested, what they say
together (:func:`reading`: replicated, decided once, both ways or never decided) and, with ``--pool``, each planned
pooling's verdict. The second has a column per comparison. A cell gives the verdict and the p-value of the
comparison's test (``held``, ``did not hold``, ``-`` for cannot be judged; empty when the comparison did not test the
claim). The last column counts the seed sets: comparisons whose seeds overlap count as one (their runs share seeds, so
they are not independent evidence), and so do comparisons on the same seeds. With ``--pool`` a third table tests each
claim of two methods once on the seeds of all the comparisons that made it alike (same settings, same build of the
task, paired by seed), taken together (:func:`pooled`); ``--planned A.json,B.json`` names a pooling planned before the
last of its comparisons ran, and the table marks its rows planned and every other row not (``A.json,B.json:METHOD``:
only the claims of METHOD against its base were planned, :class:`PlannedPooling`; ``A.json+B.json``: A had been read
before the plan added B's seeds to it, so the pooling is the second look at A's claims and decides only at Pocock's
level for two looks, :data:`POCOCK_LEVEL`). ``--probe P.json`` adds a
last table, the claims of a measurement that trains no run (``benchmarks/lab_entropy_probe.py``: one update's effect
on entropy, or the final models' entropy on held-out prompts), one row each (:func:`probe_rows`). With ``--publish
DOC`` the tables and the command that wrote them go into DOC between :data:`PUBLISH_START` and :data:`PUBLISH_END`.

``--figures METHOD,BASE`` prints, instead, every figure each summary keeps by seed compared seed by seed for two of
its methods (:func:`figure_rows`: the figures a report quotes beside its claims, each with its paired test):

    python -m rlvr_recipes.launch.verdicts benchmarks/lab_cw_clip_cov_237_summary.json --figures cw_grpo,clip_cov

With ``--pool`` it prints one table of the figures of all the summaries' seeds taken together, where they are of one
experiment (:func:`pooled_figures`); such a test is a later look at any figure one of the summaries was read for, and
the level to read it at is the reader's (:data:`POCOCK_LEVEL`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
from typing import Any, NamedTuple, Optional, Sequence

#: the ledger's place in a document (``--publish``)
PUBLISH_START = "<!-- verdicts: start (written by launch.verdicts --publish; edits inside are lost) -->"
PUBLISH_END = "<!-- verdicts: end -->"
#: a setup's keys that change what a run computes: comparisons that differ in one are not runs of one experiment
#: (launch.verdicts --pool) nor replays of each other (launch.replay)
SETTINGS = ("task", "steps", "passk_samples", "overrides")
#: the values a paired claim keeps for each seed's difference, method minus base (launch.compare's ``claims``)
DIFFERENCE = "difference by seed"
#: a verdict of launch.compare's report and how a cell writes it
SHORT = {"held": "held", "did not hold": "did not hold", "cannot be judged": "-"}
_P_VALUE = re.compile(r"\bp = ([0-9.]+(?:e[-+]?\d+)?)")


def seed_set(summary: dict[str, Any]) -> frozenset[int]:
    """The seeds of a comparison: its ``setup``'s ``seed_list`` where it names them, else ``first_seed`` ..
    ``first_seed + seeds - 1`` (a summary written before ``--first-seed`` existed has none: its seeds start at 0)."""
    setup = summary["setup"]
    if "seed_list" in setup:
        return frozenset(int(s) for s in setup["seed_list"])
    first = setup.get("first_seed") or 0
    return frozenset(range(first, first + int(setup["seeds"])))


def seed_label(seeds: frozenset[int]) -> str:
    """The seeds as runs of consecutive seeds joined by commas: ``"5-9"``, ``"1,3"``, ``"50-57,60-62"``."""
    spans: list[list[int]] = []
    for s in sorted(seeds):
        if spans and s == spans[-1][1] + 1:
            spans[-1][1] = s
        else:
            spans.append([s, s])
    return ",".join(str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in spans)


def count_seed_sets(sets: Sequence[frozenset[int]]) -> int:
    """How many groups the seed sets fall into when sets that share a seed are joined (transitively): the number of
    independent seed sets among them."""
    groups: list[set[int]] = []
    for s in sets:
        joined = [g for g in groups if g & s]
        merged = set(s).union(*joined)
        groups = [g for g in groups if not g & s] + [merged]
    return len(groups)


def p_value(evidence: str) -> Optional[str]:
    """The p-value a claim's evidence names (``"p = 0.0194"`` -> ``"0.0194"``), or None (ACR against G has none)."""
    found = _P_VALUE.search(evidence)
    return found.group(1) if found else None


def cell(claim: dict[str, Any]) -> str:
    """One claim's verdict in one comparison, with its p-value: ``"did not hold (p 0.004)"``, ``"- (p 0.31)"``."""
    verdict = claim["verdict"]
    if verdict not in SHORT:
        raise ValueError(f"claim {claim['claim']!r}: unknown verdict {verdict!r} (expected one of {sorted(SHORT)})")
    p = p_value(claim.get("evidence", ""))
    return SHORT[verdict] + (f" (p {p})" if p else "")


def ledger(summaries: Sequence[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """Each claim of the ``(name, summary)`` comparisons, their columns ordered by first seed (then name).

    Returns ``{"columns": [{"name", "seeds", "methods", "steps", "passk_samples", "test"}], "rows": [{"claim",
    "source", "cells": [str per column, "" where not tested], "held", "did not hold", "tested"}]}``, the last three
    the number of independent seed sets (:func:`count_seed_sets`) on which the claim held, did not hold, and was
    tested. Rows come in the order in which claims first appear, reading the columns from the one with most claims.

    Raises:
        ValueError: a summary without claims or seeds, naming it.
    """
    checked = []
    for name, summary in summaries:
        if not (isinstance(summary, dict) and summary.get("claims") and isinstance(summary.get("setup"), dict)
                and "seeds" in summary["setup"]):
            raise ValueError(f"{name}: not a launch.compare summary with claims and setup.seeds")
        checked.append((name, summary))
    checked.sort(key=lambda ns: (min(seed_set(ns[1])), ns[0]))
    columns, by_claim = [], {}
    for name, summary in checked:
        setup = summary["setup"]
        evidence = " ".join(c.get("evidence", "") for c in summary["claims"])
        columns.append({"name": name, "seeds": seed_set(summary), "methods": len(setup.get("methods", [])),
                        "steps": setup.get("steps"), "passk_samples": setup.get("passk_samples"),
                        "test": "paired t-test by seed" if "paired t-test" in evidence else "Welch's t-test"})
    for i, (_, summary) in sorted(enumerate(checked), key=lambda ic: -len(ic[1][1]["claims"])):
        for claim in summary["claims"]:
            row = by_claim.setdefault(claim["claim"], {"claim": claim["claim"], "source": claim.get("source", ""),
                                                       "cells": [""] * len(checked), "by_verdict": {}})
            row["cells"][i] = cell(claim)
            row["by_verdict"].setdefault(claim["verdict"], []).append(columns[i]["seeds"])
    rows = []
    for row in by_claim.values():  # in the order the claims were first met
        by_verdict = row.pop("by_verdict")
        rows.append({**row, "held": count_seed_sets(by_verdict.get("held", [])),
                     "did not hold": count_seed_sets(by_verdict.get("did not hold", [])),
                     "tested": count_seed_sets([s for sets in by_verdict.values() for s in sets])})
    return {"columns": columns, "rows": rows}


def markdown(table: dict[str, Any]) -> str:
    """The ledger as Markdown: the table, then one line per column naming its summary and settings."""
    columns = table["columns"]
    head = ["claim", "paper", *(f"seeds {seed_label(c['seeds'])}" for c in columns),
            "seed sets: held / did not hold / tested"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in table["rows"]:
        count = f"{row['held']} / {row['did not hold']} / {row['tested']}"
        lines.append("| " + " | ".join([row["claim"], row["source"], *row["cells"], count]) + " |")
    lines += ["", "`held`, `did not hold`: the 95 % interval lies on the claimed side of 0, or on the other; `-`: "
              "it holds 0 (cannot be judged); p is the test's two-sided p-value; an empty cell: not tested there. "
              "Comparisons whose seeds overlap count as one seed set.", ""]
    for c in columns:
        lines.append(f"- seeds {seed_label(c['seeds'])}: `{c['name']}`, {c['methods']} methods x {len(c['seeds'])} "
                     f"seeds, {c['steps']} steps, pass@k to {c['passk_samples']}, {c['test']}")
    return "\n".join(lines) + "\n"


def reading(row: dict[str, Any]) -> str:
    """What a claim's seed sets say together, from the ledger's counts (:func:`ledger`): ``replicated: held`` (or
    ``did not hold``) where it came out so on two seed sets that share no seed and never the other way, ``decided
    once: held`` (or ``did not hold``) where one seed set decided it, ``both ways``, or ``never decided``."""
    held, against = row["held"], row["did not hold"]
    if held and against:
        return "both ways"
    if held or against:
        verdict = "held" if held else "did not hold"
        return f"{'replicated' if max(held, against) >= 2 else 'decided once'}: {verdict}"
    return "never decided"


#: what the first table is, below it
GLANCE_NOTE = ("\n`reading`: what a claim's seed sets say together, counted as in the last column of the table "
               "below: replicated where it came out the same way on two seed sets that share no seed and never the "
               "other way, decided once where one seed set decided it, both ways, or never decided. `planned "
               "pooling`: the verdict of each pooling of seed sets named before its last comparison ran "
               "(`--planned`; the pooled table below), with the look it is where seed sets in it had been read "
               "before the plan (`look 2`: decided only at Pocock's level for two looks). Seed set by seed set, each "
               "comparison a column:\n\n")


def _look(row: dict[str, Any]) -> str:
    """``", look K"`` for a planned pooled row that is a later look at its claim (:func:`sequential_verdict`), else
    empty."""
    return f", look {row['looks']}" if (row.get("looks") or 1) > 1 else ""


def glance_markdown(table: dict[str, Any], pooled_rows: Optional[Sequence[dict[str, Any]]] = None) -> str:
    """One line per claim of the ledger (:func:`ledger`), in its order: the seed sets' counts and their
    :func:`reading`, and with ``pooled_rows`` (:func:`pooled`) the verdict of each planned pooling of the claim."""
    head = ["claim", "paper", "seed sets: held / did not hold / tested", "reading"]
    if pooled_rows is not None:
        head.append("planned pooling")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in table["rows"]:
        cells = [row["claim"], row["source"], f"{row['held']} / {row['did not hold']} / {row['tested']}", reading(row)]
        if pooled_rows is not None:
            cells.append("; ".join(f"{seed_label(r['seeds'])}{_look(r)}: {cell(r)}" for r in pooled_rows
                                   if r["planned"] and r["claim"] == row["claim"]))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n" + GLANCE_NOTE


#: where a rescoring's summary (``benchmarks/lab_fresh_prompts.py --by-seed``), which has no table, records the build
#: of the comparison whose runs it scored
START_KEY = "held-out acc, start"


def start_accuracy(summary: dict[str, Any]) -> Optional[float]:
    """The initial model's held-out greedy accuracy in a summary's table (every method starts from it), else in its
    ``setup`` (:data:`START_KEY`, a rescoring's), rounded to 4 digits, or None: it tells one build of the task from
    another (floating-point reductions differ between CPUs)."""
    starts = [row[START_KEY][0] for row in (summary.get("table") or {}).values() if START_KEY in row]
    if not starts and summary.get("setup", {}).get(START_KEY) is not None:
        starts = [summary["setup"][START_KEY]]
    return round(float(starts[0]), 4) if starts else None


def claimed_higher(claims: Sequence[dict[str, Any]]) -> Optional[bool]:
    """Whether a paired claim says the method's figure lies above the base's: its ``higher`` where a summary records
    it, else read off a decided verdict (``held``: the mean difference has the claimed sign; ``did not hold``: the
    other), else None."""
    for claim in claims:
        if "higher" in claim:
            return bool(claim["higher"])
    for claim in claims:
        diffs = [float(d) for d in claim["values"][DIFFERENCE].values()]
        mean = sum(diffs) / len(diffs) if diffs else 0.0
        if claim["verdict"] in ("held", "did not hold") and mean != 0.0:
            return (mean > 0) == (claim["verdict"] == "held")
    return None


class PlannedPooling(NamedTuple):
    """A pooling named before the last of its comparisons ran (``--planned [A.json,...+]B.json,...[:METHOD]``): the
    summaries taken together, by name, the method whose claims the plan was about (the first method of a claim:
    ``agrae`` in "agrae keeps entropy above grpo"), or None where it was about every claim they make alike, and
    ``earlier``, those of the summaries whose verdicts had been read before the plan was made (the names before ``+``):
    each was a look at the claims it holds (:data:`POCOCK_LEVEL`)."""

    names: tuple[str, ...]
    method: Optional[str] = None
    earlier: tuple[str, ...] = ()


#: Pocock's nominal two-sided level for each of K looks at a claim, equally spaced, that keeps the chance of deciding
#: a true null at any of them to 5 % (Pocock 1977, Biometrika 64:191; Jennison and Turnbull 2000, Table 2.1:
#: critical values 2.178, 2.289, 2.361, 2.413): a planned pooling that adds seeds to seed sets read before the plan is
#: the K-th look at the claims they hold, K - 1 of them read before, and decides only where its p lies below this.
#: The 5 % is for z-tests at equally spaced looks; at the lab's unequal looks of few seeds, each a t-test, the chance
#: is 5.1 % to 6.1 % (benchmarks/lab_sequential_levels.py, docs/lab.md "Later looks at a claim")
POCOCK_LEVEL = {1: 0.05, 2: 0.0294, 3: 0.0221, 4: 0.0182, 5: 0.0158}


def sequential_verdict(verdict: str, evidence: str, p: float, looks: int) -> tuple[str, str]:
    """A pooled verdict (``compare.diff_verdict``'s, at the 5 % level) read as the ``looks``-th look at its claim:
    kept where ``p`` lies below :data:`POCOCK_LEVEL`'s level for that many looks, else ``cannot be judged``; the
    evidence says which look it is and whether the level was reached. One look leaves both as they are.

    Raises:
        ValueError: more looks than :data:`POCOCK_LEVEL` holds a level for, naming them.
    """
    if looks == 1:
        return verdict, evidence
    if looks not in POCOCK_LEVEL:
        raise ValueError(f"{looks} looks at one claim: Pocock's level is given here for 1 to {max(POCOCK_LEVEL)}")
    level = POCOCK_LEVEL[looks]
    reached = p < level
    evidence += (f"; look {looks} at this claim, {looks - 1} of its seed sets read before the plan: Pocock's level "
                 f"for {looks} looks, p < {level:g}, {'reached' if reached else 'not reached'}")
    return (verdict if reached else "cannot be judged"), evidence


def _experiment(summary: dict[str, Any]) -> tuple[str, Optional[float]]:
    """What makes comparisons runs of one experiment, to be taken together: their :data:`SETTINGS` and their build
    (:func:`start_accuracy`)."""
    return json.dumps([summary["setup"].get(k) for k in SETTINGS]), start_accuracy(summary)


def _by_first_seed(summaries: Sequence[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """``(name, summary)`` pairs in the order seeds are taken when they are pooled: by first seed, then name."""
    return sorted(summaries, key=lambda ns: (min(seed_set(ns[1])), ns[0]))


def _pooled_row(title: str, made: Sequence[tuple[str, dict[str, Any]]], methods: list[str], higher: bool,
                planned: bool, earlier: frozenset[str] = frozenset()) -> Optional[dict[str, Any]]:
    """One claim tested on the seeds of the ``made`` comparisons taken together (a seed they share is taken once,
    from the first), or None when fewer than two of them add a seed. A planned row is the ``1 + k``-th look at its
    claim where ``k`` of the comparisons that add seeds are ``earlier`` (read before the plan): its verdict is then
    :func:`sequential_verdict`'s; ``looks`` is None in a row not planned."""
    from rlvr_recipes.launch.compare import diff_verdict, paired_change

    a, b, names = {}, {}, []
    for name, claim in made:
        values = claim["values"]
        new = [s for s in values[DIFFERENCE] if s not in a and s in values[methods[0]] and s in values[methods[1]]]
        if new:
            names.append(name)
        for s in new:
            a[s], b[s] = float(values[methods[0]][s]), float(values[methods[1]][s])
    if len(names) < 2:
        return None
    seeds = sorted(a, key=int)
    verdict, evidence = diff_verdict([a[s] for s in seeds], [b[s] for s in seeds], higher, paired=True)
    looks = 1 + len({_base(n) for n in names} & earlier) if planned else None
    if looks is not None and looks > 1:
        p = paired_change([a[s] - b[s] for s in seeds])["p"]
        verdict, evidence = sequential_verdict(verdict, evidence, p, looks)
    return {"claim": title, "source": made[0][1].get("source", ""), "seeds": frozenset(int(s) for s in seeds),
            "comparisons": names, "planned": planned, "looks": looks, "verdict": verdict, "evidence": evidence}


def pooled(summaries: Sequence[tuple[str, dict[str, Any]]],
           planned: Sequence[PlannedPooling] = ()) -> list[dict[str, Any]]:
    """Each claim of two methods tested once on the seeds of every comparison that made it alike, taken together,
    and once on each planned pooling of some of them.

    Comparisons are alike when they agree in :data:`SETTINGS`, start from one build (:func:`start_accuracy`) and
    tested the claim paired by seed (their values keep :data:`DIFFERENCE`). A seed that two of them share is taken
    once, from the first by first seed. The test is the one each comparison made, on all the seeds' pairs:
    ``compare.diff_verdict`` paired (a t-test on n - 1 df of the per-seed differences). Claims made alike by only one
    comparison are left out.

    ``planned`` names the poolings that were planned before the last of their comparisons ran (``--planned``:
    :class:`PlannedPooling`, summaries matched by file name). A pooling taken after the runs, or one that adds seeds
    to a planned one after it came out, is not a test at the 5 % level; the rows say which is which. A claim's
    comparisons that form a planned pooling (two or more of them) get its row, planned, where the plan names no method
    or the claim's method; all its alike comparisons get a row too, unplanned, unless they add no seed to a planned
    one. A planned pooling that adds seeds to comparisons read before the plan (:class:`PlannedPooling`'s
    ``earlier``) is a later look at their claims, decided at Pocock's level (:func:`sequential_verdict`).

    Returns one row per claim, experiment and pooling, in the order claims are first met, planned rows first:
    ``{"claim", "source", "seeds", "comparisons", "planned", "looks", "verdict", "evidence"}``, ``seeds`` the frozenset
    taken, ``comparisons`` the names they came from, ``looks`` the look a planned row is (None in the others).

    Raises:
        ValueError: a plan names a method that is the method of no paired claim its summaries make, naming both.
    """
    plans = [(frozenset(_base(n) for n in plan.names), plan.method, frozenset(_base(n) for n in plan.earlier))
             for plan in planned]
    groups: dict[tuple, list[tuple[str, dict[str, Any]]]] = {}
    for name, summary in _by_first_seed(summaries):
        experiment = _experiment(summary)
        for claim in summary["claims"]:
            values = claim.get("values") or {}
            if isinstance(values.get(DIFFERENCE), dict):
                groups.setdefault((claim["claim"], experiment), []).append((name, claim))
    rows = []
    for (title, _), made in groups.items():
        higher = claimed_higher([claim for _, claim in made])
        methods = [k for k in made[0][1]["values"] if k != DIFFERENCE][:2]
        if len(made) < 2 or higher is None or len(methods) != 2:
            continue
        made = [(n, c) for n, c in made if [k for k in c["values"] if k != DIFFERENCE][:2] == methods]
        everyone = frozenset(_base(n) for n, _ in made)
        pools = {}  # each planned pooling of these comparisons, once, with the names read before its plan
        for plan, method, earlier in plans:
            if method in (None, methods[0]) and len(plan & everyone) >= 2:
                pools.setdefault(plan & everyone, (True, earlier))
        pools.setdefault(everyone, (False, frozenset()))
        taken = set()  # the seeds of the rows made: a pooling of all that adds no seed to a planned one is that one
        for pool, (is_planned, earlier) in pools.items():
            row = _pooled_row(title, [(n, c) for n, c in made if _base(n) in pool], methods, higher, is_planned,
                              earlier)
            if row is not None and row["seeds"] not in taken:
                rows.append(row)
                taken.add(row["seeds"])
    for names, method, _ in plans:
        if method is not None and not any(_base(name) in names and _claim_method(claim) == method
                                          for name, summary in summaries for claim in summary["claims"]):
            raise ValueError(f"--planned {','.join(sorted(names))}:{method}: no paired claim of these summaries is "
                             f"{method}'s")
    return rows


def _claim_method(claim: dict[str, Any]) -> Optional[str]:
    """The method a paired claim is about (the first of its values' methods), or None for a claim not paired by
    seed."""
    values = claim.get("values") or {}
    if not isinstance(values.get(DIFFERENCE), dict):
        return None
    return next((k for k in values if k != DIFFERENCE), None)


def _base(name: str) -> str:
    """A summary's file name: how ``--planned`` names it, whichever folder the command gave."""
    return os.path.basename(name)


#: what the pooled table is, above it (``--pool``)
POOLED_HEADING = ("\nSeed sets taken together (`--pool`): each claim of two methods tested once on all the seeds of "
                  "the comparisons that made it with the same settings and the same build of the task, by the paired "
                  "t-test each of them used. `planned`: yes where the pooling was named (`--planned`) before the last "
                  "of its comparisons ran, so that its verdict is one test at the 5 % level; `look K` where K - 1 of "
                  "its seed sets had been read before the plan added seeds to them, so that it decides only where p "
                  "lies below Pocock's level for K looks (0.0294 for two, 0.0221 for three), which keeps the chance of "
                  "deciding a claim where the methods do not differ, at any of the looks, to about 5 % (to 5 % at "
                  "equally spaced looks of many seeds; benchmarks/lab_sequential_levels.py measures it at the looks "
                  "of a plan); no where the comparisons were taken together after they ran, or seeds were added to a "
                  "planned pooling after it came out, which is not such a test.\n\n")


def pooled_markdown(rows: Sequence[dict[str, Any]]) -> str:
    """The pooled rows (:func:`pooled`) as a Markdown table, a line per claim and pooling."""
    if not rows:
        return "No claim was tested alike by two comparisons.\n"
    lines = ["| claim | paper | seeds | comparisons | planned | verdict | evidence |", "|---|---|---|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {row['claim']} | {row['source']} | {seed_label(row['seeds'])} | {len(row['comparisons'])} | "
                     f"{('yes' + _look(row)) if row['planned'] else 'no'} | {cell(row)} | {row['evidence']} |")
    return "\n".join(lines) + "\n"


#: what the probes' table is, above it (``--probe``)
PROBES_HEADING = ("\nMeasured without training a run (`--probe`): each claim of a probe's JSON, tested by the paired "
                  "t-test over the units its `seeds` column names. A unit is what the probe's command pairs: a batch "
                  "of prompts drawn with that seed and one update on it from the warm start, or a run of that seed "
                  "(its final model, or one update from it averaged over its batches). These claims are about one "
                  "update or the final models, not about the runs' training curves, so they are neither counted "
                  "with the seed sets above nor pooled.\n\n")


def probe_rows(probes: Sequence[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Each claim of the ``(name, probe)`` JSONs that ``benchmarks/lab_entropy_probe.py`` writes, in their order.

    A probe holds the ``command`` that wrote it and ``claims`` in ``launch.compare``'s form, each paired over the units
    its :data:`DIFFERENCE` values name (batch seeds, or the seeds of the runs whose models were probed).

    Returns one row per claim: ``{"claim", "source", "probe", "seeds", "verdict", "evidence"}``, ``probe`` the file
    name, ``seeds`` the frozenset of units.

    Raises:
        ValueError: a file without a command and claims, or a claim without its figures by unit, naming it.
    """
    rows = []
    for name, probe in probes:
        if not (isinstance(probe, dict) and probe.get("claims") and isinstance(probe.get("command"), str)):
            raise ValueError(f"{name}: not a probe's JSON with a command and claims")
        for claim in probe["claims"]:
            units = (claim.get("values") or {}).get(DIFFERENCE)
            if not isinstance(units, dict) or not units:
                raise ValueError(f"{name}: claim {claim.get('claim')!r} keeps no {DIFFERENCE!r}")
            rows.append({"claim": claim["claim"], "source": claim.get("source", ""), "probe": _base(name),
                         "seeds": frozenset(int(u) for u in units), "verdict": claim["verdict"],
                         "evidence": claim.get("evidence", "")})
    return rows


def probes_markdown(rows: Sequence[dict[str, Any]]) -> str:
    """The probes' rows (:func:`probe_rows`) as a Markdown table, a line per claim."""
    lines = ["| claim | paper | probe | seeds | verdict | evidence |", "|---|---|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {row['claim']} | {row['source']} | `{row['probe']}` | {seed_label(row['seeds'])} | "
                     f"{cell(row)} | {row['evidence']} |")
    return "\n".join(lines) + "\n"


#: what a table of figures (``--figures``) says it is
FIGURES_NOTE = ("Each figure the summary keeps by seed (`figures_by_seed`), compared seed by seed on the seeds both "
                "methods ran: the first method minus the second, its 95 % interval and the two-sided p of the paired "
                "t-test (n - 1 df). These are figures, not the report's claims: each is one test at the 5 % level, "
                "and a table of them makes many.")


def _figures_by_seed(summary: dict[str, Any], method: str, base: str) -> dict[str, dict[str, dict[str, Any]]]:
    """A summary's ``figures_by_seed``, raising ValueError where it keeps none (written before they were kept) or
    none of ``method`` or ``base``, naming the methods it has."""
    by_seed = summary.get("figures_by_seed")
    if not by_seed:
        raise ValueError("this summary keeps no figures by seed (figures_by_seed): it was written before "
                         "launch.compare kept them")
    for m in (method, base):
        if m not in by_seed:
            raise ValueError(f"{m!r} is not a method of this summary (it has {', '.join(by_seed)})")
    return by_seed


def figure_rows(summary: dict[str, Any], method: str, base: str) -> list[dict[str, Any]]:
    """Every figure a summary keeps by seed (``launch.compare``'s ``figures_by_seed``: ``{method: {figure: {seed:
    value}}}``) for two of its methods, compared seed by seed: ``method`` minus ``base`` on the seeds where both kept a
    value, by ``compare.paired_change`` (mean, 95 % interval, p of the paired t-test on n - 1 df).

    Returns one row per figure of ``method``'s, in its order: ``{"figure", "method", "base", "mean", "low", "high",
    "p", "above", "below", "seeds"}``, ``method`` and ``base`` the two means over those seeds, ``above`` and
    ``below`` how many differences lie above and below 0, ``seeds`` how many were paired (a figure no seed pairs is
    left out).

    Raises:
        ValueError: a summary that keeps no figures by seed (written before they were kept), or a method it did not
            run, naming the methods it has.
    """
    from rlvr_recipes.launch.compare import paired_change

    by_seed = _figures_by_seed(summary, method, base)
    rows = []
    for figure, mine in by_seed[method].items():
        theirs = by_seed[base].get(figure, {})
        seeds = sorted(set(mine) & set(theirs), key=int)
        if not seeds:
            continue
        diffs = [float(mine[s]) - float(theirs[s]) for s in seeds]
        change = paired_change(diffs)
        rows.append({"figure": figure, "method": sum(float(mine[s]) for s in seeds) / len(seeds),
                     "base": sum(float(theirs[s]) for s in seeds) / len(seeds), "mean": change["mean"],
                     "low": change["low"], "high": change["high"], "p": change["p"],
                     "above": sum(d > 0 for d in diffs), "below": sum(d < 0 for d in diffs), "seeds": len(seeds)})
    return rows


def pooled_figures(summaries: Sequence[tuple[str, dict[str, Any]]], method: str, base: str) -> dict[str, Any]:
    """Several summaries of one experiment, each of which ran ``method`` and ``base``, as one summary with their
    figures by seed taken together, for :func:`figure_rows` (``--figures METHOD,BASE --pool``): the seeds of all of
    them, a seed that two share taken once, from the first by first seed, as :func:`pooled` takes a claim's.

    Returns ``{"figures_by_seed": {method: {figure: {seed: value}}}}``.

    Raises:
        ValueError: a summary that differs from the first in :data:`SETTINGS` or in its build (:func:`start_accuracy`),
            one that keeps no figures by seed, or one without figures of ``method`` or ``base``, naming it.
    """
    ordered = _by_first_seed(summaries)
    first_name, first = ordered[0]
    experiment = _experiment(first)
    merged: dict[str, dict[str, dict[str, Any]]] = {}
    taken: set[str] = set()
    for name, summary in ordered:
        mine = _experiment(summary)
        if mine != experiment:
            raise ValueError(f"{name}: not of {first_name}'s experiment (settings {json.loads(mine[0])}, build "
                             f"{mine[1]}; {first_name}: {json.loads(experiment[0])}, {experiment[1]}): their figures "
                             "are not taken together")
        try:
            by_seed = _figures_by_seed(summary, method, base)
        except ValueError as exc:
            raise ValueError(f"{name}: {exc}") from None
        new = {str(s) for figures in by_seed.values() for values in figures.values() for s in values} - taken
        for ran, figures in by_seed.items():
            for figure, values in figures.items():
                merged.setdefault(ran, {}).setdefault(figure, {}).update(
                    {str(s): v for s, v in values.items() if str(s) in new})
        taken |= new
    return {"figures_by_seed": merged}


def figures_markdown(rows: Sequence[dict[str, Any]], method: str, base: str) -> str:
    """:func:`figure_rows` as a Markdown table, a line per figure."""
    lines = [f"| figure | {method} | {base} | difference | 95 % interval | p | seeds above / below / paired |",
             "|---|---:|---:|---:|---|---:|---|"]
    for r in rows:
        lines.append(f"| {r['figure']} | {r['method']:.4g} | {r['base']:.4g} | {r['mean']:+.4g} | "
                     f"[{r['low']:+.4g}, {r['high']:+.4g}] | {r['p']:.3g} | {r['above']} / {r['below']} / "
                     f"{r['seeds']} |")
    return "\n".join(lines) + "\n"


def planned_poolings(specs: Sequence[str], names: Optional[Sequence[str]] = None) -> list[PlannedPooling]:
    """``--planned`` values as :class:`PlannedPooling`: comma-separated summary names, those read before the plan
    first and ``+`` after them where there are any, then optionally ``:METHOD``. ``names``: the summaries the command
    was given, which every pooling must be among (None: the plans name the summaries themselves, as for
    ``benchmarks/lab_sequential_levels.py``).

    Raises:
        ValueError: a pooling of fewer than two summaries, one naming a summary the command was not given, one whose
            ``:`` has no method after it, or one with more than one ``+`` or nothing on a side of it, naming it.
    """
    given = None if names is None else {_base(n) for n in names}
    plans = []
    for spec in specs:
        files, colon, method = spec.partition(":")
        if colon and not method:
            raise ValueError(f"--planned {spec!r}: name the method after ':', or leave ':' out for every claim")
        before, plus, after = files.rpartition("+")
        earlier = [p for p in before.split(",") if p]
        if plus and ("+" in before or not earlier or not after.strip(",")):
            raise ValueError(f"--planned {spec!r}: one '+', after the summaries read before the plan and before "
                             "those it added")
        plan = [*earlier, *(p for p in after.split(",") if p)]
        if len(set(map(_base, plan))) < 2:
            raise ValueError(f"--planned {spec!r}: a pooling names two summaries or more, comma-separated")
        missing = [] if given is None else [p for p in plan if _base(p) not in given]
        if missing:
            raise ValueError(f"--planned {spec!r}: {', '.join(missing)} is not among the summaries given")
        plans.append(PlannedPooling(tuple(plan), method or None, tuple(earlier)))
    return plans


def publish(text: str, doc: str) -> None:
    """Write ``text`` into ``doc`` between :data:`PUBLISH_START` and :data:`PUBLISH_END`.

    Raises:
        ValueError: ``doc`` is missing or lacks the two markers in that order, naming it.
    """
    from rlvr_recipes.launch.compare import write_between_markers

    write_between_markers(doc, text, PUBLISH_START, PUBLISH_END, what="table")


def read_summaries(paths: Sequence[str]) -> list[tuple[str, dict[str, Any]]]:
    """``(path, its JSON)`` for each path (summaries, or probes' JSONs); raises ValueError naming a file that is
    missing or not JSON."""
    out = []
    for path in paths:
        try:
            with open(path) as f:
                out.append((path, json.load(f)))
        except (OSError, json.JSONDecodeError) as exc:
            raise ValueError(f"{path}: {exc}") from exc
    return out


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("summaries", nargs="+",
                        help="summary.json files written by launch.compare (or JSONs with the same setup and claims)")
    parser.add_argument("--publish", metavar="DOC", default=None,
                        help="write the table into DOC between its verdicts markers, after the command that wrote it")
    parser.add_argument("--pool", action="store_true",
                        help="also test each paired claim once on the seeds of all the comparisons that made it alike; "
                             "with --figures: one table of the figures of all the summaries' seeds taken together "
                             "(summaries of one experiment: same settings and build)")
    parser.add_argument("--planned", metavar="[A.json+]B.json,C.json[:METHOD]", action="append", default=[],
                        help="with --pool: these summaries' comparisons were planned to be taken together before the "
                             "last of them ran, for METHOD's claims only where given (repeat for each such pooling); "
                             "their pooled rows are marked planned; the summaries before '+' had been read before the "
                             "plan, so the pooling is a later look at their claims, decided at Pocock's level")
    parser.add_argument("--probe", metavar="P.json", action="append", default=[],
                        help="a measurement that trains no run (benchmarks/lab_entropy_probe.py's JSON): its claims "
                             "in a last table (repeat for each)")
    parser.add_argument("--figures", metavar="METHOD,BASE", default=None,
                        help="instead of the verdicts: every figure each summary keeps by seed, METHOD against BASE, "
                             "compared seed by seed (paired t-test), a table per summary")
    args = parser.parse_args(argv)
    try:
        if args.figures is not None:
            methods = [m for m in args.figures.split(",") if m]
            if len(methods) != 2:
                raise ValueError(f"--figures {args.figures!r}: give two methods, METHOD,BASE")
            others = [flag for flag, given in (("--publish", args.publish), ("--planned", args.planned),
                                               ("--probe", args.probe)) if given]
            if others:
                raise ValueError(f"--figures prints the figures instead of the verdicts: leave out {', '.join(others)}")
            summaries = read_summaries(args.summaries)
            if args.pool:
                if len(summaries) < 2:
                    raise ValueError("--figures with --pool takes the figures of two summaries or more together")
                summaries = [(" + ".join(name for name, _ in summaries) + " taken together",
                              pooled_figures(summaries, *methods))]
            tables = []
            for name, summary in summaries:
                try:
                    tables.append((name, figure_rows(summary, *methods)))
                except ValueError as exc:
                    raise ValueError(f"{name}: {exc}") from None
            for name, rows in tables:
                print(f"{name}: {methods[0]} against {methods[1]}\n\n{FIGURES_NOTE}\n\n"
                      f"{figures_markdown(rows, *methods)}")
            return 0
        if args.planned and not args.pool:
            raise ValueError("--planned marks rows of the pooled table: give --pool with it")
        plans = planned_poolings(args.planned, args.summaries)
        summaries = read_summaries(args.summaries)
        table = ledger(summaries)
        pooled_rows = pooled(summaries, plans) if args.pool else None
        text = glance_markdown(table, pooled_rows) + markdown(table)
        if pooled_rows is not None:
            text += POOLED_HEADING + pooled_markdown(pooled_rows)
        if args.probe:
            text += PROBES_HEADING + probes_markdown(probe_rows(read_summaries(args.probe)))
        if args.publish:
            command = "python -m rlvr_recipes.launch.verdicts " + " ".join(
                [*(shlex.quote(p) for p in args.summaries), *(["--pool"] if args.pool else []),
                 *(f"--planned {shlex.quote(p)}" for p in args.planned),
                 *(f"--probe {shlex.quote(p)}" for p in args.probe)])
            publish(f"`{command}`\n\n{text}", args.publish)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(text, end="")
    if args.publish:
        print(f"[verdicts] table written into {args.publish}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
