"""Verifiable math rewards: answer extraction, equivalence, format and length-shaped rewards.

- Extraction (ACR paper, App. A.3): the last ``\\boxed{...}`` (nested braces), else "The answer is ...", else the
  last number.
- Equivalence: math-verify (LaTeX/expression parsing, sets, intervals, units normalisation) with a SymPy fallback
  and a 1e-6 numeric tolerance.
- Format rewards: ``<think>...</think><answer>...</answer>`` (CW-GRPO paper, Sec. 3 setup), the ``\\n</think>\\n``
  delimiter (AAPO paper, App. C), a boxed final answer.
- Cosine-scaled accuracy (AAPO paper, App. C, Eq. 9-10) and weighted combinations (AAPO Alg. 1).

Hostile input never hangs a reward worker and never raises: answers longer than :data:`MAX_ANSWER_CHARS`, nested
deeper than :data:`MAX_DEPTH`, or with exponent towers are compared as normalised strings only; math-verify's own
signal-based timeouts are used on the main thread and switched off elsewhere (signals only work there), where the
input guards bound the work instead.
"""

from __future__ import annotations

import math
import re
import threading
from typing import Any, Optional

#: Longest extracted answer handed to a symbolic parser.
MAX_ANSWER_CHARS = 200
#: Deepest brace/parenthesis nesting handed to a symbolic parser.
MAX_DEPTH = 12
#: Longest response scanned for an answer (the tail is kept: answers come last).
MAX_RESPONSE_CHARS = 20_000
NUMERIC_TOL = 1e-6

_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:/\d+)?|-?\.\d+")
_ANSWER_IS = re.compile(r"answer is[:\s]*\$?([^\n$]+?)\$?\s*(?:\.\s|\.$|$|\n)", re.IGNORECASE)
_TOWER = re.compile(r"(\^|\*\*)[^+\-*/=]*(\^|\*\*)")
_BIG_POWER = re.compile(r"(\^|\*\*)\s*\{?\s*\d{4,}")


def _last_boxed(text: str) -> Optional[str]:
    """Content of the last ``\\boxed{...}`` / ``\\fbox{...}`` with balanced nested braces, or None."""
    start = max(text.rfind("\\boxed"), text.rfind("\\fbox"))
    if start < 0:
        return None
    i = text.find("{", start)
    if i < 0:
        rest = text[start + len("\\boxed") :].strip()  # "\boxed 5"
        return rest.split()[0] if rest else None
    depth = 0
    for j in range(i, len(text)):
        c = text[j]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return text[i + 1 : j]
    return None


def extract_answer(response: str) -> Optional[str]:
    """The final answer of a response: last boxed, else "The answer is ...", else the last number (App. A.3)."""
    if not isinstance(response, str) or not response:
        return None
    text = response[-MAX_RESPONSE_CHARS:]
    if "<answer>" in text:
        inner = text[text.rfind("<answer>") + len("<answer>") :].split("</answer>")[0]
        boxed = _last_boxed(inner)
        return (boxed if boxed is not None else inner).strip() or None
    boxed = _last_boxed(text)
    if boxed is not None:
        return boxed.strip()
    matches = _ANSWER_IS.findall(text)
    if matches:
        return matches[-1].strip()
    numbers = _NUMBER.findall(text)
    return numbers[-1].replace(",", "") if numbers else None


def _normalise(s: str) -> str:
    s = s.strip().strip("$").strip()
    s = re.sub(r"\\(?:text|mathrm|mbox)\{([^{}]*)\}", r"\1", s)
    s = re.sub(r"\\[,;:! ]|\\left|\\right|\s+", "", s)
    s = s.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac").replace("^\\circ", "").replace("^{\\circ}", "")
    s = s.replace("\\%", "").replace("%", "").rstrip(".")
    return s


def _depth(s: str) -> int:
    depth = best = 0
    for c in s:
        if c in "{([":
            depth += 1
            best = max(best, depth)
        elif c in "})]":
            depth -= 1
    return best


