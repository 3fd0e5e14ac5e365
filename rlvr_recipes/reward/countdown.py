"""Countdown verifier: "reach TARGET with these NUMBERS using + - * / and parentheses, each number at most once".

Model output is never evaluated as code. The answer is read by a tokenizer that knows only digits, ``+ - * / ( )``
and ASCII spaces and line breaks (any other character, Unicode digits included: the answer is unreadable and scores 0), and a recursive-descent parser over
:class:`fractions.Fraction` with bounded input length, nesting depth, number size and intermediate size. Division by
zero, a number that was not given, a number used more often than given, or a unary sign all score 0.

Where the answer is read (the first of these that exists): the last ``<answer>...</answer>`` block; else the last
non-empty line of the response. In either, a trailing ``= ...`` is dropped (``3*4+5 = 17`` reads ``3*4+5``).

Ground truth: ``"TARGET|N1,N2,..."`` (e.g. ``"24|3,4,6,1"``) or a mapping ``{"target": 24, "numbers": [3, 4, 6, 1]}``.
As verl's custom reward function::

    reward.custom_reward_function.path=pkg://rlvr_recipes.reward.countdown
    reward.custom_reward_function.name=compute_score
"""

from __future__ import annotations

import re
from collections import Counter
from fractions import Fraction
from typing import Any, Mapping, Optional

#: longest answer read (characters); longer scores 0 without being parsed
MAX_ANSWER_CHARS = 200
#: deepest parenthesis nesting accepted
MAX_DEPTH = 16
#: largest number literal (digits)
MAX_DIGITS = 6
#: any intermediate value whose numerator or denominator exceeds this is unreadable (scores 0)
MAX_MAGNITUDE = 10**15
#: longest response scanned for the answer (characters from the end)
MAX_SCAN_CHARS = 20_000

_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_TOKEN = re.compile(r"[ \t\r\n]*(?:([0-9]+)|([-+*/()]))")


class Unreadable(ValueError):
    """The answer is not an expression this verifier accepts."""


def parse_ground_truth(ground_truth: Any) -> tuple[Fraction, list[int]]:
    """``(target, numbers)`` from ``"T|a,b,c"`` or ``{"target": T, "numbers": [...]}``; ``ValueError`` otherwise."""
    if isinstance(ground_truth, Mapping):
        target, numbers = ground_truth["target"], list(ground_truth["numbers"])
    elif isinstance(ground_truth, str) and "|" in ground_truth:
        head, tail = ground_truth.split("|", 1)
        target, numbers = head.strip(), [n for n in tail.split(",") if n.strip()]
    else:
        raise ValueError(f"countdown ground truth must be 'TARGET|N1,N2,...' or a mapping, got {ground_truth!r}")
    return Fraction(int(target)), [int(n) for n in numbers]


def answer_text(response: str) -> str:
    """The part of ``response`` that holds the expression (module docstring)."""
    tail = response[-MAX_SCAN_CHARS:]
    blocks = _ANSWER.findall(tail)
    if blocks:
        text = blocks[-1]
    else:
        lines = [line for line in tail.splitlines() if line.strip()]
        text = lines[-1] if lines else ""
    return text.split("=", 1)[0].strip()


def tokenize(text: str) -> list[str]:
    """Tokens of ``text``: number literals and the six operator characters; :class:`Unreadable` on anything else."""
    if len(text) > MAX_ANSWER_CHARS:
        raise Unreadable(f"answer longer than {MAX_ANSWER_CHARS} characters")
    tokens, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise Unreadable(f"unexpected character {text[pos]!r}")
        number, op = match.groups()
        if number is not None and len(number) > MAX_DIGITS:
            raise Unreadable("number literal too long")
        tokens.append(number if number is not None else op)
        pos = match.end()
    if not tokens:
        raise Unreadable("empty answer")
    return tokens


class _Parser:
    """expr := term (('+' | '-') term)* ; term := factor (('*' | '/') factor)* ; factor := NUMBER | '(' expr ')'."""

    def __init__(self, tokens: list[str]) -> None:
        self.tokens, self.pos, self.used = tokens, 0, []

    def _peek(self) -> Optional[str]:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _take(self) -> str:
        token = self._peek()
        if token is None:
            raise Unreadable("expression ends too early")
        self.pos += 1
        return token

    def expr(self, depth: int) -> Fraction:
        value = self.term(depth)
        while self._peek() in ("+", "-"):
            op = self._take()
            right = self.term(depth)
            value = _bounded(value + right if op == "+" else value - right)
        return value

    def term(self, depth: int) -> Fraction:
        value = self.factor(depth)
        while self._peek() in ("*", "/"):
            op = self._take()
            right = self.factor(depth)
            if op == "/" and right == 0:
                raise Unreadable("division by zero")
            value = _bounded(value * right if op == "*" else value / right)
        return value

    def factor(self, depth: int) -> Fraction:
        token = self._take()
        if token == "(":
            if depth >= MAX_DEPTH:
                raise Unreadable("parentheses nested too deep")
            value = self.expr(depth + 1)
            if self._take() != ")":
                raise Unreadable("unbalanced parentheses")
            return value
        if token.isdigit():
            self.used.append(int(token))
            return Fraction(int(token))
        raise Unreadable(f"unexpected {token!r}")  # a unary sign or a stray operator


def _bounded(value: Fraction) -> Fraction:
    if abs(value.numerator) > MAX_MAGNITUDE or value.denominator > MAX_MAGNITUDE:
        raise Unreadable("intermediate value too large")
    return value


def evaluate(text: str) -> tuple[Fraction, list[int]]:
    """``(value, numbers used)`` of the expression ``text``; :class:`Unreadable` when it is not one."""
    parser = _Parser(tokenize(text))
    value = parser.expr(0)
    if parser.pos != len(parser.tokens):
        raise Unreadable(f"unexpected {parser.tokens[parser.pos]!r} after the expression")
    return value, parser.used


def is_solution(response: str, target: Fraction, numbers: list[int]) -> bool:
    """Whether the answer of ``response`` reaches ``target`` using only ``numbers``, each at most as often as given."""
    if not isinstance(response, str):
        return False
    try:
        value, used = evaluate(answer_text(response))
    except Unreadable:
        return False
    return value == target and not (Counter(used) - Counter(numbers))


def compute_score(data_source: Any = None, solution_str: str = "", ground_truth: Any = None,
                  extra_info: Optional[dict] = None, **kwargs: Any) -> dict[str, float]:
    """verl custom reward function: ``{"score": 1.0 | 0.0, "acc": same}``. A ground truth that cannot be read
    raises ``ValueError`` naming it (a silent 0 would train on a wrong label); no response ever raises."""
    target, numbers = parse_ground_truth(ground_truth)
    score = float(is_solution(solution_str, target, numbers))
    return {"score": score, "acc": score}
