"""The evaluation end to end on fixtures: raw benchmark files -> rlvr_recipes.launch.data -> rlvr_recipes.launch.evaluate with the stub generator
-> scores, pass@k, greedy accuracy, JSON and plots; re-scoring; training curves from both verl log formats."""

import json
import math
import os
from fractions import Fraction

import pytest

from rlvr_recipes.launch.data import main as data_main
from rlvr_recipes.launch.evaluate import main as eval_main
from rlvr_recipes.launch.training_log import read_training_log

FIX = os.path.join(os.path.dirname(__file__), "fixtures")
STUB = os.path.join(FIX, "eval", "stub_generations.jsonl")

# Correct samples of 8 in the stub fixture and whether its greedy response is correct, counted by hand from the
# responses (tests/fixtures/README.md says which ones are right and why).
EXPECTED_C = {("math500", 0): 5, ("math500", 1): 4, ("math500", 2): 3, ("math500", 3): 4,
              ("gsm8k", 0): 8, ("gsm8k", 1): 5, ("gsm8k", 2): 0, ("aime24", 0): 1, ("aime24", 1): 2}
EXPECTED_GREEDY = {("math500", 0): 1, ("math500", 1): 0, ("math500", 2): 1, ("math500", 3): 1,
                   ("gsm8k", 0): 1, ("gsm8k", 1): 1, ("gsm8k", 2): 1, ("aime24", 0): 0, ("aime24", 1): 1}


def exact(n, c, k):
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


@pytest.fixture(scope="module")
def benchmark_files(tmp_path_factory):
    out = tmp_path_factory.mktemp("data")
    files = []
    for name, raw in (("math500", "math500.jsonl"), ("gsm8k", "gsm8k.jsonl"), ("aime24", "aime24.json")):
        path = str(out / f"{name}.parquet")
        data_main(["convert", "--dataset", name, "--input", os.path.join(FIX, "raw", raw), "--output", path])
        files.append(path)
    return files


@pytest.fixture(scope="module")
def stub_run(benchmark_files, tmp_path_factory):
    out = tmp_path_factory.mktemp("eval")
    result = eval_main(["--data", *benchmark_files, "--backend", "stub", "--stub-generations", STUB, "--n", "8",
                        "--out", str(out)])
    return out, result


def test_scores_match_the_hand_count(stub_run):
    out, _ = stub_run
    scores = [json.loads(line) for line in (out / "scores.jsonl").read_text().splitlines()]
    assert {(s["data_source"], s["index"]): s["c"] for s in scores} == EXPECTED_C
    assert {(s["data_source"], s["index"]): s["greedy_correct"] for s in scores} == EXPECTED_GREEDY
    assert all(s["n"] == 8 for s in scores)


def test_pass_at_k_json_equals_exact_combinatorics(stub_run):
    out, result = stub_run
    summary = json.loads((out / "passk.json").read_text())
    assert summary["k"] == [1, 2, 4, 8] and summary == json.loads(json.dumps(result["summary"]))
    for source in ("math500", "gsm8k", "aime24"):
        cs = [c for (s, _), c in EXPECTED_C.items() if s == source]
        entry = summary["benchmarks"][source]
        assert entry["problems"] == len(cs)
        for k in (1, 2, 4, 8):
            assert entry[f"pass@{k}"] == pytest.approx(float(sum(exact(8, c, k) for c in cs) / len(cs)), abs=1e-12)
        greedy = [g for (s, _), g in EXPECTED_GREEDY.items() if s == source]
        assert entry["greedy_acc"] == pytest.approx(sum(greedy) / len(greedy))
    for k in (1, 2, 4, 8):  # overall: every problem counts once (000 App. A.3)
        want = float(sum(exact(8, c, k) for c in EXPECTED_C.values()) / len(EXPECTED_C))
        assert summary["overall"]["weighted"][f"pass@{k}"] == pytest.approx(want, abs=1e-12)
    assert summary["overall"]["weighted"]["greedy_acc"] == pytest.approx(7 / 9)
    assert summary["settings"]["backend"] == "stub" and summary["settings"]["n"] == 8


