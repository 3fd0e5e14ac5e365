"""The CPU support of cpu_backend, piece by piece, without Ray or the trainer (fast; the whole loop is in
tests/test_e2e_cpu.py): the backend-string fix, the platform and registrations in a fresh interpreter, the hf
rollout server's batching, log-probabilities and weight sync, the addition reward and the tiny build."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest
import torch

from rlvr_recipes.cpu_backend.patches import dedupe_backend
from rlvr_recipes.reward.arithmetic import compute_score, extract_integer


# ---------------------------------------------------------------------------------------------- backend string


@pytest.mark.parametrize(
    "given, expected",
    [
        ("cpu:gloo,cpu:gloo", "cpu:gloo"),  # what verl builds on the cpu platform
        ("cpu:gloo,cuda:nccl", "cpu:gloo,cuda:nccl"),  # what verl builds on a GPU: unchanged
        ("gloo", "gloo"),
        (None, None),
    ],
)
def test_dedupe_backend(given, expected):
    assert dedupe_backend(given) == expected


def test_dedupe_backend_refuses_two_backends_for_one_device():
    with pytest.raises(ValueError, match="two backends for device 'cpu'"):
        dedupe_backend("cpu:gloo,cpu:mpi")


# ---------------------------------------------------------------------------------------------- activation

_PROBE = r"""
import os, tempfile
import torch.distributed as dist
import verl
from verl.plugin.platform import get_platform
from verl.utils.device import get_device_name, get_device_id
from verl.workers.engine import EngineRegistry
from verl.workers.rollout.base import _ROLLOUT_REGISTRY
from verl.workers.rollout.replica import RolloutReplicaRegistry
p = get_platform()
# verl's own fallback platform (CUDA) cannot even answer get_device_id() on a CPU-only torch
dev_id = get_device_id() if get_device_name() == "cpu" else "-"
print("device", get_device_name(), dev_id, p.ray_resource_name(), p.communication_backend_name())
print("engine", "cpu" in EngineRegistry._engines["language_model"]["fsdp2"])
print("rollout", ("hf", "async") in _ROLLOUT_REGISTRY)
if get_device_name() == "cpu":
    store = "file://" + tempfile.mkdtemp() + "/store"
    dist.init_process_group(backend="cpu:gloo,cpu:gloo", init_method=store, rank=0, world_size=1)
    t = __import__("torch").ones(3)
    dist.all_reduce(t)
    print("gloo", dist.get_backend(), t.tolist())
"""


def _probe(**env):
    full = {k: v for k, v in os.environ.items() if k not in ("VERL_PLATFORM", "RLVR_CPU", "VERL_USE_EXTERNAL_MODULES")}
    full.update(env)
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, env=full, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_verl_platform_cpu_activates_through_the_entry_point_alone():
    """``VERL_PLATFORM=cpu`` + ``import verl``: platform, FSDP engines, hf rollout, verl's gloo backend string."""
    out = _probe(VERL_PLATFORM="cpu")
    assert "device cpu cpu GPU gloo" in out
    assert "engine True" in out and "rollout True" in out
    assert "gloo cpu:gloo [1.0, 1.0, 1.0]" in out


def test_rlvr_cpu_flag_activates_too():
    assert "device cpu cpu GPU gloo" in _probe(RLVR_CPU="1")


def test_nothing_changes_without_the_request():
    """Without the variable, verl keeps its own (CUDA fallback) platform and no cpu registration exists."""
    out = _probe()
    assert "device cuda" in out
    assert "engine False" in out and "rollout False" in out


# ---------------------------------------------------------------------------------------------- tiny build


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """A randomly initialised tiny model + tokenizer + data (no warm start: seconds)."""
    from rlvr_recipes.tiny_task.build import build

    return build(str(tmp_path_factory.mktemp("tiny")))


def test_tokenizer_round_trips_and_prompt_is_the_plain_text(tiny_model):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model["model"])
    text = "12+34=\n46\t x{}"
    ids = tok.encode(text, add_special_tokens=False)
    assert len(ids) == len(text) and tok.decode(ids) == text
    rendered = tok.apply_chat_template([{"role": "user", "content": "47+8="}], add_generation_prompt=True,
                                       tokenize=False)
    assert rendered == "47+8="


