"""Grading by answer kind, on cases worked out by hand: relations, several answers, text, prose, decimal commas,
multiple choice, and the false-positive traps (a digit inside a word, inline math broken over lines).

Each case states the verdict a careful grader gives and why; every one goes through the whole reward
(:func:`rlvr_recipes.reward.math_reward.compute_score`), so extraction and comparison are both exercised.
"""

import pytest

from rlvr_recipes.reward.equivalence import gold_answer, split_list
from rlvr_recipes.reward.extract import boxed_group, extract_answer, last_number
from rlvr_recipes.reward.math_reward import compute_score

WORK = "Subtracting 3 from both sides and dividing by 2 keeps the direction of the inequality.\n"

CASES = {
    "relation": [
        # (response, gold, verdict): x <= 2 is the same set as x \leq 2; < is a different one
        (WORK + "So $\\boxed{x <= 2}$.", "x \\leq 2", True),
        (WORK + "So $\\boxed{x < 2}$.", "x \\leq 2", False),
        # -x >= -1  <=>  x <= 1 (multiply by -1 and flip); -x <= -1  <=>  x >= 1
        (WORK + "So $\\boxed{-x \\geq -1}$.", "x \\le 1", True),
        (WORK + "So $\\boxed{-x \\leq -1}$.", "x \\le 1", False),
        # != written in ASCII; = is not !=
        ("The denominator vanishes at $x=5$.\nThe answer is $\\boxed{x != 5}$.", "x \\neq 5", True),
        ("The denominator vanishes at $x=5$.\nThe answer is $\\boxed{x = 5}$.", "x \\neq 5", False),
        # y = 2x + 3  <=>  2x - y + 3 = 0 (move everything to one side); y = 2x - 3 is another line
        ("Slope 2, intercept 3, so the line is $\\boxed{2x - y + 3 = 0}$.", "y = 2x + 3", True),
        ("Slope 2, intercept -3, so the line is $\\boxed{y = 2x - 3}$.", "y = 2x + 3", False),
        # x^2/4 + y^2/9 = 1 times 36 is 9x^2 + 4y^2 = 36; swapping the axes gives 4x^2 + 9y^2 = 36
        ("Semi-axes 2 and 3: $\\boxed{9x^2 + 4y^2 = 36}$.", "\\frac{x^2}{4} + \\frac{y^2}{9} = 1", True),
        ("Semi-axes 3 and 2: $\\boxed{4x^2 + 9y^2 = 36}$.", "\\frac{x^2}{4} + \\frac{y^2}{9} = 1", False),
        # an unboxed final relation is read whole (not cut at its "=" or "!=")
        ("Hence the only excluded value gives $x \\neq 3$.", "x \\ne 3", True),
    ],
    "several_answers": [
        # two boxes that list the roots, in either order, against the gold list
        ("The roots are $x = \\boxed{2}$ and $x = \\boxed{1}$.", "1, 2", True),
        ("The roots are $x = \\boxed{1}$ and $x = \\boxed{3}$.", "1, 2", False),
        # four boxed pairs against the gold list of pairs (order free); two of the four is not the answer
        ("Solutions: $\\boxed{(2,1)}$, $\\boxed{(1,2)}$, $\\boxed{(-20,-1)}$ and $\\boxed{(-1,-20)}$.",
         "(1,2),(2,1),(-1,-20),(-20,-1)", True),
        ("Solutions: $\\boxed{(2,1)}$ and $\\boxed{(1,2)}$.", "(1,2),(2,1),(-1,-20),(-20,-1)", False),
        # the gold itself written as several boxes
        ("So $\\boxed{1, 2}$.", "\\boxed{1}\\boxed{2}", True),
        # a box, then words, then another box: the later box replaces the earlier one (the last box counts)
        ("First try $\\boxed{5}$. Wait, I counted an endpoint twice, so $\\boxed{4}$.", "4", True),
        ("First try $\\boxed{5}$. Wait, I counted an endpoint twice, so $\\boxed{4}$.", "5", False),
        # a set in another order; a tuple in another order is another point
        ("The roots are $\\boxed{\\{3, 1, 2\\}}$.", "\\{1,2,3\\}", True),
        ("The point is $\\boxed{(-1, 3)}$.", "(3,-1)", False),
    ],
    "text": [
        ("Only the last statement holds.\n$\\boxed{E}$", "\\text{E}", True),
        ("$f(-x) = -f(x)$, so $f$ is $\\boxed{\\text{odd}}$.", "\\text{odd}", True),
        ("$f(-x) = f(x)$, so $f$ is $\\boxed{\\text{even}}$.", "\\text{odd}", False),
        ("The limit is Euler's number.\n\n$e$", "\\text{e}", True),
        ("Such a set exists. $\\boxed{\\text{Yes}}$", "\\text{yes}", True),  # case of a word answer
        ("No such set exists. $\\boxed{\\text{No}}$", "\\text{yes}", False),
    ],
    "prose": [
        # "Final Answer:" followed by a sentence: the answer follows its last "is"
        ("For n = 35 the bound fails, for n = 34 it holds.\nFinal Answer: The largest $n$ is 34.", "34", True),
        ("For n = 34 the bound fails, for n = 33 it holds.\nFinal Answer: The largest $n$ is 33.", "34", False),
        # no marker: the last expression of the chain of reasoning
        ("Each side is $3$ and there are $4$ sides, so the perimeter is $3 \\cdot 4 = 12$.", "12", True),
        ("She picked $9$ and then $8$ apples, so she has 17 apples in total.", "17", True),
        ("She had $17$ apples and ate $2$, so 15 apples are left.", "17", False),
        ("Option (B) fails, so the correct choice is **D**.", "D", True),
    ],
    "numbers": [
        # a decimal comma (1,22 = 1.22; 0,111 cannot be thousands) in the answer or in the gold
        ("The ratio is $\\boxed{1,22}$.", "1.22", True),
        ("The ratio is 0.111.", "0,111", True),
        # a comma and a space separate two numbers: 32, 349 is a list, not 32349; 32{,}349 is one number
        ("The numbers are $\\boxed{32, 349}$.", "32349", False),
        ("The total is $\\boxed{32{,}349}$.", "32349", True),
        ("The total is $\\boxed{11,\\! 111,\\! 111,\\! 100}$.", "11111111100", True),
        ("The roots are $\\boxed{1, 2}$.", "1.2", False),
        # AIME's three-digit form
        ("The remainder is $\\boxed{073}$.", "73", True),
        # 12:00 and 1:00 are times (not the ratios 12:0 and 1:0, which a parser makes both infinite)
        ("The meeting starts at $1:00$.", "12:00", False),
    ],
    "multiple_choice": [
        ("Options A-E were checked.\nThe answer is (C) 18.", "C", True),
        ("Options A-E were checked.\nThe answer is $\\boxed{\\textbf{(C)}}$.", "C", True),
        ("Options A-E were checked.\nThe answer is (D) 20.", "C", False),
        ("Options A-E were checked.\nThe answer is $\\boxed{C}$.", "(C) 18", True),
        ("Options A-E were checked.\nThe answer is $\\boxed{B}$.", "(C) 18", False),
    ],
    "traps": [
        # a digit inside a word is no number
        ("AZYUK2A", "2", False),
        ("The locker code is AZYUK2A, as the clue says.", "2", False),
        # inline math does not continue over lines: no answer
        ("Answer $ \n 9 \n $", "9", False),
        ("Answer \\( \n 9 \n \\)", "9", False),
        # display math may: the same answer in $$ ... $$ counts
        ("Answer $$ \n 9 \n $$", "9", True),
        # a truncated box is no answer, even when the gold appears in the reasoning
        ("So $3 + 4 = 7$ minus the overlap.\nThe answer is \\boxed{6", "7", False),
        # 2x is not 2, 12 is not 2, 15 is not 5
        ("Simplifying gives $\\boxed{2x}$.", "2", False),
        ("The number of solutions is $\\boxed{12}$.", "2", False),
        ("We find $x = 15$.", "5", False),
    ],
}


