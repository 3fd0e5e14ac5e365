"""Final-answer extraction from a model response.

The rule-based parser of the ACR paper (000, App. A.3): the last ``\\boxed{...}``, else the text after "The answer
is", else the last numerical expression. Responses in the ``<think>...</think><answer>...</answer>`` format of the
CW-GRPO and AAPO setups (003 App. B, 002 App. C.2) are read inside their last complete ``<answer>`` block first.

Beyond the paper's rule: boxes that only list answers (``$x = \\boxed{1}$ and $x = \\boxed{2}$``) are one answer
``1, 2`` (a box followed by other words is still replaced by the later one); "Final Answer: The largest $n$ is 34."
gives ``34``; an unboxed response ending in a math span gives the whole span (``$x \\neq 5$``, ``$E$``); a digit
inside a word (``AZYUK2A``) is no number, and inline math broken over lines (``$ \\n 9 \\n $``) holds no answer.

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
_ANSWER_IS = re.compile(r"(?:answer|choice|option)\s*(?:is\b|:)\s*:?", re.IGNORECASE)
#: A number never starts inside a word or a LaTeX name (``AZYUK2A``, ``x_2``, ``\\log2``).
_NUMBER = re.compile(
    r"(?<![A-Za-z_\\\d])(?:"
    r"-?\\[dt]?frac\{-?\d+\}\{-?\d+\}"  # \frac{3}{4}
    r"|-?\d{1,3}(?:,\d{3})+(?:\.\d+)?"  # 1,250 / 12,345.5
    r"|-?\d{1,3}(?:[ \u00a0\u202f]\d{3})+(?![\d,.])(?:\.\d+)?"  # 12 000 (SI thousands spaces)
    r"|-?\d+(?:\.\d+)?(?:/\d+)?"  # 42 / 3.5 / 3/4
    r"|-?\.\d+"  # .5
    r")"
)
_LEADING_NUMBER_WORDS = re.compile(r"^(-?\d[\d,]*(?:\.\d+)?)\s+[A-Za-z]")
_SENTENCE_END = re.compile(r"\.(?:\s|$)")


def _box_at(text: str, start: int) -> Optional[tuple[str, int]]:
    """``(content, end)`` of the box whose command starts at ``start`` (``end`` is one past its closing brace), or
    None when it is unbalanced, empty, longer than :data:`MAX_BOXED_CHARS` or another command (``\\boxedx``)."""
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
        content = token.group(0).rstrip(".") if token else ""
        return (content, i + len(token.group(0))) if content else None
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
                return (content, j + 1) if content else None
        j += 1
    return None


def _last_box_start(text: str, before: int) -> int:
    return max(text.rfind(cmd, 0, before) for cmd in _BOX_COMMANDS)


def last_boxed(text: str) -> Optional[str]:
    """Content of the last ``\\boxed{...}`` (or ``\\fbox{...}``), nested braces balanced, escaped ``\\{ \\}`` skipped.

    ``\\boxed 5`` (no braces) gives ``"5"``. An unbalanced last box (a truncated response) or one longer than
    :data:`MAX_BOXED_CHARS` gives ``None``: an unfinished final answer is no answer.
    """
    if not isinstance(text, str):
        return None
    start = _last_box_start(text, len(text))
    if start < 0:
        return None
    box = _box_at(text, start)
    return box[0] if box else None


#: Words that may stand between the boxes of one answer (``\\boxed{1} and \\boxed{2}``); any other word (``Wait``,
#: ``corrected``, ``Final Answer``) means the later box replaces the earlier one.
_GROUP_WORDS = frozenset({"and", "or", "also", "as", "well", "respectively", "both", "for", "part"})
#: Most boxes read as one answer.
MAX_GROUP_BOXES = 16


def _joins_boxes(gap: str) -> bool:
    """Whether the text between two boxes only lists them: delimiters, commas, ``\\quad``, ``x =``, "and"."""
    if len(gap) > 80 or "\n\n" in gap or re.search(r"\d", gap):
        return False
    words = re.findall(r"[A-Za-z]{2,}", re.sub(r"\\[A-Za-z]+", " ", gap))
    return all(w.lower() in _GROUP_WORDS for w in words)


def boxed_group(text: str) -> Optional[list[str]]:
    """Contents of the final group of boxes: the last box and the boxes just before it that only list answers with it
    (``$x = \\boxed{1}$ and $x = \\boxed{2}$``, ``\\boxed{(1,2)}, \\boxed{(2,1)}``), in order, repeats dropped.

    A box followed by other words (``\\boxed{5}. Wait, ... \\boxed{4}``) is replaced by the later one (the last box
    is the answer, ACR 000 App. A.3). None when the last box is unfinished or there is none.
    """
    if not isinstance(text, str):
        return None
    start = _last_box_start(text, len(text))
    if start < 0:
        return None
    box = _box_at(text, start)
    if box is None:
        return None
    group = [box[0]]
    while len(group) < MAX_GROUP_BOXES:
        prev = _last_box_start(text, start)
        if prev < 0:
            break
        earlier = _box_at(text, prev)
        if earlier is None or earlier[1] > start or not _joins_boxes(text[earlier[1] : start]):
            break
        group.insert(0, earlier[0])
        start = prev
    seen: list[str] = []
    for g in group:
        if g not in seen:
            seen.append(g)
    return seen


def _group_answer(text: str) -> Optional[str]:
    group = boxed_group(text)
    return ", ".join(group) if group else None


#: "The largest $n$ is 34.": a sentence whose answer follows its last "is" / "are" / "equals" / "=".
_SENTENCE_ANSWER = re.compile(r".*(?:\bis|\bare|\bequals|=)\s+(\S.*)$", re.IGNORECASE)


def _delimited(tail: str) -> Optional[str]:
    """The content of a math span opening ``tail`` (``$...$``, ``\\(...\\)``, ``\\[...\\]``), or None."""
    for left, right in (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")):
        if tail.startswith(left):
            close = tail.find(right, len(left))
            if close > 0:
                return tail[len(left) : close].strip() or None
    return None


def _answer_phrase(tail: str) -> Optional[str]:
    """The answer at the head of a one-line ``tail``: a math span, a box, a number before words, or the phrase up to
    the sentence end; a sentence ("The largest $n$ is 34.") gives what follows its last "is"."""
    tail = tail.strip().lstrip("*").strip()
    delimited = _delimited(tail)
    if delimited is not None:
        return delimited
    boxed = _group_answer(tail)
    if boxed is not None:
        return boxed
    m = _SENTENCE_END.search(tail)
    if m:
        tail = tail[: m.start()]
    tail = tail.strip().rstrip(".").strip().strip("*").strip()
    number = _LEADING_NUMBER_WORDS.match(tail)  # "42 apples" -> "42"
    if number:
        return number.group(1)
    sentence = _SENTENCE_ANSWER.search(tail) if re.match(r"[A-Za-z]{2,}\s", tail) else None
    if sentence:  # "The largest $n$ is 34" -> "34"
        return _answer_phrase(sentence.group(1)) or None
    return tail or None


def _after_answer_is(text: str) -> Optional[str]:
    """The expression after the last "answer is" / "answer:" / "choice is" in ``text`` (one line, delimiters removed)."""
    last = None
    for m in _ANSWER_IS.finditer(text):
        last = m
    if last is None:
        return None
    tail = text[last.end() : last.end() + MAX_ANSWER_IS_CHARS].lstrip(" \t*:")
    if not tail.strip():  # "**Final Answer**\n..." : the answer is on the next line
        tail = text[last.end() : last.end() + MAX_ANSWER_IS_CHARS].lstrip(" \t*:\n")
    return _answer_phrase(tail.split("\n", 1)[0])


def _inside_broken_inline_math(text: str, pos: int) -> bool:
    """Whether ``pos`` lies inside a ``$ ... $`` or ``\\( ... \\)`` span that is broken over lines: inline math does
    not continue on the next line, so such a span holds no answer (display math ``$$``/``\\[`` may)."""
    line_start = text.rfind("\n", 0, pos) + 1
    line = text[line_start:pos].replace("$$", "").replace("\\$", "")
    if line.count("$") % 2 == 1 or line.rfind("\\(") > line.rfind("\\)"):
        return False  # the span opens on this line
    before = text[:line_start].replace("$$", "").replace("\\$", "")
    return before.count("$") % 2 == 1 or before.rfind("\\(") > before.rfind("\\)")


def last_number(text: str) -> Optional[str]:
    """The last numerical expression (integer, decimal, ``a/b``, ``\\frac{a}{b}``, thousands commas removed); a digit
    inside a word (``AZYUK2A``) is no number, and one inside inline math broken over lines is no answer."""
    if not isinstance(text, str):
        return None
    tail = text[-MAX_NUMBER_SCAN_CHARS:]
    last = None
    for m in _NUMBER.finditer(tail):
        last = m
    if last is None or _inside_broken_inline_math(tail, last.start()):
        return None
    s = last.group(0)
    return re.sub(r"[, \u00a0\u202f]", "", s) if "frac" not in s else s


#: Inline ``$...$`` / ``\\(...\\)`` on one line; display ``$$...$$`` / ``\\[...\\]`` over lines.
_MATH_SPAN = re.compile(
    r"\$\$(?P<display>[^$]{1,2000}?)\$\$|\\\[(?P<bracket>.{1,2000}?)\\\]|\$(?P<inline>[^$\n]{1,500})\$"
    r"|\\\((?P<paren>[^\n]{1,500}?)\\\)",
    re.DOTALL,
)
_RELATION = re.compile(r"<|>|\\[lg]eq?\b|\\[lg]t\b|\\neq?\b|!=|\\in\b")


def _last_math_span(text: str) -> Optional[str]:
    """The last math span when nothing numeric follows it, else None.

    "x lies in $[0,1)$." gives ``[0,1)`` where the last-number rule alone would give ``1``; ``$x = 3$``, ``$x \\ne 5$``
    and ``$-x \\ge -1$`` are kept whole (the comparison reads relations and ``x =`` itself). A span without a
    number (``$E$``, ``$\\text{odd}$``) counts only when it ends the response.
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
    content = next(g for g in span.groups() if g is not None).strip()
    if not content:
        return None
    if not _NUMBER.search(content) and "\\infty" not in content and "\\pi" not in content:
        if re.search(r"[A-Za-z0-9]", after):
            return None
    return content


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
        boxed = _group_answer(block)
        if boxed is not None or boxed_only:
            return boxed
        inner = _after_answer_is(block)
        if inner is not None:
            return inner
        block = block.strip().strip("$").strip()
        return block or None
    has_box = any(cmd in text for cmd in _BOX_COMMANDS)
    boxed = _group_answer(text)
    if boxed is not None or has_box or boxed_only:
        return boxed
    answer = _after_answer_is(text)
    if answer is not None:
        return answer
    return _last_math_span(text) or last_number(text)