def test_task_splits_are_disjoint_and_scored_by_the_reward(tiny_model):
    import pandas as pd

    train, test = (pd.read_parquet(tiny_model[k]) for k in ("train", "test"))
    assert (len(train), len(test)) == (900, 100)
    prompts = lambda df: {row[0]["content"] for row in df["prompt"]}  # noqa: E731
    assert not prompts(train) & prompts(test)
    for df in (train, test):
        for prompt, rm in zip(df["prompt"], df["reward_model"]):
            a, b = map(int, prompt[0]["content"].rstrip("=").split("+"))
            assert rm["ground_truth"] == str(a + b)
            assert compute_score("arithmetic/addition", f"{a + b}</s>", rm["ground_truth"]) == 1.0


def test_warm_start_reports_every_check_and_a_target_above_one_never_stops(tiny_model, tmp_path):
    """on_check sees each check (every eval_every steps) with the probe accuracy the stopping rule sees; a target
    above 1 runs to max_steps, as benchmarks/addition_warm_start_spread.py uses it."""
    import shutil

    from rlvr_recipes.tiny_task.task import TaskSpec
    from rlvr_recipes.tiny_task.warmstart import warm_start

    model_dir = str(tmp_path / "model")
    shutil.copytree(tiny_model["model"], model_dir)
    seen = []
    result = warm_start(model_dir, TaskSpec(), max_steps=6, target_acc=2.0, batch_size=8, eval_every=3,
                        on_check=lambda step, acc, model: seen.append((step, acc, model.training)))
    assert [s for s, _, _ in seen] == [3, 6] and result["steps"] == 6
    assert seen[-1][1] == result["train_probe_acc_sampled"] and not any(training for _, _, training in seen)


def test_warm_start_spread_reads_the_stopping_rule_off_a_trajectory():
    from benchmarks.addition_warm_start_spread import stops

    rows = [{"step": 10, "probe_sampled": 0.2, "test_greedy": 0.3},
            {"step": 20, "probe_sampled": 0.5, "test_greedy": 0.6},
            {"step": 30, "probe_sampled": 0.4, "test_greedy": 0.5}]
    assert stops({0: rows, 1: rows[:1]}, 0.45) == [{"seed": 0, **rows[1]}]  # seed 1 never reached the target
    assert [r["step"] for r in stops({0: rows}, 0.2)] == [10]


def test_build_is_reused_when_settings_match(tiny_model):
    from rlvr_recipes.tiny_task.build import build

    before = os.path.getmtime(os.path.join(tiny_model["model"], "model.safetensors"))
    assert build(os.path.dirname(tiny_model["model"])) == tiny_model
    assert os.path.getmtime(os.path.join(tiny_model["model"], "model.safetensors")) == before


def test_ensure_tiny_uses_a_build_with_its_own_settings_as_it_is(tmp_path, capsys):
    """A build of another task size (no warm start) under --tiny-dir is not replaced by the default build."""
    from rlvr_recipes.launch.cpu_run import ensure_tiny
    from rlvr_recipes.tiny_task.build import build
    from rlvr_recipes.tiny_task.task import TaskSpec

    paths = build(str(tmp_path / "own"), task=TaskSpec(train_size=40, test_size=10))
    before = os.path.getmtime(os.path.join(paths["model"], "model.safetensors"))
    assert ensure_tiny(str(tmp_path / "own")) == paths
    assert os.path.getmtime(os.path.join(paths["model"], "model.safetensors")) == before
    assert "a build with its own settings, used as it is" in capsys.readouterr().out


def test_ensure_tiny_rebuilds_a_default_build_made_by_an_older_recipe(tmp_path, monkeypatch):
    """The default task and model with another warm start (here none, as an older recipe might have left) get the
    default build: the task's warm-start target."""
    import rlvr_recipes.tiny_task.build as tiny_build
    from rlvr_recipes.launch.cpu_run import WARM_START_TARGET, ensure_tiny

    tiny_build.build(str(tmp_path / "old"))
    calls = []
    monkeypatch.setattr(tiny_build, "build", lambda out, *a, **kw: calls.append((out, a, kw)) or {})
    ensure_tiny(str(tmp_path / "old"))
    (out, args, kwargs), = calls
    assert out == str(tmp_path / "old") and kwargs["warm_start_target"] == WARM_START_TARGET