@pytest.mark.parametrize(
    "kind, response, gold, verdict",
    [(k, r, g, v) for k, rows in CASES.items() for r, g, v in rows],
    ids=[f"{k}-{i}" for k, rows in CASES.items() for i in range(len(rows))],
)
def test_verdict_by_kind(kind, response, gold, verdict):
    assert (compute_score("lighteval/MATH", response, gold)["acc"] == 1.0) is verdict, (kind, response, gold)


def test_boxed_group_joins_listed_boxes_only():
    assert boxed_group("$x = \\boxed{1}$ and $x = \\boxed{2}$") == ["1", "2"]
    assert boxed_group("\\boxed{(3, 3)} \\text{ for part (a) and } \\boxed{(1, 1)}") == ["(3, 3)", "(1, 1)"]
    assert boxed_group("We get $\\boxed{3}$.\n\n**Final Answer**\n\\boxed{3}") == ["3"]  # a paragraph apart
    assert boxed_group("\\boxed{5}. Wait, no: \\boxed{4}") == ["4"]  # other words between: the last box
    assert boxed_group("\\boxed{3}\\boxed{3}") == ["3"]  # repeats dropped
    assert boxed_group("\\boxed{1} and \\boxed{2") is None  # the last box is unfinished: no answer
    assert boxed_group("no box") is None