def _parsable(s: str) -> bool:
    return len(s) <= MAX_ANSWER_CHARS and _depth(s) <= MAX_DEPTH and not _TOWER.search(s) and not _BIG_POWER.search(s)


def _to_float(s: str) -> Optional[float]:
    s = _normalise(s).replace(",", "")
    m = re.fullmatch(r"\\frac\{(-?\d+(?:\.\d+)?)\}\{(-?\d+(?:\.\d+)?)\}", s) or re.fullmatch(
        r"(-?\d+(?:\.\d+)?)/(-?\d+(?:\.\d+)?)", s
    )
    try:
        if m:
            return float(m.group(1)) / float(m.group(2))
        return float(s)
    except (ValueError, ZeroDivisionError):
        return None


def _math_verify(pred: str, gold: str) -> Optional[bool]:
    try:
        from math_verify import parse, verify
    except ImportError:  # pragma: no cover
        return None
    main = threading.current_thread() is threading.main_thread()
    timeout = 3 if main else None
    try:
        g = parse(f"${gold}$", parsing_timeout=timeout)
        p = parse(f"${pred}$", parsing_timeout=timeout)
        if not g or not p:
            return None
        return bool(verify(g, p, timeout_seconds=timeout))
    except Exception:
        return None


def _sympy_equal(pred: str, gold: str) -> Optional[bool]:
    try:
        import sympy
        from sympy.parsing.sympy_parser import parse_expr, standard_transformations

        def conv(s: str):
            s = _normalise(s)
            s = re.sub(r"\\frac\{([^{}]*)\}\{([^{}]*)\}", r"((\1)/(\2))", s)
            s = re.sub(r"\\sqrt\{([^{}]*)\}", r"sqrt(\1)", s).replace("\\pi", "pi").replace("^", "**")
            s = s.replace("\\cdot", "*").replace("\\times", "*")
            if "\\" in s:
                raise ValueError(s)
            return parse_expr(s, transformations=standard_transformations, evaluate=True)

        diff = sympy.simplify(conv(pred) - conv(gold))
        value = complex(sympy.N(diff))
        return abs(value) <= NUMERIC_TOL
    except Exception:
        return None


def is_equivalent(pred: Optional[str], gold: Any) -> bool:
    """Whether answer ``pred`` equals ``gold``: string match after normalisation, numeric within 1e-6, then
    math-verify, then SymPy. Never raises; hostile input falls back to the string comparison."""
    try:
        if pred is None or gold is None:
            return False
        gold = str(gold)
        gold_boxed = _last_boxed(gold)
        gold = gold_boxed if gold_boxed is not None else gold
        a, b = _normalise(str(pred)), _normalise(gold)
        if a == b:
            return True
        if not (_parsable(a) and _parsable(b)):
            return False
        fa, fb = _to_float(a), _to_float(b)
        if fa is not None and fb is not None:
            return math.isclose(fa, fb, rel_tol=NUMERIC_TOL, abs_tol=NUMERIC_TOL)
        verdict = _math_verify(str(pred), gold)
        if verdict is None or verdict is False:
            sym = _sympy_equal(str(pred), gold)
            return bool(sym) if sym is not None else bool(verdict)
        return True
    except Exception:
        return False


def accuracy_reward(response: str, ground_truth: Any) -> float:
    """1.0 when the extracted answer equals the ground truth, else 0.0."""
    return 1.0 if is_equivalent(extract_answer(response), ground_truth) else 0.0


_THINK_ANSWER = re.compile(r"^\s*<think>.*?</think>\s*<answer>.*?</answer>\s*$", re.DOTALL)