def test_ensure_tiny_refuses_a_build_of_another_task(tmp_path):
    import json

    from rlvr_recipes.launch.cpu_run import ensure_tiny

    (tmp_path / "cd").mkdir()
    (tmp_path / "cd" / "build.json").write_text(json.dumps({"task": {"name": "countdown"}, "model": {}}))
    with pytest.raises(ValueError, match=r"cd/build.json holds a build of the countdown task, not of addition"):
        ensure_tiny(str(tmp_path / "cd"))


def test_build_settings_read_back_the_task_they_record():
    import json

    from rlvr_recipes.tiny_task.build import COUNTDOWN_MODEL, TinyModelSpec, build_settings, task_from_settings
    from rlvr_recipes.tiny_task.countdown import CountdownSpec
    from rlvr_recipes.tiny_task.task import TaskSpec

    addition = build_settings(TinyModelSpec(), TaskSpec(train_size=450), warm_start_target=0.45)
    assert task_from_settings(json.loads(json.dumps(addition))) == ("addition", TaskSpec(train_size=450))
    assert addition["warm_start_eval_every"] == 10 and addition["ref_samples"] == 8
    countdown = build_settings(COUNTDOWN_MODEL, CountdownSpec(train_size=64), warm_start_target=0.3, ref_samples=2)
    kind, spec = task_from_settings(json.loads(json.dumps(countdown)))
    assert kind == "countdown" and spec.train_size == 64 and "warm_start_eval_every" not in countdown
    assert spec == CountdownSpec(train_size=64) and spec.sizes == (3, 4)  # the stamp's JSON lists read back as tuples
    hash(spec)
    # what it reads back records the same settings again (the stamp's tuples are lists on both sides)
    assert build_settings(COUNTDOWN_MODEL, spec, 0.3, 2) == countdown
    assert build_settings(TinyModelSpec(), TaskSpec())["ref_samples"] == 0  # no warm start, no reference cache


# ---------------------------------------------------------------------------------------------- reward


@pytest.mark.parametrize(
    "response, truth, score",
    [("55", "55", 1.0), (" 55</s>", 55, 1.0), ("-3", "-3", 1.0), ("56", "55", 0.0), ("", "55", 0.0),
     ("x55", "55", 0.0), ("5 5", "55", 0.0), ("550", "55", 0.0)],
)
def test_arithmetic_reward(response, truth, score):
    assert compute_score("arithmetic/addition", response, truth) == score


def test_arithmetic_reward_names_a_bad_ground_truth():
    with pytest.raises(ValueError, match="ground_truth must be an integer, got 'abc'"):
        compute_score("src", "1", "abc")
    assert extract_integer("  -12abc") == -12 and extract_integer("abc") is None


# ---------------------------------------------------------------------------------------------- hf rollout server


def _server(tiny_model, **config):
    from rlvr_recipes.cpu_backend.rollout import HFServer

    cfg = {"prompt_length": 8, "response_length": 4, "dtype": "float32", "max_num_seqs": 256,
           "engine_kwargs": {"hf": {"batch_wait_s": 0.05}}, **config}
    return HFServer(cfg, {"path": tiny_model["model"], "override_config": {"attn_implementation": "sdpa"}})


def test_server_batches_concurrent_requests_and_reports_processed_logprobs(tiny_model):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model["model"])
    server = _server(tiny_model)
    prompts = [tok.encode(p, add_special_tokens=False) for p in ("1+2=", "47+8=", "9+9=", "12+3=")]
    params = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "logprobs": True}

    async def run():
        return await asyncio.gather(*(server.generate(p, params, request_id=str(i)) for i, p in enumerate(prompts)))

    outs = asyncio.run(run())
    assert server.stats()["requests"] == 4 and server.stats()["batches"] == 1  # one generate call for all four
    model = AutoModelForCausalLM.from_pretrained(tiny_model["model"], dtype=torch.float32).eval()
    eos = tok.eos_token_id
    for prompt, out in zip(prompts, outs):
        assert 1 <= len(out.token_ids) <= 4
        assert eos not in out.token_ids[:-1]  # cut after the first end-of-sequence token
        # temperature 1, no top-k/top-p: processed log-probs are the model's own, recomputed without padding
        with torch.no_grad():
            logits = model(torch.tensor([prompt + out.token_ids])).logits[0, len(prompt) - 1 : -1]
        expected = torch.log_softmax(logits, -1).gather(-1, torch.tensor(out.token_ids)[:, None]).squeeze(-1)
        torch.testing.assert_close(torch.tensor(out.log_probs), expected, atol=1e-4, rtol=1e-4)


