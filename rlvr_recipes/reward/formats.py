"""Format rewards, each 1.0 or 0.0, linear-time on any input.

- :func:`think_answer`: ``<think>...</think><answer>...</answer>`` and nothing else, the output format the CW-GRPO
  training prompt asks for (003 App. B; the prompt of the Open-RS setup it trains on).
- :func:`think_delimiter`: exactly one ``"\\n</think>\\n"``, the AAPO format reward (002 App. C.1: "containing the
  delimiter sequence \\n</think>\\n"; the Open-RS code it follows counts exactly one, since ``<think>`` may come
  from the chat template).
- :func:`boxed`: the final answer is a complete ``\\boxed{...}`` (the two-stage and A-GRAE prompts ask for it,
  004 App. C.2, 001 App. C.2).
"""

from __future__ import annotations

from rlvr_recipes.reward.extract import MAX_SCAN_CHARS, last_boxed

_TAGS = ("<think>", "</think>", "<answer>", "</answer>")


def think_answer(response: str, think_opened: bool = False) -> float:
    """1.0 for one ``<think>`` block then one ``<answer>`` block, only whitespace around and between them.

    ``think_opened``: the chat template already wrote ``<think>`` at the end of the prompt (DeepSeek-R1-Distill's
    does), so the response is read as if it began with it; a response that writes a second ``<think>`` is wrong.
    Without it, on such a model no response could ever score (003 App. C rewards "properly matched <think> tags").
    """
    if not isinstance(response, str) or len(response) > 4 * MAX_SCAN_CHARS:
        return 0.0
    if think_opened:
        response = "<think>" + response
    if [response.count(t) for t in _TAGS] != [1, 1, 1, 1]:
        return 0.0
    positions = [response.find(t) for t in _TAGS]
    if positions != sorted(positions):
        return 0.0
    before = response[: positions[0]]
    between = response[positions[1] + len("</think>") : positions[2]]
    after = response[positions[3] + len("</answer>") :]
    return 1.0 if not (before.strip() or between.strip() or after.strip()) else 0.0


def think_delimiter(response: str) -> float:
    """1.0 when ``"\\n</think>\\n"`` occurs exactly once (AAPO App. C.1)."""
    if not isinstance(response, str):
        return 0.0
    return 1.0 if response.count("\n</think>\n") == 1 else 0.0


def boxed(response: str) -> float:
    """1.0 when the part after the last ``</think>`` (all of it if none) ends its answer in a complete box."""
    if not isinstance(response, str):
        return 0.0
    tail = response[-MAX_SCAN_CHARS:]
    cut = tail.rfind("</think>")
    if cut >= 0:
        tail = tail[cut + len("</think>") :]
    return 1.0 if last_boxed(tail) is not None else 0.0