def test_extraction_of_prose_and_relations():
    assert extract_answer("Final Answer: The largest $n$ is 34.") == "34"
    assert extract_answer("**Answer:** 42 pages") == "42"
    assert extract_answer("We find that $x \\neq 3$.") == "x \\neq 3"
    assert extract_answer("Thus $-x >= -1$") == "-x >= -1"
    assert extract_answer("$$\n9\n$$") == "9"
    assert extract_answer("Answer $ \n 9 \n $") is None
    assert extract_answer("solve for $x$ and get 12") == "12"  # a number after the span wins
    assert last_number("AZYUK2A") is None and last_number("x12") is None and last_number("a 12") == "12"


def test_split_list_keeps_intervals_and_tuples_whole():
    assert split_list("1, 2, 3") == ["1", "2", "3"]
    assert split_list("(1,2), [3,4)") == ["(1,2)", "[3,4)"]
    assert split_list("x = 3 \\text{ or } x = -3") == ["3", "-3"]
    assert split_list("k = 45 \\quad n = 2") == ["45", "2"]
    assert split_list("\\{1, 2\\}") == ["\\{1, 2\\}"]
    assert split_list("7") == ["7"]


def test_gold_answer_reads_boxes_and_worked_solutions():
    assert gold_answer("\\(\\boxed{1}\\) and \\(\\boxed{-2}\\).") == "1, -2"
    solution = ("The stock keeps 90 percent on Monday and 80 percent of that on Tuesday, so it keeps 72 percent "
                "and loses the rest. Final Answer: The final answer is $28\\%$. I hope it is correct.")
    assert gold_answer(solution) == "28\\%"
    matrix = "\\begin{pmatrix}\\frac{1}{2} & \\frac{3}{4} \\\\ \\frac{5}{6} & \\frac{7}{8}\\end{pmatrix}"
    assert gold_answer(matrix) == matrix  # LaTeX commands are not words: an answer, not a solution
    assert gold_answer("42") == "42"


def test_listing_many_candidates_does_not_cover_the_answer():
    """Joined boxes are one list answer, compared as a whole: boxing every candidate never matches a single gold,
    and a list with an extra item is not the gold list."""
    spam = "It is one of these: $\\boxed{1}$, $\\boxed{2}$, $\\boxed{3}$ or $\\boxed{4}$."
    assert compute_score("lighteval/MATH", spam, "2")["acc"] == 0.0
    assert compute_score("lighteval/MATH", spam, "1, 2")["acc"] == 0.0
    assert compute_score("lighteval/MATH", spam, "1, 2, 3, 4")["acc"] == 1.0
    assert compute_score("lighteval/MATH", "The answer is A, B, C, D or E.", "C")["acc"] == 0.0


@pytest.mark.parametrize(
    "response",
    [
        "\\boxed{1} and " * 5000 + "\\boxed{2}",  # thousands of joined boxes (at most 16 are read)
        "\\boxed{1}" * 20000,
        "answer: " + "The x is " * 3000 + "5.",  # a sentence chain after "answer:"
        "\\boxed{" + ", ".join(str(i) for i in range(3000)) + "}",  # a 3000-item list
        "\\boxed{" + ", ".join("x^{%d}" % i for i in range(60)) + "}",  # 60 symbolic items
        "$" * 50000 + "7",
        "$\n" * 20000 + "9",
        "\\boxed{" + "\\{" * 500 + "1" + "\\}" * 500 + "}",
        "\\boxed{" + " or ".join(["x = 1"] * 400) + "}",
    ],
    ids=["joined-boxes", "many-boxes", "sentence-chain", "long-list", "symbolic-list", "dollars", "broken-math",
         "nested-set", "or-chain"],
)
def test_new_paths_stay_bounded_and_wrong(response):
    import time

    for gold in ("2", "C"):
        start = time.monotonic()
        assert compute_score("lighteval/MATH", response, gold)["acc"] == 0.0
        assert time.monotonic() - start < 5.0  # DEFAULT_TIMEOUT_S = 3 per symbolic check, plus slack


def test_think_answer_reads_a_response_whose_think_the_chat_template_opened():
    """003 App. C: 1.0 for properly matched <think> tags; with DeepSeek-R1-Distill's template the prompt ends in
    <think>, so the response holds only </think>."""
    from rlvr_recipes.reward.formats import think_answer
    from rlvr_recipes.reward.math_reward import compute_score

    opened = "reasoning here\n</think>\n<answer>\\boxed{4}</answer>"
    assert think_answer(opened) == 0.0 and think_answer(opened, think_opened=True) == 1.0
    assert think_answer("<think>" + opened, think_opened=True) == 0.0  # a second <think>: not matched
    assert think_answer("<think>a</think><answer>4</answer>") == 1.0
    scored = compute_score("math", opened, "4", recipe="cw_grpo", think_opened=True)
    assert scored["format_think_answer"] == 1.0 and scored["score"] == 2.0
    assert compute_score("math", opened, "4", recipe="cw_grpo")["score"] == 1.0