def test_server_answer_belongs_to_the_request_not_to_its_batch(tiny_model):
    """A request's draws come from its own key: alone, or left-padded beside a longer prompt, in another place of
    the batch, it gets the same tokens and the same processed log-probs."""
    server = _server(tiny_model)
    key = server._sampling_key(5, {"temperature": 1.0, "logprobs": True})
    alone = server._generate_batch([[5, 6, 7]], key, [(11, 12)])
    batched = server._generate_batch([[9, 9, 9, 9, 9], [4, 4], [5, 6, 7]], key, [(1, 2), (3, 4), (11, 12)])
    assert batched[2][0] == alone[0][0]
    torch.testing.assert_close(torch.tensor(batched[2][1]), torch.tensor(alone[0][1]), atol=1e-5, rtol=1e-5)
    # another key, another answer for the same prompt (a random model spreads its mass over ~100 tokens)
    assert server._generate_batch([[5, 6, 7]], key, [(13, 14)])[0][0] != alone[0][0]


def test_rollout_batch_numerics_compares_answers_and_widens_a_call(tiny_model):
    """benchmarks/rollout_batch_numerics.py: its comparison worked by hand, the same call twice equal to the last bit,
    and a call widened by one filler row whose answer is dropped."""
    from benchmarks.rollout_batch_numerics import answer, compare

    reference = [([1, 2], [-0.5, -0.25]), ([3], [-1.0])]
    assert compare(reference, [0, 1], [([1, 2], [-0.5, -0.125]), ([4], [-1.0])]) == {
        "answers": 2, "bitwise_equal": False, "largest_logprob_diff": 0.125, "answers_with_other_tokens": 1}
    assert compare(reference, [1], [([3], [-1.0])])["bitwise_equal"] is True
    server = _server(tiny_model)
    prompts = [[5, 6, 7], [4, 4], [9, 9, 9, 9, 9]]
    first = answer(server, prompts, [0, 1, 2], 5)
    assert compare(first, [0, 1, 2], answer(server, prompts, [0, 1, 2], 5))["bitwise_equal"] is True
    before = server.stats()["requests"]
    assert len(answer(server, prompts, [1], 7)) == 1 and server.stats()["requests"] == before + 2


def test_two_servers_of_one_seed_answer_a_group_alike_whatever_the_arrival_order(tiny_model):
    """Two runs of one seed: the n samples of a prompt are the same n answers, whichever order the requests
    arrive in and however they are batched; another seed or another step draws others."""
    params = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "logprobs": True}
    prompts = [[5, 6, 7]] * 4 + [[8, 9]] * 4

    def answers(seed, order, step=None, wait=0.05):
        server = _server(tiny_model, seed=seed, engine_kwargs={"hf": {"batch_wait_s": wait}})
        server.global_steps = step

        async def run():
            return await asyncio.gather(*(server.generate(prompts[i], params, request_id=str(i)) for i in order))

        outs = asyncio.run(run())
        by_prompt: dict[tuple, list] = {}
        for i, out in zip(order, outs):
            by_prompt.setdefault(tuple(prompts[i]), []).append(tuple(out.token_ids))
        return {p: sorted(a) for p, a in by_prompt.items()}

    first = answers(0, list(range(8)))
    assert first == answers(0, [7, 3, 5, 0, 6, 2, 4, 1])
    assert first == answers(0, list(range(8)), wait=0.0)
    assert len(set(first[(5, 6, 7)])) > 1  # the four samples of a group differ from each other
    assert first != answers(1, list(range(8)))
    assert first != answers(0, list(range(8)), step=3)


def test_server_sampling_applies_temperature_and_top_k_before_it_draws(tiny_model):
    from transformers import AutoModelForCausalLM

    server = _server(tiny_model)
    key = server._sampling_key(3, {"temperature": 0.7, "top_k": 5, "logprobs": True, "max_tokens": 3})
    model = AutoModelForCausalLM.from_pretrained(tiny_model["model"], dtype=torch.float32).eval()
    prompt = [5, 6, 7]
    for noise in [(i, 2 * i + 1) for i in range(10)]:
        tokens, log_probs = server._generate_batch([prompt], key, [noise])[0]
        with torch.no_grad():
            logits = model(torch.tensor([prompt + tokens])).logits[0, len(prompt) - 1 : -1] / 0.7
        top = logits.topk(5, dim=-1)
        for t, (token, lp) in enumerate(zip(tokens, log_probs)):
            assert token in top.indices[t].tolist()
            expected = torch.log_softmax(top.values[t], -1)[top.indices[t].tolist().index(token)]
            assert abs(lp - float(expected)) < 1e-4


