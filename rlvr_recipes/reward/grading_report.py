"""Grading agreement: this package's reward, math-verify alone and verl's scorers against a labelled set.

``python -m rlvr_recipes.reward.grading_report [--pairs PATH] [--scorers ours,math_verify,...] [--out PATH]``

The labelled set (default :data:`DEFAULT_PAIRS`, shipped with the package) holds one JSON object per line:
``{"id", "kind", "gold", "response", "expected", "source", "split"}``. ``expected`` is the verdict a careful grader
gives; ``source`` says where it comes from (a public verifier's test case, with repository, file and line, or
"hand-labelled: <reason>"). ``split`` is ``dev`` (used to develop the grader) or ``heldout`` (only measured); it was
fixed before the grader was changed, by the seeded rule in :data:`SPLIT_RULE`. The older 98-row set of
``tests/fixtures/grading/pairs.jsonl`` (fields ``form``, ``ground_truth``, ``correct``) is read too, as one split
``all``.

A scorer agrees on a row when its verdict (score > 0) equals ``expected``; a false positive is a wrong answer scored
right, a false negative a right answer scored wrong. Scorers:

- ``ours``: :func:`rlvr_recipes.reward.math_reward.compute_score` (``recipe=accuracy``);
- ``math_verify``: ``math_verify.verify(parse("$gold$"), parse(response))`` with math-verify's default extraction on
  the whole response (its expression extraction calls ``parse_expr``, i.e. ``eval``: run here on this fixed set
  only, never in the reward);
- ``verl_math``: ``verl.utils.reward_score.default_compute_score("lighteval/MATH", ...)`` (verl's ``math_reward``);
- ``verl_math_dapo``: ``default_compute_score("math_dapo", ...)`` (the DAPO scorer);
- ``verl_prime_math``: ``default_compute_score("numina_olympiads", ...)`` (verl's ``prime_math``);
- ``verl_math_verify``: ``verl.utils.reward_score.math_verify.compute_score`` (verl's math-verify wrapper).

Prints one table per split (rows per kind, agreement, false positives / false negatives) and writes the figures,
with every row a scorer gets wrong, as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import defaultdict
from typing import Callable, Iterable, Optional

from rlvr_recipes import IMPORT_ROOT

DEFAULT_PAIRS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "grading_pairs.jsonl")
DEFAULT_OUT = os.path.join(IMPORT_ROOT, "benchmarks", "grading_agreement.json")
#: How the rows of :data:`DEFAULT_PAIRS` were split (before any grading change; never re-drawn).
SPLIT_RULE = (
    'within each kind, rows ordered by sha256("rlvr-grading-split-v1:" + id); the first ceil(0.45 n) are heldout'
)
_FIELDS = ("id", "kind", "gold", "response", "expected", "source", "split")


def _row(raw: dict, path: str, line: int) -> dict:
    """One labelled row in the current schema (the older ``form``/``ground_truth``/``correct`` rows are mapped)."""
    if "ground_truth" in raw and "gold" not in raw:
        raw = {
            "id": f"row-{line}", "kind": raw.get("form"), "gold": raw.get("ground_truth"),
            "response": raw.get("response"), "expected": raw.get("correct"), "source": raw.get("source"),
            "split": "all",
        }
    missing = [k for k in _FIELDS if k not in raw]
    if missing:
        raise ValueError(f"{path}:{line}: labelled row lacks {missing}")
    if not isinstance(raw["expected"], bool):
        raise ValueError(f"{path}:{line}: 'expected' must be true or false, got {raw['expected']!r}")
    if not all(isinstance(raw[k], str) for k in ("id", "kind", "gold", "response", "source", "split")):
        raise ValueError(f"{path}:{line}: id, kind, gold, response, source and split must be strings")
    return {k: raw[k] for k in _FIELDS}


def load_pairs(path: str = DEFAULT_PAIRS) -> list[dict]:
    """The labelled rows of ``path``; a malformed row raises ``ValueError`` naming the file and line."""
    rows = []
    with open(path) as f:
        for line, text in enumerate(f, 1):
            if text.strip():
                try:
                    raw = json.loads(text)
                except json.JSONDecodeError as e:
                    raise ValueError(f"{path}:{line}: not JSON ({e})") from e
                rows.append(_row(raw, path, line))
    ids = [r["id"] for r in rows]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{path}: repeated ids {sorted({i for i in ids if ids.count(i) > 1})}")
    return rows


def _ours(gold: str, response: str) -> bool:
    from rlvr_recipes.reward.math_reward import compute_score

    return compute_score("lighteval/MATH", response, gold)["acc"] > 0


def _math_verify(gold: str, response: str) -> bool:
    from math_verify import parse, verify

    try:
        gold_parsed = parse(f"${gold}$") or parse(gold)
        return bool(verify(gold_parsed, parse(response)))
    except Exception:
        return False


def _verl(data_source: str) -> Callable[[str, str], bool]:
    def score(gold: str, response: str) -> bool:
        from verl.utils.reward_score import default_compute_score

        try:
            out = default_compute_score(data_source, response, gold)
        except Exception:
            return False
        value = out["score"] if isinstance(out, dict) else out
        return float(value) > 0

    return score


def _verl_math_verify(gold: str, response: str) -> bool:
    from verl.utils.reward_score import math_verify as verl_math_verify

    try:
        return float(verl_math_verify.compute_score(response, gold)) > 0
    except Exception:
        return False


SCORERS: dict[str, Callable[[str, str], bool]] = {
    "ours": _ours,
    "math_verify": _math_verify,
    "verl_math": _verl("lighteval/MATH"),
    "verl_math_dapo": _verl("math_dapo"),
    "verl_prime_math": _verl("numina_olympiads"),
    "verl_math_verify": _verl_math_verify,
}


def _tally(rows: Iterable[dict], verdicts: dict[str, bool]) -> dict:
    """Agreement, false positives and false negatives of ``verdicts`` (id -> verdict) on ``rows``, overall and per kind."""
    rows = list(rows)
    by_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    fp = fn = 0
    for r in rows:
        ok = verdicts[r["id"]] == r["expected"]
        by_kind[r["kind"]][0] += ok
        by_kind[r["kind"]][1] += 1
        if not ok:
            fp += not r["expected"]
            fn += r["expected"]
    n = len(rows)
    negatives = sum(not r["expected"] for r in rows)
    return {
        "rows": n,
        "agree": n - fp - fn,
        "accuracy": (n - fp - fn) / n if n else 0.0,
        "false_positives": fp,
        "false_negatives": fn,
        "false_positive_rate": fp / n if n else 0.0,  # over all rows
        "false_positives_of_wrong": fp / negatives if negatives else 0.0,  # over the rows whose answer is wrong
        "by_kind": {k: {"agree": a, "rows": m} for k, (a, m) in sorted(by_kind.items())},
    }


def agreement(pairs: list[dict], scorers: Optional[dict[str, Callable[[str, str], bool]]] = None) -> dict:
    """Per scorer and per split: agreement, false positives and negatives, per kind; the rows it gets wrong; its
    slowest verdict in seconds."""
    scorers = SCORERS if scorers is None else scorers
    splits = sorted({p["split"] for p in pairs})
    out: dict = {"rows": len(pairs), "split_rule": SPLIT_RULE, "splits": {}, "scorers": {}}
    for s in splits:
        part = [p for p in pairs if p["split"] == s]
        out["splits"][s] = {"rows": len(part), "expected_right": sum(p["expected"] for p in part)}
    for name, fn in scorers.items():
        verdicts, slowest = {}, 0.0
        for p in pairs:
            start = time.perf_counter()
            verdicts[p["id"]] = bool(fn(p["gold"], p["response"]))
            slowest = max(slowest, time.perf_counter() - start)
        result = {s: _tally((p for p in pairs if p["split"] == s), verdicts) for s in splits}
        result["slowest_verdict_s"] = round(slowest, 3)
        result["wrong"] = [
            {k: p[k] for k in ("id", "split", "kind", "gold", "response", "expected")}
            for p in pairs
            if verdicts[p["id"]] != p["expected"]
        ]
        out["scorers"][name] = result
    return out


def table(result: dict, split: str) -> str:
    """A markdown table of one split: rows per kind, agreeing rows per scorer, totals and false pos. / false neg."""
    names = list(result["scorers"])
    first = result["scorers"][names[0]][split]
    lines = [
        f"{split}: {first['rows']} rows",
        "| kind | rows | " + " | ".join(names) + " |",
        "| --- | --- | " + " | ".join("---" for _ in names) + " |",
    ]
    for kind, cell in first["by_kind"].items():
        cells = [str(result["scorers"][s][split]["by_kind"][kind]["agree"]) for s in names]
        lines.append(f"| {kind} | {cell['rows']} | " + " | ".join(cells) + " |")
    cells = [
        f"**{result['scorers'][s][split]['agree']} ({100 * result['scorers'][s][split]['accuracy']:.1f}%)**"
        for s in names
    ]
    lines.append(f"| all | {first['rows']} | " + " | ".join(cells) + " |")
    cells = [
        f"{result['scorers'][s][split]['false_positives']} / {result['scorers'][s][split]['false_negatives']}"
        for s in names
    ]
    lines.append("| wrong: false pos. / false neg. | | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", default=DEFAULT_PAIRS)
    parser.add_argument("--scorers", default=",".join(SCORERS), help=f"comma-separated, of {list(SCORERS)}")
    parser.add_argument("--out", default=DEFAULT_OUT, help="JSON output ('' for none)")
    parser.add_argument("--show-wrong", default="ours", help="print the rows these scorers get wrong ('' for none)")
    args = parser.parse_args(argv)
    names = [n for n in args.scorers.split(",") if n]
    unknown = sorted(set(names) - set(SCORERS))
    if unknown:
        parser.error(f"unknown scorer(s) {unknown}; known: {list(SCORERS)}")
    result = agreement(load_pairs(args.pairs), {n: SCORERS[n] for n in names})
    for split in result["splits"]:
        print(table(result, split) + "\n")
    for name in (n for n in args.show_wrong.split(",") if n in result["scorers"]):
        for w in result["scorers"][name]["wrong"]:
            print(f"{name} wrong: {json.dumps(w, ensure_ascii=False)[:400]}")
    print("slowest verdict (s): " + ", ".join(f"{n} {r['slowest_verdict_s']}" for n, r in result["scorers"].items()))
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1, ensure_ascii=False)
            f.write("\n")
    return result


if __name__ == "__main__":
    main()
