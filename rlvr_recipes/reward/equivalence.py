"""Whether an extracted answer equals the ground truth.

Three stages, cheapest first (ACR paper 000, App. A.3: rule-based parsing, SymPy verification, 1e-6 tolerance):

1. normalised strings equal (``\\dfrac``/``\\frac``, ``\\left``/``\\right``, spacing, ``$``, ``\\text{}`` units,
   degrees, percent signs, thousands commas, a trailing period); word answers case-free (``\\text{Yes}`` = yes);
2. both plain numbers (integers, decimals, ``a/b``, ``\\frac{a}{b}``): exact for integers and fractions, within
   :data:`NUMERIC_TOL` (relative above 1, absolute below) when a decimal is involved; a decimal comma (``1,22``)
   against a decimal, while a comma and a space (``32, 349``) always separate list items;
3. symbolic: math-verify (sets, intervals, matrices, equations and inequalities, relations against intervals) and,
   where it says no, a SymPy fallback (numeric difference within :data:`NUMERIC_TOL`, or ``simplify(a - b) == 0``).

Before them, a multiple-choice ground truth (``C``, ``(C)``, ``\\text{(C)}``, ``(C) 18``) is matched by option letter,
a ground truth written as boxes or as a worked solution is reduced to its answer (:func:`gold_answer`), and lists
(``1, 2``; ``x = 3 \\text{ or } x = -3``) are matched item by item in any order before one symbolic set comparison.

Stage 3 runs in a killable worker process (:mod:`rlvr_recipes.reward.sandbox`) with a hard time limit, because math-verify's
own timeout uses ``signal.alarm``, which only works on a process's main thread, and verl's reward loop calls the
reward from worker threads. Before any symbolic work, answers longer than :data:`MAX_ANSWER_CHARS`, nested deeper
than :data:`MAX_NESTING`, with exponent towers or huge literal exponents are rejected outright. Where no worker
process can run (``RLVR_VERIFY_SANDBOX=0``, no ``fork``/``exec``), stage 3 runs in-process behind stricter guards,
with math-verify's signal timeouts on top on the main thread.

:func:`is_equivalent` never raises and returns ``False`` for anything it cannot decide in time.
"""

from __future__ import annotations

import functools
import logging
import math
import re
import signal
import threading
import time
from fractions import Fraction
from typing import Any, Optional, Union

from rlvr_recipes.reward import sandbox
from rlvr_recipes.reward.extract import boxed_group, extract_answer, last_boxed

#: Numeric tolerance of the ACR paper's verifier (App. A.3): relative above magnitude 1, absolute below.
NUMERIC_TOL = 1e-6
#: Longest normalised answer given to a symbolic parser.
MAX_ANSWER_CHARS = 512
#: Deepest ``{ ( [`` nesting given to a symbolic parser.
MAX_NESTING = 24
#: Largest literal exponent given to a symbolic parser (``10^{100000000}`` is refused).
MAX_EXPONENT = 10_000
#: Default hard limit on one symbolic comparison, seconds.
DEFAULT_TIMEOUT_S = 3.0

Number = Union[Fraction, float]
_TOL = Fraction(1, 10**6)

_WORKER_ENTRY = "rlvr_recipes.reward.equivalence:symbolic_equal"
#: A first comparison each worker runs before it takes requests (warms SymPy's and the LaTeX parser's caches).
SANDBOX_WARMUP = {"pred": "\\frac{\\sqrt{2}}{2}+x^2", "gold": "(x+1)^2 \\cup [1, 3)", "budget_s": 30.0}


