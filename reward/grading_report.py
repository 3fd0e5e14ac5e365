"""Grading agreement: our reward, math-verify alone and verl's default scorer against a labelled set.

``python -m reward.grading_report [--pairs tests/fixtures/grading/pairs.jsonl] [--out benchmarks/grading_agreement.json]``

Each row of the labelled set is ``{"form", "source", "ground_truth", "response", "correct"}`` (where each answer form
comes from: ``tests/fixtures/grading/README.md``). A scorer agrees on a row when its verdict (score > 0) equals
``correct``. Scorers:

- ``ours``: :func:`reward.math_reward.compute_score` (``recipe=accuracy``: last ``\\boxed{}``, else ``<answer>``,
  "The answer is", last number; ACR paper 000 App. A.3);
- ``math_verify``: ``math_verify.verify(parse("$gt$"), parse(response))`` with math-verify's default extraction on the
  whole response (its expression extraction calls ``parse_expr``: run here on our own fixture text only);
- ``verl_math``: ``verl.utils.reward_score.default_compute_score("lighteval/MATH", ...)`` (verl's ``math_reward``);
- ``verl_math_dapo``: ``default_compute_score("math_dapo", ...)`` (verl's ``math_dapo``, the DAPO scorer).

Prints one table (overall and per form) and writes it as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
from collections import defaultdict
from typing import Callable

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_PAIRS = os.path.join(_ROOT, "tests", "fixtures", "grading", "pairs.jsonl")
DEFAULT_OUT = os.path.join(_ROOT, "benchmarks", "grading_agreement.json")


def load_pairs(path: str = DEFAULT_PAIRS) -> list[dict]:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def _ours(gt: str, response: str) -> bool:
    from reward.math_reward import compute_score

    return compute_score("lighteval/MATH", response, gt)["acc"] > 0


def _math_verify(gt: str, response: str) -> bool:
    from math_verify import parse, verify

    try:
        gold = parse(f"${gt}$") or parse(gt)
        return bool(verify(gold, parse(response)))
    except Exception:
        return False


def _verl(data_source: str) -> Callable[[str, str], bool]:
    def score(gt: str, response: str) -> bool:
        from verl.utils.reward_score import default_compute_score

        try:
            out = default_compute_score(data_source, response, gt)
        except Exception:
            return False
        value = out["score"] if isinstance(out, dict) else out
        return float(value) > 0

    return score


SCORERS: dict[str, Callable[[str, str], bool]] = {
    "ours": _ours,
    "math_verify": _math_verify,
    "verl_math": _verl("lighteval/MATH"),
    "verl_math_dapo": _verl("math_dapo"),
}


def agreement(pairs: list[dict], scorers: dict[str, Callable[[str, str], bool]] = SCORERS) -> dict:
    """Per scorer: agreeing rows overall and per form, and the rows it gets wrong."""
    out: dict = {"rows": len(pairs), "correct_rows": sum(bool(p["correct"]) for p in pairs), "scorers": {}}
    for name, fn in scorers.items():
        by_form: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        wrong = []
        for p in pairs:
            verdict = fn(p["ground_truth"], p["response"])
            ok = verdict == bool(p["correct"])
            by_form[p["form"]][0] += ok
            by_form[p["form"]][1] += 1
            if not ok:
                wrong.append({k: p[k] for k in ("form", "ground_truth", "response", "correct")})
        agree = sum(a for a, _ in by_form.values())
        out["scorers"][name] = {
            "agree": agree,
            "accuracy": agree / len(pairs),
            "false_positives": sum(not w["correct"] for w in wrong),
            "false_negatives": sum(bool(w["correct"]) for w in wrong),
            "by_form": {f: {"agree": a, "rows": n} for f, (a, n) in sorted(by_form.items())},
            "wrong": wrong,
        }
    return out


def table(result: dict) -> str:
    names = list(result["scorers"])
    forms = list(next(iter(result["scorers"].values()))["by_form"])
    lines = ["| form | rows | " + " | ".join(names) + " |", "| --- | --- | " + " | ".join("---" for _ in names) + " |"]
    for f in forms:
        n = result["scorers"][names[0]]["by_form"][f]["rows"]
        cells = [str(result["scorers"][s]["by_form"][f]["agree"]) for s in names]
        lines.append(f"| {f} | {n} | " + " | ".join(cells) + " |")
    cells = [f"**{result['scorers'][s]['agree']} ({100 * result['scorers'][s]['accuracy']:.1f}%)**" for s in names]
    lines.append(f"| all | {result['rows']} | " + " | ".join(cells) + " |")
    cells = [f"{result['scorers'][s]['false_positives']} / {result['scorers'][s]['false_negatives']}" for s in names]
    lines.append("| wrong: false pos. / false neg. | | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", default=DEFAULT_PAIRS)
    parser.add_argument("--out", default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    result = agreement(load_pairs(args.pairs))
    print(table(result))
    for name, r in result["scorers"].items():
        if name == "ours":
            for w in r["wrong"]:
                print(f"ours wrong: {w}")
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1, ensure_ascii=False)
            f.write("\n")
    return result


if __name__ == "__main__":
    main()