def format_reward_think_answer(response: str) -> float:
    """1.0 for ``<think>...</think><answer>...</answer>`` with exactly one pair of each tag (CW-GRPO setup)."""
    if not isinstance(response, str) or len(response) > 4 * MAX_RESPONSE_CHARS:
        return 0.0
    counts = [response.count(t) for t in ("<think>", "</think>", "<answer>", "</answer>")]
    return 1.0 if counts == [1, 1, 1, 1] and _THINK_ANSWER.match(response) else 0.0


def format_reward_think_delimiter(response: str) -> float:
    """1.0 when the response contains the ``\\n</think>\\n`` delimiter (AAPO paper, App. C format reward)."""
    return 1.0 if isinstance(response, str) and "\n</think>\n" in response else 0.0


def format_reward_boxed(response: str) -> float:
    """1.0 when the response ends its reasoning with a ``\\boxed{...}`` answer."""
    return 1.0 if isinstance(response, str) and _last_boxed(response[-MAX_RESPONSE_CHARS:]) is not None else 0.0


def cosine_scaled_accuracy(
    correct: bool,
    length: int,
    max_length: int = 1000,
    min_value_correct: float = 0.5,
    max_value_correct: float = 1.0,
    min_value_wrong: float = -1.0,
    max_value_wrong: float = -0.5,
) -> float:
    """Cosine-scaled accuracy (AAPO paper, App. C, Eq. 9-10): correct answers earn more when shorter, wrong ones are
    penalised less when longer. ``l / L`` is clipped to 1. Defaults are the widely used open-source values (the
    paper does not list its alphas)."""
    progress = min(max(length, 0) / max(max_length, 1), 1.0)
    cos = math.cos(math.pi * progress)
    if correct:
        return min_value_correct + 0.5 * (max_value_correct - min_value_correct) * (1.0 + cos)
    return max_value_wrong + 0.5 * (min_value_wrong - max_value_wrong) * (1.0 + cos)


#: Weighted reward recipes: name -> {component: weight} (AAPO App. C: format 1 + cosine 2 for the 1.5B run).
REWARD_RECIPES: dict[str, dict[str, float]] = {
    "accuracy": {"accuracy": 1.0},
    "accuracy_format": {"accuracy": 1.0, "format_think_answer": 1.0},
    "aapo_1p5b": {"format_think_delimiter": 1.0, "cosine_scaled_accuracy": 2.0},
}


def compute_score(
    data_source: Any = None,
    solution_str: str = "",
    ground_truth: Any = None,
    extra_info: Optional[dict] = None,
    recipe: str = "accuracy",
    weights: Optional[dict] = None,
    max_length: int = 1000,
    **kwargs: Any,
) -> dict[str, float]:
    """verl custom reward function: ``reward.custom_reward_function.path=<this file>`` (``name=compute_score``),
    options through ``reward.custom_reward_function.reward_kwargs`` (``recipe``, ``weights``, ``max_length``).

    Returns:
        ``{"score": weighted sum, "acc": 0/1, <component>: value, ...}``: verl logs the extra keys.
    """
    try:
        weights = dict(weights) if weights else dict(REWARD_RECIPES[recipe])
    except KeyError:
        raise ValueError(f"unknown reward recipe {recipe!r}; known: {sorted(REWARD_RECIPES)}") from None
    correct = accuracy_reward(solution_str, ground_truth) > 0
    length = (extra_info or {}).get("response_length") or len(solution_str or "")
    components = {
        "accuracy": float(correct),
        "format_think_answer": format_reward_think_answer(solution_str),
        "format_think_delimiter": format_reward_think_delimiter(solution_str),
        "format_boxed": format_reward_boxed(solution_str),
        "cosine_scaled_accuracy": cosine_scaled_accuracy(correct, int(length), max_length),
    }
    unknown = set(weights) - set(components)
    if unknown:
        raise ValueError(f"unknown reward component(s) {sorted(unknown)}; known: {sorted(components)}")
    score = sum(w * components[k] for k, w in weights.items())
    return {"score": float(score), "acc": float(correct), **{k: components[k] for k in weights}}