def test_outputs_and_rescoring_agree(stub_run, tmp_path):
    out, result = stub_run
    assert (out / "passk.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    generations = [json.loads(line) for line in (out / "generations.jsonl").read_text().splitlines()]
    assert len(generations) == 9 and all(len(g["responses"]) == 8 and "greedy" in g for g in generations)
    again = eval_main(["--generations", str(out / "generations.jsonl"), "--out", str(tmp_path)])
    assert again["summary"]["benchmarks"] == result["summary"]["benchmarks"]


def test_fewer_samples_than_stubbed_and_no_greedy(benchmark_files, tmp_path):
    res = eval_main(["--data", benchmark_files[1], "--backend", "stub", "--stub-generations", STUB, "--n", "2",
                     "--no-greedy", "--out", str(tmp_path)])
    gsm = res["summary"]["benchmarks"]["gsm8k"]
    # first two responses: problem 0 both right, problem 1 both right, problem 2 both wrong
    assert gsm["pass@1"] == pytest.approx(2 / 3) and "greedy_acc" not in gsm


def test_errors_name_the_problem(benchmark_files, tmp_path):
    with pytest.raises(ValueError, match="fewer than --n 9"):
        eval_main(["--data", benchmark_files[0], "--backend", "stub", "--stub-generations", STUB, "--n", "9",
                   "--out", str(tmp_path)])
    partial = tmp_path / "partial.jsonl"
    partial.write_text(json.dumps({"data_source": "math500", "index": 0, "responses": ["1"] * 8}) + "\n")
    with pytest.raises(KeyError, match="no generations for math500 index 1"):
        eval_main(["--data", benchmark_files[0], "--backend", "stub", "--stub-generations", str(partial), "--n", "8",
                   "--no-greedy", "--out", str(tmp_path)])
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"data_source": "x", "responses": ["1"]}) + "\n")
    with pytest.raises(ValueError, match=r"bad.jsonl:1: generation record lacks 'ground_truth'"):
        eval_main(["--generations", str(bad), "--out", str(tmp_path)])
    with pytest.raises(FileNotFoundError, match="nope.parquet"):
        eval_main(["--data", str(tmp_path / "nope.parquet"), "--backend", "stub", "--stub-generations", STUB,
                   "--out", str(tmp_path)])
    with pytest.raises(SystemExit):
        eval_main(["--data", benchmark_files[0], "--backend", "hf", "--out", str(tmp_path)])  # no --model


def test_training_logs_in_both_verl_formats(tmp_path):
    jsonl = os.path.join(FIX, "eval", "train_file_logger.jsonl")
    console = os.path.join(FIX, "eval", "train_console.log")
    file_curves = read_training_log(jsonl)
    first = json.loads(open(jsonl).readline())
    assert file_curves["critic/score/mean"][0] == (1, first["data"]["critic/score/mean"])
    assert len(file_curves["acr/acr"]) == 40 and file_curves["acr/acr"][-1][0] == 40
    console_curves = read_training_log(console)
    assert console_curves["critic/score/mean"][0] == (1, 0.3349)  # np.float64(0.3349) unwrapped
    assert [s for s, _ in console_curves["actor/entropy"]] == list(range(1, 41))  # noise lines skipped
    assert "trainer/name" not in console_curves and "val-core/math500/acc/mean@1" not in console_curves  # text, nan
    res = eval_main(["--training-log", jsonl, console, "--out", str(tmp_path)])
    assert res["training"]["train_console"] == {"reward": "critic/score/mean", "ACR": "acr/acr",
                                                "entropy": "actor/entropy"}
    assert (tmp_path / "training.png").stat().st_size > 5000


def test_training_log_without_metrics_is_an_error(tmp_path):
    log = tmp_path / "empty.log"
    log.write_text("hello\nno metrics here\n")
    with pytest.raises(ValueError, match="empty.log: no metrics found"):
        read_training_log(str(log))


def test_vllm_backend_wiring_with_a_stand_in_module(benchmark_files, tmp_path, monkeypatch):
    """No GPU here: a stand-in ``vllm`` module with the offline API's shape (LLM.generate -> outputs[i].text) checks
    what the vLLM path sends (chat-templated token ids, n, temperature, top-p, max_tokens) and how it reads back."""
    import sys
    import types
    from types import SimpleNamespace

    from tests.tiny_lm import build_tokenizer

    tok = build_tokenizer(tmp_path / "tok")
    seen = {}

    class SamplingParams:
        def __init__(self, **kw):
            self.__dict__.update(kw)

    class LLM:
        def __init__(self, **kw):
            seen["init"] = kw

        def get_tokenizer(self):
            return tok

        def generate(self, prompts, params):
            seen.setdefault("calls", []).append((prompts, params))
            texts = ["\\boxed{7}", "\\boxed{2000}", "\\boxed{50}"]
            return [SimpleNamespace(outputs=[SimpleNamespace(text=texts[i % 3]) for _ in range(params.n)])
                    for i, _ in enumerate(prompts)]

    monkeypatch.setitem(sys.modules, "vllm", types.SimpleNamespace(LLM=LLM, SamplingParams=SamplingParams))
    res = eval_main(["--data", benchmark_files[1], "--backend", "vllm", "--model", "/models/m", "--n", "4", "--tp", "2",
                     "--temperature", "0.6", "--top-p", "0.95", "--max-new-tokens", "64", "--out", str(tmp_path)])
    assert seen["init"]["model"] == "/models/m" and seen["init"]["tensor_parallel_size"] == 2
    (prompts, sampled), (_, greedy) = seen["calls"]
    assert (sampled.n, sampled.temperature, sampled.top_p, sampled.max_tokens) == (4, 0.6, 0.95, 64)
    assert (greedy.n, greedy.temperature) == (1, 0.0)
    assert tok.decode(prompts[0]["prompt_token_ids"]).endswith("Please reason step by step, and put your final "
                                                              "answer within \\boxed{}.\nassistant: ")
    gsm = res["summary"]["benchmarks"]["gsm8k"]
    assert gsm["pass@4"] == 1.0 and gsm["greedy_acc"] == 1.0  # each stand-in answer is its problem's ground truth