class _DropDisabledTimeoutNotice(logging.Filter):
    """math-verify warns when its signal timeouts are off; here that is deliberate (the limit is enforced outside)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Timeout is disabled")


for _name in ("math_verify.parser", "math_verify.grader"):
    logging.getLogger(_name).addFilter(_DropDisabledTimeoutNotice())

# --------------------------------------------------------------------------------------------------------------
# normalisation

_TEXT_CMD = re.compile(r"\\(?:text|textbf|textit|textrm|textnormal|mathrm|mathbf|mbox|operatorname)\s*\{([^{}]*)\}")
_UNIT_WORDS = (
    r"(?:square\s+|sq\.?\s+|cubic\s+)?(?:units?|cm|mm|km|m|meters?|metres?|centimeters?|kilometers?|inches|inch|"
    r"in|feet|foot|ft|yards?|miles?|degrees?|deg|radians?|dollars?|cents?|hours?|hrs?|minutes?|mins?|seconds?|"
    r"secs?|s|days?|weeks?|months?|years?|kg|g|grams?|kilograms?|pounds?|lbs?|ounces?|oz|liters?|litres?|ml|"
    r"gallons?|mph|km/h|people|students|apples|cookies|marbles|pages|points)"
)
_TRAILING_UNIT = re.compile(r"^(-?[\d.,/]+|\\frac\{[^{}]*\}\{[^{}]*\})\s*(?:\\,|\\;|\\ |~)*\s*" + _UNIT_WORDS + r"\.?$")
_THOUSANDS = re.compile(r"^-?[1-9]\d{0,2}(?:,\d{3})+(?:\.\d+)?$")
#: ``1,22`` / ``3,5`` / ``0,111``: a decimal comma (not followed by exactly three digits, or after a lone 0), read as
#: such only against a non-integer decimal on the other side and never with a space after it (``1, 2`` is a list).
_DECIMAL_COMMA = re.compile(r"^-?(?:0,\d+|\d+,(?:\d{1,2}|\d{4,}))$")
#: ``32, 349``: a comma and a space between digits separate list items (never thousands, never a decimal comma).
_SPACED_COMMA = re.compile(r"\d\s*,\s+-?\d")
_ASSIGNMENT = re.compile(r"^[A-Za-z](?:_\{?\w+\}?)?=([^=<>]+)$")


def _strip_delimiters(s: str) -> str:
    s = s.strip()
    changed = True
    while changed and s:
        changed = False
        for left, right in (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")):
            if len(s) >= len(left) + len(right) and s.startswith(left) and s.endswith(right):
                s = s[len(left) : len(s) - len(right)].strip()
                changed = True
    return s


def normalise(answer: Any) -> str:
    """A canonical string form of an answer, for string and numeric comparison (never raises)."""
    s = _strip_delimiters(str(answer))
    boxed = last_boxed(s) if "\\boxed" in s or "\\fbox" in s else None
    if boxed is not None:
        s = _strip_delimiters(boxed)
    s = re.sub(r"\{,\}|,\\!\s*", ",", s)  # 32{,}349 and 32,\! 349 are thousands separators
    spaced_list = bool(_SPACED_COMMA.search(s))
    s = s.replace("\\displaystyle", "").replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    s = re.sub(r"\\left\b|\\right\b|\\!|\\,|\\;|\\:|\\ ", " ", s)
    s = s.replace("^{\\circ}", "").replace("^\\circ", "").replace("\\circ", "").replace("°", "")
    s = s.replace("\\%", "").replace("%", "").replace("\\$", "").replace("$", "")
    whole_text = re.fullmatch(r"\s*" + _TEXT_CMD.pattern + r"\s*", s)
    if whole_text:  # \text{Monday} -> Monday
        s = whole_text.group(1)
    s = re.sub(r"(?<=[\d}])\s*" + _TEXT_CMD.pattern + r"\s*$", "", s)  # 10\text{ cm} -> 10
    s = _TEXT_CMD.sub(r"\1", s)
    unit = _TRAILING_UNIT.match(s.strip())
    if unit:  # 12 inches -> 12
        s = unit.group(1)
    s = re.sub(r"\s+", "", s).rstrip(".")
    s = re.sub(r"\\frac(\d)(\d)", r"\\frac{\1}{\2}", s)  # \frac12 -> \frac{1}{2}
    if _THOUSANDS.match(s) and not spaced_list:  # "32, 349" is a list of two numbers, "32,349" one number
        s = s.replace(",", "")
    return s


def parse_number(s: str) -> Optional[tuple[Number, bool]]:
    """A normalised plain number as ``(value, exact)``; ``exact`` is False for decimals. None otherwise."""
    assignment = _ASSIGNMENT.match(s)
    if assignment:
        s = assignment.group(1)
    m = re.fullmatch(r"(-?)\\frac\{(-?\d+)\}\{(-?\d+)\}", s) or re.fullmatch(r"(-?)(-?\d+)/(-?\d+)", s)
    try:
        if m:
            value = Fraction(int(m.group(2)), int(m.group(3)))
            return (-value if m.group(1) else value), True
        if re.fullmatch(r"-?\d+", s):
            return Fraction(int(s)), True
        if re.fullmatch(r"-?(?:\d+\.\d*|\.\d+)(?:[eE][-+]?\d{1,3})?|-?\d+[eE][-+]?\d{1,3}", s):
            return Fraction(s), False
    except (ValueError, ZeroDivisionError, OverflowError):
        return None
    return None


def numbers_close(a: Number, b: Number, exact: bool = True) -> bool:
    """Equal if both are exact; else ``|a - b| <= NUMERIC_TOL * max(1, |b|)``."""
    if exact:
        return a == b
    a, b = Fraction(a), Fraction(b)  # exact arithmetic: no overflow for 1e999, no rounding at the boundary
    return abs(a - b) <= _TOL * max(Fraction(1), abs(b))


# --------------------------------------------------------------------------------------------------------------
# input guards


def _nesting(s: str) -> int:
    depth = best = 0
    for c in s:
        if c in "{([":
            depth += 1
            if depth > best:
                best = depth
        elif c in "})]":
            depth = max(0, depth - 1)
    return best


_BIG_EXPONENT = re.compile(r"(?:\^|\*\*)\s*\{?\s*\(?\s*-?(\d+)")
_NUMERIC_TOWER = re.compile(r"(\d+)\s*(?:\^|\*\*)\s*\{?\s*\(?\s*(\d+)\s*(?:\^|\*\*)\s*\{?\s*\(?\s*(\d+)")
_TOWER3 = re.compile(r"\^[^+\-*/=,;]*?\^[^+\-*/=,;]*?\^")
_TOWER2 = re.compile(r"\^[^+\-*/=,;]*?\^")
_BIG_FACTORIAL = re.compile(r"\d{3,}\s*!|\\(?:Gamma|prod|sum)\b")


def is_safe_for_symbolic(s: str, strict: bool = False) -> bool:
    """Whether ``s`` may be handed to a symbolic parser: short, shallow, no exponent towers or huge exponents.

    ``strict`` (used when no killable worker is available) also quarters the length, thirds
    the nesting, caps literal exponents at 100 and refuses two-level towers, factorials of 3+ digit numbers, sums
    and products.
    """
    max_chars, max_nesting, max_exponent = (MAX_ANSWER_CHARS, MAX_NESTING, MAX_EXPONENT)
    if strict:
        max_chars, max_nesting, max_exponent = (MAX_ANSWER_CHARS // 4, MAX_NESTING // 3, 100)
    if len(s) > max_chars or _nesting(s) > max_nesting or _TOWER3.search(s):
        return False
    for m in _BIG_EXPONENT.finditer(s):
        if len(m.group(1)) > 6 or int(m.group(1)) > max_exponent:
            return False
    for m in _NUMERIC_TOWER.finditer(s):  # a^b^c: b^c is the real exponent
        b, c = int(m.group(2)[:7]), int(m.group(3)[:7])
        if b > 1 and c * math.log10(b) > math.log10(max_exponent):
            return False
    if strict and (_TOWER2.search(s) or _BIG_FACTORIAL.search(s) or s.count("^") > 8):
        return False
    return True


# --------------------------------------------------------------------------------------------------------------
# symbolic comparison (runs in a worker process, or in-process as a fallback)


class _Alarm:
    """``signal.setitimer`` deadline on the main thread; a no-op elsewhere or when ``seconds`` is None.

    On expiry :class:`_Alarm.Expired` is raised in the running code and re-raised every 50 ms until the block is
    left: an exception raised inside a garbage-collector callback, or swallowed by a bare ``except`` in SymPy, would
    otherwise be lost. Callers catch ``Expired`` around the ``with`` block (it can surface from ``__exit__`` too).
    """

    class Expired(BaseException):
        pass

    def __init__(self, seconds: Optional[float]) -> None:
        self.seconds = seconds
        self.active = seconds is not None and threading.current_thread() is threading.main_thread()
        self.done = False

    def _fire(self, signum, frame):  # noqa: ARG002
        if self.done:
            return
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        raise _Alarm.Expired()

    def __enter__(self) -> "_Alarm":
        if self.active:
            self.previous = signal.signal(signal.SIGALRM, self._fire)
            signal.setitimer(signal.ITIMER_REAL, max(self.seconds, 0.01))
        return self

    def __exit__(self, *exc) -> None:
        self.done = True
        if self.active:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous)


#: Functions a plain-text answer may call (``sqrt(2)/2``, ``2*pi``), mapped to SymPy by :func:`_plain_to_sympy`.
_PLAIN_FUNCTIONS = ("sqrt", "sin", "cos", "tan", "log", "ln", "exp", "abs")
#: Largest integer literal and exponent a plain-text answer may contain.
_PLAIN_MAX_DIGITS = 60


def _plain_to_sympy(s: str):
    """A plain-text expression (``2*sqrt(3)``, ``x^2+1``, ``pi/4``) as a SymPy expression, or None.

    The string is only *parsed* (``ast.parse``, which builds a syntax tree and runs nothing); the tree is walked
    with a whitelist (numbers, single-letter or ``pi``/``e`` names, ``+ - * / ^ **``, calls of
    :data:`_PLAIN_FUNCTIONS`) and each node is built with SymPy's constructors. Attribute access, subscripts, other
    calls, strings, lambdas, comprehensions: None. No text ever reaches ``eval``, ``sympify`` or ``parse_expr``.
    """
    import ast

    import sympy

    if len(s) > MAX_ANSWER_CHARS or not re.fullmatch(r"[0-9A-Za-z_.+\-*/^() \t]*", s):
        return None
    try:
        tree = ast.parse(s.replace("^", "**"), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    functions = {
        "sqrt": sympy.sqrt, "sin": sympy.sin, "cos": sympy.cos, "tan": sympy.tan,
        "log": sympy.log, "ln": sympy.log, "exp": sympy.exp, "abs": sympy.Abs,
    }
    binary = {
        ast.Add: lambda a, b: sympy.Add(a, b),
        ast.Sub: lambda a, b: sympy.Add(a, sympy.Mul(-1, b)),
        ast.Mult: lambda a, b: sympy.Mul(a, b),
        ast.Div: lambda a, b: sympy.Mul(a, sympy.Pow(b, -1)),
    }

    def walk(node: ast.AST):
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            if len(repr(node.value)) > _PLAIN_MAX_DIGITS:
                raise ValueError("literal too long")
            return sympy.Integer(node.value) if isinstance(node.value, int) else sympy.Float(repr(node.value))
        if isinstance(node, ast.Name):
            if node.id == "pi":
                return sympy.pi
            if node.id == "e":
                return sympy.E
            if re.fullmatch(r"[A-Za-z]", node.id):
                return sympy.Symbol(node.id)
            raise ValueError(f"name {node.id!r}")
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            value = walk(node.operand)
            return sympy.Mul(-1, value) if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.BinOp) and type(node.op) in binary:
            return binary[type(node.op)](walk(node.left), walk(node.right))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            base, exponent = walk(node.left), walk(node.right)
            if exponent.is_Number and abs(exponent) > MAX_EXPONENT:
                raise ValueError("exponent too large")
            if base.is_Number and exponent.is_Number and abs(base) > 1:  # 9999**9999**...: bound the digits
                if float(abs(exponent)) * math.log10(float(abs(base))) > MAX_EXPONENT:
                    raise ValueError("power too large")
            return sympy.Pow(base, exponent)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in functions
            and len(node.args) == 1
            and not node.keywords
        ):
            return functions[node.func.id](walk(node.args[0]))
        raise ValueError(f"{type(node).__name__} is not allowed")

    try:
        return walk(tree.body)
    except (ValueError, TypeError, RecursionError, OverflowError, MemoryError):
        return None


def _to_sympy(s: str):
    """LaTeX through latex2sympy (a grammar-based parser, no ``eval``), else :func:`_plain_to_sympy`."""
    try:
        from latex2sympy2_extended import latex2sympy

        return latex2sympy(s)
    except Exception:
        pass
    if "\\" in s or "=" in s:
        return None
    return _plain_to_sympy(s)


def _sympy_equal(pred: str, gold: str) -> bool:
    """SymPy fallback: numeric difference within :data:`NUMERIC_TOL`, else ``simplify(a - b) == 0``."""
    import sympy

    a, b = _to_sympy(pred), _to_sympy(gold)
    if a is None or b is None:
        return False
    if not (isinstance(a, sympy.Expr) and isinstance(b, sympy.Expr)):
        return bool(a == b)
    if a.is_Rational and b.is_Rational:
        return bool(a == b)
    if not a.free_symbols and not b.free_symbols:
        # SymPy floats, not Python complex: 10^{10000} would overflow to inf, and inf <= 1e-6 * inf is True
        va, vb = sympy.N(a, 30), sympy.N(b, 30)
        if not (va.is_number and vb.is_number and va.is_finite and vb.is_finite):
            return bool(a == b)
        return bool(abs(va - vb) <= sympy.Float(NUMERIC_TOL) * sympy.Max(1, abs(vb)))
    return bool(sympy.simplify(a - b) == 0)


def symbolic_equal(pred: str, gold: str, budget_s: Optional[float] = None) -> bool:
    """math-verify's verdict, then the SymPy fallback (000 App. A.3). ``budget_s`` sets signal-based limits
    (math-verify's own and an alarm around SymPy) and must be None off the main thread."""
    from math_verify import LatexExtractionConfig, parse, verify

    on_main = threading.current_thread() is threading.main_thread()
    limited = budget_s is not None and on_main
    seconds = max(1, int(budget_s / 3)) if limited else None  # math-verify's alarms take whole seconds
    start = time.monotonic()
    # LaTeX extraction only: math-verify's ExprExtractionConfig hands plain text to sympy's parse_expr (eval).
    config = [LatexExtractionConfig()]
    gold_parsed = parse(f"${gold}$", extraction_config=config, parsing_timeout=seconds)
    pred_parsed = parse(f"${pred}$", extraction_config=config, parsing_timeout=seconds)
    if gold_parsed and pred_parsed and verify(gold_parsed, pred_parsed, timeout_seconds=seconds, allow_set_relation_comp=True):
        return True
    remaining = budget_s - (time.monotonic() - start) if limited else None
    if remaining is not None and remaining < 0.2 * budget_s:
        return False  # math-verify used the budget (its own timeouts fired): no time left for SymPy
    try:
        with _Alarm(remaining):
            return _sympy_equal(pred, gold)
    except _Alarm.Expired:
        return False


@functools.lru_cache(maxsize=65_536)
def _symbolic_cached(pred: str, gold: str, timeout_s: float) -> bool:
    """Symbolic verdict with a hard limit; raises :class:`sandbox.SandboxTimeout` (never cached) when late."""
    try:
        return bool(sandbox.call(_WORKER_ENTRY, {"pred": pred, "gold": gold, "budget_s": timeout_s}, timeout_s))
    except sandbox.SandboxUnavailable:
        pass
    # In-process fallback: the strict guards bound the work; on the main thread signal limits come on top (they are
    # best effort: a signal cannot interrupt one long C call, and one landing in a GC callback is lost).
    on_main = threading.current_thread() is threading.main_thread()
    if not (is_safe_for_symbolic(pred, strict=True) and is_safe_for_symbolic(gold, strict=True)):
        return False
    return symbolic_equal(pred, gold, budget_s=timeout_s if on_main else None)


def warm_up(workers: Optional[int] = None) -> int:
    """Start the verification workers now (they otherwise start on the first symbolic check, about 2 s each) and
    wait until they are warm; returns how many are (0 when worker processes are off or unavailable)."""
    if not sandbox.enabled():
        return 0
    try:
        return sandbox.pool(_WORKER_ENTRY).prestart(workers)
    except sandbox.SandboxUnavailable:
        return 0


# --------------------------------------------------------------------------------------------------------------
# public entry


def _as_golds(gold: Any) -> list[str]:
    if gold is None:
        return []
    if isinstance(gold, (list, tuple)) or type(gold).__name__ == "ndarray":
        return [str(g) for g in gold if g is not None]
    return [str(gold)]


def gold_answer(gold: str) -> str:
    """The answer a ground-truth string states: its final group of boxes (``\\boxed{1}\\boxed{2}`` -> ``1, 2``), the
    final answer of a worked solution, or the string itself."""
    if "\\boxed" in gold or "\\fbox" in gold:
        group = boxed_group(gold)
        if group:
            return ", ".join(group)
    if len(gold) > 80 and len(re.findall(r"(?<![\\A-Za-z])[A-Za-z]{3,}", gold)) >= 8:  # a worked solution, not an answer
        return extract_answer(gold) or gold
    return gold


#: A multiple-choice answer: ``C``, ``(C)``, ``\\text{(C)}``, ``\\textbf{(C) }18``, ``(C) 18``.
_CHOICE = re.compile(r"\(([A-E])\)|([A-E])(?=$|[:.)]|\s+(?![a-z]))")


def _choice(answer: str, strict: bool) -> Optional[str]:
    """The option letter an answer names, or None. ``strict``: the whole answer is a letter (a ground truth)."""
    s = _TEXT_CMD.sub(r"\1", _strip_delimiters(answer)).replace("\\ ", " ").replace("~", " ").strip().strip("*")
    s = re.sub(r"^\\(?:textbf|mathbf|text)\s*", "", s).strip("{} ")
    m = re.fullmatch(r"\(?([A-E])\)?", s) if strict else _CHOICE.match(s)
    if m is None and strict:
        m = re.fullmatch(r"\(([A-E])\)\s*\S.*", s)  # "(C) 18"
    return next((g for g in m.groups() if g), None) if m else None


#: List separators at the top level of an answer: commas, semicolons, "and", "or", ``\\quad``.
_LIST_WORDS = re.compile(r"\\text\{\s*(?:and|or)\s*\}|\\quad|\\qquad|\s(?:and|or)\s|;")


def split_list(answer: str) -> list[str]:
    """The items of a list answer (``1, 2``, ``x = 3 \\text{ or } x = -3``, ``(1,2), (2,1)``) split at top-level
    separators; a single item for anything else (intervals and tuples keep their inner commas)."""
    s = _strip_delimiters(answer)
    if parse_number(normalise(s)) is not None:  # 1,000,000 is one number
        return [s]
    if len(s) > MAX_ANSWER_CHARS or s.count(",") + s.count(";") + s.count("and") + s.count("or") > 64:
        return [s]
    s = _LIST_WORDS.sub(",", s)
    items, depth, current = [], 0, []
    i = 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s) and s[i + 1] in "{}":  # \{ \}: set braces nest like any other
            depth = depth + 1 if s[i + 1] == "{" else max(0, depth - 1)
            current.append(s[i : i + 2])
            i += 2
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth = max(0, depth - 1)
        if c == "," and depth == 0:
            items.append("".join(current))
            current = []
        else:
            current.append(c)
        i += 1
    items.append("".join(current))
    items = [re.sub(r"^\s*[A-Za-z](?:_\{?\w+\}?)?\s*=\s*", "", x).strip() for x in items]  # "x = 3" -> "3"
    return [x for x in items if x.strip(" ,.$")] or [s]


