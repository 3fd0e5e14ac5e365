"""Final-answer extraction from a model response.

The rule-based parser of the ACR paper (000, App. A.3): the last ``\\boxed{...}``, else the text after "The answer
is", else the last numerical expression. Responses in the ``<think>...</think><answer>...</answer>`` format of the
CW-GRPO and AAPO setups (003 App. B, 002 App. C.2) are read inside their last complete ``<answer>`` block first.

Every function here is linear in the input (``str.rfind``, bounded scans, anchored regexes), never raises on any
``str``, and returns ``None`` when no answer is found: a 1 MB response costs milliseconds.
"""

from __future__ import annotations

import re
from typing import Optional

#: Only the tail of a response is searched: final answers come last (a 1 MB response is cut to this).
MAX_SCAN_CHARS = 100_000
#: Longest ``\\boxed{...}`` content accepted; longer (or unbalanced) boxes are treated as no answer.
MAX_BOXED_CHARS = 10_000
#: Longest "The answer is ..." tail read (one line at most).
MAX_ANSWER_IS_CHARS = 2_000
#: The last number is looked for in this many trailing characters.
MAX_NUMBER_SCAN_CHARS = 20_000

_BOX_COMMANDS = ("\\boxed", "\\fbox")
_ANSWER_IS = re.compile(r"answer\s*(?:is\b|:)\s*:?", re.IGNORECASE)
_NUMBER = re.compile(
    r"-?\\[dt]?frac\{-?\d+\}\{-?\d+\}"  # \frac{3}{4}
    r"|-?\d{1,3}(?:,\d{3})+(?:\.\d+)?"  # 1,250 / 12,345.5
    r"|-?\d{1,3}(?:[ \u00a0\u202f]\d{3})+(?![\d,.])(?:\.\d+)?"  # 12 000 (SI thousands spaces)
    r"|-?\d+(?:\.\d+)?(?:/\d+)?"  # 42 / 3.5 / 3/4
    r"|-?\.\d+"  # .5
)
_LEADING_NUMBER_WORDS = re.compile(r"^(-?\d[\d,]*(?:\.\d+)?)\s+[A-Za-z]")
_SENTENCE_END = re.compile(r"\.(?:\s|$)")


def last_boxed(text: str) -> Optional[str]:
    """Content of the last ``\\boxed{...}`` (or ``\\fbox{...}``), nested braces balanced, escaped ``\\{ \\}`` skipped.

    ``\\boxed 5`` (no braces) gives ``"5"``. An unbalanced last box (a truncated response) or one longer than
    :data:`MAX_BOXED_CHARS` gives ``None``: an unfinished final answer is no answer.
    """
    if not isinstance(text, str):
        return None
    start = max(text.rfind(cmd) for cmd in _BOX_COMMANDS)
    if start < 0:
        return None
    cmd_len = len("\\boxed") if text.startswith("\\boxed", start) else len("\\fbox")
    i = start + cmd_len
    # skip spaces between the command and its argument
    while i < len(text) and text[i] in " \t":
        i += 1
    if i >= len(text):
        return None
    if text[i] != "{":
        if i == start + cmd_len:  # "\boxedx": another command name, not a box
            return None
        token = re.match(r"[^\s$]+", text[i : i + 100])
        return (token.group(0).rstrip(".") or None) if token else None
    depth = 0
    end = min(len(text), i + MAX_BOXED_CHARS + 2)
    j = i
    while j < end:
        c = text[j]
        if c == "\\":
            j += 2  # an escaped character (\{, \}, \\) never opens or closes a group
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                content = text[i + 1 : j].strip()
                return content or None
        j += 1
    return None


def _after_answer_is(text: str) -> Optional[str]:
    """The expression after the last "answer is" / "answer:" in ``text`` (one line, delimiters removed)."""
    last = None
    for m in _ANSWER_IS.finditer(text):
        last = m
    if last is None:
        return None
    tail = text[last.end() : last.end() + MAX_ANSWER_IS_CHARS].lstrip()
    tail = tail.split("\n", 1)[0].strip()
    for left, right in (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")):
        if tail.startswith(left):
            close = tail.find(right, len(left))
            if close > 0:
                return tail[len(left) : close].strip() or None
    boxed = last_boxed(tail)
    if boxed is not None:
        return boxed
    m = _SENTENCE_END.search(tail)
    if m:
        tail = tail[: m.start()]
    tail = tail.strip().rstrip(".").strip()
    number = _LEADING_NUMBER_WORDS.match(tail)  # "42 apples" -> "42"
    if number:
        return number.group(1)
    return tail or None


def last_number(text: str) -> Optional[str]:
    """The last numerical expression (integer, decimal, ``a/b``, ``\\frac{a}{b}``, thousands commas removed)."""
    if not isinstance(text, str):
        return None
    last = None
    for m in _NUMBER.finditer(text[-MAX_NUMBER_SCAN_CHARS:]):
        last = m
    if last is None:
        return None
    s = last.group(0)
    return re.sub(r"[, \u00a0\u202f]", "", s) if "frac" not in s else s


_MATH_SPAN = re.compile(r"\$([^$]{1,500})\$|\\\((.{1,500}?)\\\)")


def _last_math_span(text: str) -> Optional[str]:
    """The last inline math span (``$...$`` or ``\\(...\\)``) when it holds the response's last number, else None.

    "x lies in $[0,1)$." gives ``[0,1)`` where the last-number rule alone would give ``1``; a span with ``=`` gives
    what follows its last ``=`` (``$x = 3$`` -> ``3``).
    """
    tail = text[-MAX_NUMBER_SCAN_CHARS:]
    span = None
    for m in _MATH_SPAN.finditer(tail):
        span = m
    if span is None:
        return None
    after = tail[span.end() :]
    if _NUMBER.search(after):
        return None
    content = (span.group(1) if span.group(1) is not None else span.group(2)).strip()
    if not _NUMBER.search(content) and "\\infty" not in content and "\\pi" not in content:
        return None
    if "=" in content and "," not in content:
        content = content.rsplit("=", 1)[1].strip()
    return content or None


def _answer_block(text: str) -> Optional[str]:
    """Content of the last complete ``<answer>...</answer>`` block, or None."""
    close = text.rfind("</answer>")
    if close < 0:
        return None
    open_ = text.rfind("<answer>", 0, close)
    if open_ < 0:
        return None
    return text[open_ + len("<answer>") : close].strip()


def extract_answer(response: str, boxed_only: bool = False) -> Optional[str]:
    """The final answer of a response (ACR paper, App. A.3), or None.

    Order: inside the last complete ``<answer>`` block if there is one (its box, its "answer is", else its whole
    text), else the last ``\\boxed{}`` of the response, else the text after the last "The answer is", else the
    last number. A response whose last box is unfinished has no answer. ``boxed_only`` keeps only the box rules.
    """
    if not isinstance(response, str) or not response:
        return None
    text = response[-MAX_SCAN_CHARS:]
    block = _answer_block(text)
    if block is not None:
        boxed = last_boxed(block)
        if boxed is not None or boxed_only:
            return boxed
        inner = _after_answer_is(block)
        if inner is not None:
            return inner
        block = block.strip().strip("$").strip()
        return block or None
    has_box = any(cmd in text for cmd in _BOX_COMMANDS)
    boxed = last_boxed(text)
    if boxed is not None or has_box or boxed_only:
        return boxed
    answer = _after_answer_is(text)
    if answer is not None:
        return answer
    return _last_math_span(text) or last_number(text)