def test_passk_scoring_draws_belong_to_the_prompt_and_sample_not_to_the_batch(tiny_model):
    """pass@k scoring (launch.compare.sample_correct_counts) draws sample j of a prompt from its own keyed stream:
    the counts do not depend on how the prompts are batched, and another seed draws others."""
    import pandas as pd

    from rlvr_recipes.launch.compare import sample_correct_counts

    def score(seed, batch_prompts, record=None):
        return sample_correct_counts(tiny_model["model"], tiny_model["test"], compute_score, 4, 4, seed=seed,
                                     batch_prompts=batch_prompts, record=record)

    first, by_two = {}, {}
    counts = score(0, 64, first)
    assert len(counts) == len(pd.read_parquet(tiny_model["test"]))
    assert (score(0, 2, by_two) == counts).all() and by_two == first
    other = {}
    score(1, 64, other)
    assert other["tokens"] != first["tokens"]


def test_greedy_accuracy_is_each_prompts_greedy_answer_scored_whatever_the_batch(tiny_model):
    """launch.compare.greedy_accuracy (a build's mark, task_properties' greedy_acc): the fraction of prompts whose
    greedy response the reward scores 1, equal to each prompt decoded alone, without padding, and for any batch size;
    greedy_right, prompt by prompt (what a level's run is scored on its own third by), the same row by row.
    The untrained model answers every prompt alike, so the reward here scores an answer by its first character and
    its row's ground truth (an even sum), so that some rows are right and some not."""
    import pandas as pd
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rlvr_recipes.launch.compare import greedy_accuracy, greedy_right, render_prompts

    def first_character_and_sum(data_source, text, ground_truth):
        return {"score": float(bool(text) and (ord(text[0]) + int(ground_truth)) % 2 == 1)}

    tok = AutoTokenizer.from_pretrained(tiny_model["model"])
    model = AutoModelForCausalLM.from_pretrained(tiny_model["model"], dtype=torch.float32).eval()
    df = pd.read_parquet(tiny_model["test"])
    by_row = []
    for row, prompt in enumerate(render_prompts(tok, df["prompt"])):
        ids = torch.tensor([tok.encode(prompt, add_special_tokens=False)])
        with torch.no_grad():
            out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=3, do_sample=False,
                                 pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)
        text = tok.decode(out[0, ids.shape[1]:], skip_special_tokens=True)
        by_row.append(bool(first_character_and_sum(None, text, df["reward_model"].iloc[row]["ground_truth"])["score"]))
    expected = sum(by_row) / len(df)
    assert 0 < expected < 1  # the test can tell a right count from a wrong one
    assert greedy_accuracy(tiny_model["model"], tiny_model["test"], first_character_and_sum, 3) == pytest.approx(expected)
    assert greedy_accuracy(tiny_model["model"], tiny_model["test"], first_character_and_sum, 3, batch_prompts=7) == \
        pytest.approx(expected)
    assert greedy_right(tiny_model["model"], tiny_model["test"], first_character_and_sum, 3,
                        batch_prompts=7).tolist() == by_row


def test_server_greedy_is_deterministic_and_respects_max_tokens(tiny_model):
    server = _server(tiny_model)
    params = {"temperature": 0.0, "max_tokens": 2}
    a = asyncio.run(server.generate([5, 6, 7], params, request_id="a"))
    b = asyncio.run(server.generate([5, 6, 7], params, request_id="b"))
    assert a.token_ids == b.token_ids and len(a.token_ids) <= 2 and a.log_probs is None


def test_server_weight_sync_loads_weights_and_rejects_foreign_ones(tiny_model):
    server = _server(tiny_model)
    state = {k: torch.zeros_like(v) for k, v in server.model.state_dict().items()}
    asyncio.run(server.update_weights(state, global_steps=3))
    assert all(float(v.abs().sum()) == 0.0 for v in server.model.state_dict().values())
    assert server.global_steps == 3
    with pytest.raises(RuntimeError, match="unexpected keys"):
        asyncio.run(server.update_weights({"not.a.weight": torch.zeros(1)}))


