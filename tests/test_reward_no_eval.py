"""Model text never reaches an evaluator of Python (issue 11, item 1).

A canary: answers that would run ``os.system('touch CANARY')`` if any stage handed them to ``eval``
(``sympy.parse_expr``/``sympify``, math-verify's expression extraction) must score 0 and leave no file, in every
place an answer is read from (``\\boxed{}``, ``<answer>`` tags, "The answer is"), with worker processes and without.
"""

import os

import pytest

from rlvr_recipes.reward import equivalence
from rlvr_recipes.reward.math_reward import compute_score


def _payloads(canary: str) -> list[str]:
    cmd = f"touch {canary}"
    return [
        f"__import__('os').system('{cmd}')",
        f"__import__(\"os\").system(\"{cmd}\")",
        f"(lambda: __import__('os').system('{cmd}'))()",
        f"exec(\"__import__('os').system('{cmd}')\")",
        f"Matrix([[1, 0], [0, __import__('os').system('{cmd}')]]).det()",
        f"getattr(__import__('os'), 'system')('{cmd}')",
        f"[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == 'Popen'][0](['touch', '{canary}'])",
    ]


def _wrappers(payload: str) -> list[str]:
    return [
        f"\\boxed{{{payload}}}",
        f"<think>x</think><answer>{payload}</answer>",
        f"The answer is {payload}",
    ]


@pytest.mark.parametrize("sandboxed", [True, False], ids=["worker", "in-process"])
def test_model_text_is_never_evaluated(tmp_path, monkeypatch, sandboxed):
    """Each payload in each wrapper, against ground truths 0 and 1 (``os.system`` returns 0): score 0, no canary."""
    if not sandboxed:
        monkeypatch.setenv("RLVR_VERIFY_SANDBOX", "0")
    canary = tmp_path / "CANARY"
    equivalence._symbolic_cached.cache_clear()
    for payload in _payloads(str(canary)):
        for response in _wrappers(payload):
            for gold in ("0", "1", payload):
                out = compute_score("lighteval/MATH", response, gold if gold != payload else "0")
                assert out["score"] == 0.0, (response, gold)
                assert not os.path.exists(canary), f"code ran: {response!r}"
        # bare text: the last-number rule may read a digit of the path; only the canary is checked
        compute_score("lighteval/MATH", payload, "0")
        assert not os.path.exists(canary), f"code ran: {payload!r}"


def test_ground_truth_is_never_evaluated(tmp_path):
    """Dataset text is untrusted too: a hostile ground truth runs nothing."""
    canary = tmp_path / "CANARY"
    for payload in _payloads(str(canary)):
        compute_score("lighteval/MATH", "\\boxed{0}", payload)
        assert not os.path.exists(canary), payload