_CLOCK = re.compile(r"\d{1,2}:\d{2}")


def _is_plain(answer: str) -> bool:
    """A plain number or a word: the cheap stages decide every comparison with it."""
    s = normalise(answer)
    return parse_number(s) is not None or re.fullmatch(r"[A-Za-z][A-Za-z ]+", s) is not None


def _cheap_equal(a_raw: str, b_raw: str) -> Optional[bool]:
    """String and plain-number verdicts (no symbolic work): True, False, or None when they cannot decide."""
    a, b = normalise(a_raw), normalise(b_raw)
    if not a or not b:
        return False
    if a == b:
        return True
    if _CLOCK.fullmatch(a) and _CLOCK.fullmatch(b):  # 12:00 and 1:00 are times, not the ratios 12 : 0 and 1 : 0
        return False
    if re.fullmatch(r"[A-Za-z][A-Za-z ]+", a) and re.fullmatch(r"[A-Za-z][A-Za-z ]+", b):  # \text{Yes} vs yes
        return a.lower() == b.lower()
    na, nb = parse_number(a), parse_number(b)
    if not _SPACED_COMMA.search(a_raw) and not _SPACED_COMMA.search(b_raw):  # 1,22 for 1.22 (and back)
        if na is None and nb is not None and not nb[1] and _DECIMAL_COMMA.match(a):
            na = parse_number(a.replace(",", "."))
        if nb is None and na is not None and not na[1] and _DECIMAL_COMMA.match(b):
            nb = parse_number(b.replace(",", "."))
    if na is not None and nb is not None:
        return numbers_close(na[0], nb[0], exact=na[1] and nb[1])
    return None