def test_server_refuses_prompt_that_leaves_no_room(tiny_model):
    server = _server(tiny_model, max_model_len=4)
    with pytest.raises(ValueError, match="max_model_len=4"):
        asyncio.run(server.generate([1, 2, 3, 4], {"temperature": 1.0}, request_id="x"))


def test_server_process_needs_no_verl():
    """The server's module, its answers and its settings import no verl: the Ray worker that runs it would spend
    about 9 s of 2 cores on verl's imports, at every run of a comparison."""
    code = ("import pickle, sys\n"
            "from rlvr_recipes.cpu_backend.hf_server import HFServer, ServerOutput, server_settings\n"
            "pickle.dumps(ServerOutput(token_ids=[1, 2], log_probs=[-0.5, -0.25]))\n"
            "server_settings({'dtype': 'float32', 'seed': 1}, {'path': '/m'})\n"
            "print(sorted(m for m in sys.modules if m == 'verl' or m.startswith('verl.')))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[]", proc.stdout


def test_server_answer_arrives_as_verls_token_output():
    """A :class:`ServerOutput` sent through Ray (pickled) is unpickled as verl's ``TokenOutput``, fields kept."""
    import pickle

    from verl.workers.rollout.replica import TokenOutput

    from rlvr_recipes.cpu_backend.hf_server import ServerOutput

    sent = ServerOutput(token_ids=[4, 5, 2], log_probs=[-0.5, -1.25, -0.125], stop_reason="completed",
                        extra_fields={"global_steps": 7})
    got = pickle.loads(pickle.dumps(sent))
    assert isinstance(got, TokenOutput)
    assert (got.token_ids, got.log_probs, got.stop_reason, got.extra_fields) == (
        [4, 5, 2], [-0.5, -1.25, -0.125], "completed", {"global_steps": 7})


def test_server_settings_from_verls_configs_are_plain_and_complete():
    """What the replica hands the server: verl's rollout config (a dataclass) and model config read into plain
    dicts that hold every field the server reads, and no verl class."""
    import pickle

    from omegaconf import OmegaConf
    from verl.utils.config import omega_conf_to_dataclass

    from rlvr_recipes.cpu_backend.hf_server import server_settings

    rollout = omega_conf_to_dataclass(OmegaConf.create({
        "_target_": "verl.workers.config.RolloutConfig", "name": "hf", "dtype": "float32", "prompt_length": 16,
        "response_length": 8, "max_num_seqs": 64, "seed": 3, "engine_kwargs": {"hf": {"batch_wait_s": 0.01}}}))
    model = OmegaConf.create({"path": "/models/tiny", "override_config": {"attn_implementation": "sdpa"},
                              "trust_remote_code": False})
    rollout_settings, model_settings = server_settings(rollout, model)
    assert rollout_settings == {"engine_kwargs": {"hf": {"batch_wait_s": 0.01}}, "dtype": "float32",
                                "prompt_length": 16, "response_length": 8, "max_num_seqs": 64, "seed": 3,
                                "ignore_eos": False}  # max_model_len is None: the server's default applies
    assert model_settings == {"path": "/models/tiny", "override_config": {"attn_implementation": "sdpa"},
                              "trust_remote_code": False}
    assert b"verl" not in pickle.dumps((rollout_settings, model_settings))


# ---------------------------------------------------------------------------------------------- plot


def test_acr_from_rollout_dumps_groups_responses_by_prompt(tmp_path):
    """Two steps of verl rollout dumps (uid ``<prompt>_<session>_<turn>``): step 1 has one collapsed group of two
    (prompt a: 1, 1; prompt b: 0, 1) -> 0.5; step 2 has both collapsed -> 1.0."""
    import json

    from rlvr_recipes.launch.cpu_plot import acr_from_rollouts

    dumps = {1: [("a", 1.0), ("a", 1.0), ("b", 0.0), ("b", 1.0)], 2: [("a", 0.0), ("a", 0.0), ("b", 1.0), ("b", 1.0)]}
    for step, rows in dumps.items():
        with open(tmp_path / f"{step}.jsonl", "w") as f:
            for i, (prompt, score) in enumerate(rows):
                f.write(json.dumps({"step": step, "uid": f"{prompt}_{i}_0", "score": score}) + "\n")
    assert acr_from_rollouts(str(tmp_path)) == {1: 0.5, 2: 1.0}