def _symbolic(pred: str, gold: str, timeout_s: float) -> bool:
    a, b = normalise(pred), normalise(gold)
    if not (is_safe_for_symbolic(a) and is_safe_for_symbolic(b)):
        return False
    pred_s = _strip_delimiters(pred) if len(pred) <= 4 * MAX_ANSWER_CHARS else a
    gold_s = _strip_delimiters(gold) if len(gold) <= 4 * MAX_ANSWER_CHARS else b
    try:
        return _symbolic_cached(pred_s, gold_s, float(timeout_s))
    except sandbox.SandboxTimeout:
        return False


def _equivalent_one(pred: str, gold: str, timeout_s: float) -> bool:
    gold = gold_answer(gold)
    letter = _choice(gold, strict=True)
    if letter is not None:  # a multiple-choice key: the answer must name the same option
        named = _choice(pred, strict=False)
        if named is not None:
            return named == letter
    cheap = _cheap_equal(pred, gold)
    if cheap is not None:
        return cheap
    pred_items, gold_items = split_list(pred), split_list(gold)
    if len(pred_items) > 1 or len(gold_items) > 1:
        if len(pred_items) == len(gold_items):
            left = list(gold_items)
            for item in pred_items:
                match = next((g for g in left if _cheap_equal(item, g)), None)
                if match is None:
                    break
                left.remove(match)
            else:
                return True
        if all(_is_plain(x) for x in pred_items + gold_items):  # numbers and words only: nothing left to decide
            return False
        return _symbolic(", ".join(pred_items), ", ".join(gold_items), timeout_s)
    return _symbolic(pred, gold, timeout_s)


def is_equivalent(pred: Optional[str], gold: Any, timeout_s: float = DEFAULT_TIMEOUT_S) -> bool:
    """Whether answer ``pred`` equals ``gold`` (a string, a number, or a list of accepted answers).

    Never raises; at most about ``timeout_s`` seconds of symbolic work per accepted answer; ``False`` when
    undecidable in time.
    """
    try:
        if pred is None:
            return False
        pred = str(pred)
        return any(_equivalent_one(pred, g, timeout_s) for g in _as_golds(gold))
    except Exception:
        return False
