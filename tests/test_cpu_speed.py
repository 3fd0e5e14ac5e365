"""The CPU run's speed settings and reporting: the replay buffer's poll interval, one agent loop per agent-loop worker,
one TransferQueue put per group and one load-balancer lookup per batch, the end-of-run summary line, the plot's band
and the benchmark's per-phase medians (values worked by hand)."""

from __future__ import annotations

import asyncio
import json
import os

import pytest
import torch
from omegaconf import OmegaConf

from benchmarks.bench_cpu_step import phase_medians, table
from rlvr_recipes.launch.cpu_plot import plot_seeds, rolling_band, val_accuracy
from rlvr_recipes.launch.cpu_run import run_summary


def _buffer(sampler_kwargs):
    from rlvr_recipes.cpu_backend.patches import honour_replay_buffer_poll_interval
    from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer

    honour_replay_buffer_poll_interval()
    honour_replay_buffer_poll_interval()  # idempotent
    return ReplayBuffer(trainer_mode="sync", trainer_config=OmegaConf.create({}), max_off_policy_threshold=None,
                        max_off_policy_strategy="drop", sampler_kwargs=OmegaConf.create(sampler_kwargs))


def test_replay_buffer_takes_its_poll_interval_from_sampler_kwargs():
    assert _buffer({"poll_interval": 0.02}).poll_interval == 0.02
    assert _buffer({}).poll_interval == 2.0  # verl's default when the key is absent
    with pytest.raises(ValueError, match="poll_interval"):
        _buffer({"poll_interval": 0})


def test_cpu_config_sets_a_short_poll_interval_and_no_dashboard():
    cfg = OmegaConf.load(os.path.join(os.path.dirname(__file__), "..", "rlvr_recipes", "configs", "cpu.yaml"))
    assert 0 < cfg.trainer.v1.sampler.sampler_kwargs.poll_interval <= 0.05
    assert cfg.ray_kwargs.ray_init.include_dashboard is False


def _loop_worker(monkeypatch, registry_entry):
    """A ReusedLoopWorker without its Ray actor or verl's __init__: its agent loops are counted fakes."""
    from rlvr_recipes.cpu_backend import agent_loop

    monkeypatch.setitem(agent_loop._agent_loop_registry, "single_turn_agent", registry_entry)
    worker = agent_loop.ReusedLoopWorker.__new__(agent_loop.ReusedLoopWorker)
    worker._reused_loop = None  # what its __init__ sets after verl's
    built, served = [], []

    class FakeLoop:
        async def run(self, sampling_params, **kwargs):
            served.append((id(self), kwargs["raw_prompt"]))
            return f"answer to {kwargs['raw_prompt']}"

    def build(agent_name):
        built.append(agent_name)
        return FakeLoop()

    async def entry(output, validate, **kwargs):
        return (output, validate)

    monkeypatch.setattr(worker, "_build_agent_loop", build)
    monkeypatch.setattr(worker, "_sample_entry", entry)
    return worker, built, served


def _run_samples(worker, n, agent_name="single_turn_agent"):
    trajectory = {"step": 1, "sample_index": 0, "rollout_n": 0, "validate": False}

    async def run():
        return await asyncio.gather(*(worker._run_agent_loop({"temperature": 1.0}, trajectory, agent_name=agent_name,
                                                             trace=False, raw_prompt=f"p{i}") for i in range(n)))

    return asyncio.run(run())


def test_the_single_turn_agent_loop_is_built_once_per_worker(monkeypatch):
    """verl builds an agent loop per sample; the CPU lab's worker builds verl's SingleTurnAgentLoop once and runs
    every sample through it, each answer going to the postprocessing with its own sample's arguments."""
    from rlvr_recipes.cpu_backend.agent_loop import REUSED_LOOP_CLASS

    worker, built, served = _loop_worker(monkeypatch, {"_target_": REUSED_LOOP_CLASS})
    outs = _run_samples(worker, 5) + _run_samples(worker, 3)  # two steps
    assert built == ["single_turn_agent"]
    assert len({loop for loop, _ in served}) == 1
    assert [prompt for _, prompt in served] == [f"p{i}" for i in range(5)] + [f"p{i}" for i in range(3)]
    assert outs[:5] == [(f"answer to p{i}", False) for i in range(5)]


@pytest.mark.parametrize("entry", [
    {"_target_": "my_agents.ToolAgentLoop"},  # another loop registered under the name: it may keep state
    {"_target_": "verl.experimental.agent_loop.single_turn_agent_loop.SingleTurnAgentLoop", "max_turns": 3},
])
def test_any_other_agent_loop_is_built_per_sample_by_verl(monkeypatch, entry):
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker

    worker, built, _ = _loop_worker(monkeypatch, entry)
    calls = []

    async def verls_run(self, sampling_params, trajectory, *, agent_name, trace=True, **kwargs):
        calls.append((agent_name, kwargs["raw_prompt"]))
        return "verl's"

    monkeypatch.setattr(AgentLoopWorker, "_run_agent_loop", verls_run)
    assert _run_samples(worker, 3) == ["verl's"] * 3
    assert calls == [("single_turn_agent", f"p{i}") for i in range(3)] and built == []


class _FakeTQ:
    """TransferQueue's put calls, recorded in order."""

    def __init__(self):
        self.calls = []

    async def async_kv_put(self, key, partition_id, tag):
        self.calls.append(("status", key, partition_id, tag["status"]))

    async def async_kv_batch_put(self, keys, partition_id, fields=None, tags=None):
        self.calls.append(("data", list(keys), partition_id, fields, tags))


def _group_worker(monkeypatch, sessions):
    """A ReusedLoopWorker whose sample ``i`` returns ``sessions[i]`` (raised if an exception), with TransferQueue and
    the tensordict conversion faked: what ``_run_prompt`` puts is recorded."""
    from rlvr_recipes.cpu_backend import agent_loop

    tq = _FakeTQ()
    monkeypatch.setattr(agent_loop, "tq", tq)
    monkeypatch.setattr(agent_loop, "list_of_dict_to_tensordict", lambda fields: list(fields))
    worker = agent_loop.ReusedLoopWorker.__new__(agent_loop.ReusedLoopWorker)
    worker.config = OmegaConf.create({"actor_rollout_ref": {"rollout": {"n": len(sessions), "val_kwargs": {"n": 1}}}})

    async def run_agent_loop(sampling_params, trajectory, *, trace, session_id, **prompt):
        await asyncio.sleep(0.01 * (len(sessions) - session_id))  # the last session finishes first
        result = sessions[session_id]
        if isinstance(result, Exception):
            raise result
        return result

    monkeypatch.setattr(worker, "_run_agent_loop", run_agent_loop)
    trajectory = {"step": 1, "sample_index": 0, "rollout_n": 0, "validate": False}
    asyncio.run(worker._run_prompt({"uid": "u"}, {"temperature": 1.0}, trajectory))
    return tq.calls


def _entry(session_id):
    from rlvr_recipes.cpu_backend.agent_loop import SampleEntry

    return SampleEntry(key=f"u_{session_id}_0", field={"session_id": session_id}, tag={"status": "success"})


def test_a_groups_samples_are_put_in_one_call_in_session_order_before_its_status(monkeypatch):
    """verl puts each sample as it finishes (here the last first); the worker puts the group once, in session
    order, between the 'running' and 'finished' statuses."""
    calls = _group_worker(monkeypatch, [_entry(i) for i in range(3)])
    assert [c[0] for c in calls] == ["status", "data", "status"]
    assert calls[0] == ("status", "u", "train", "running") and calls[2] == ("status", "u", "train", "finished")
    _, keys, partition, fields, tags = calls[1]
    assert keys == ["u_0_0", "u_1_0", "u_2_0"] and partition == "train"
    assert fields == [{"session_id": i} for i in range(3)] and tags == [{"status": "success"}] * 3


def test_a_failed_sample_fails_its_group_and_the_others_are_put(monkeypatch):
    """As in verl: the finished samples' entries are put, and the group's status is 'failure'. A sample of another
    agent loop (None: verl's method put it itself) is not put again."""
    calls = _group_worker(monkeypatch, [_entry(0), RuntimeError("server gone"), None, _entry(3)])
    assert [c[0] for c in calls] == ["status", "data", "status"]
    assert calls[1][1] == ["u_0_0", "u_3_0"] and calls[2][3] == "failure"
    assert _group_worker(monkeypatch, [None, None])[1:] == [("status", "u", "train", "finished")]


def test_a_sample_entry_is_what_verls_worker_puts(monkeypatch):
    """The key, fields and tag of a sample's entry are those verl's AgentLoopWorkerTQ._agent_loop_postprocess puts
    for the same output (verl 0.9.1; its put and its tensordict conversion recorded)."""
    from verl.experimental.agent_loop.agent_loop import AgentLoopMetrics, AgentLoopOutput
    from verl.trainer.ppo.v1 import agent_loop_tq

    from rlvr_recipes.cpu_backend.agent_loop import ReusedLoopWorker

    def output():
        return AgentLoopOutput(prompt_ids=[5, 6, 7], response_ids=[8, 9], response_mask=[1, 1],
                               response_logprobs=[-0.5, -0.25], reward_score=1.0, num_turns=2,
                               metrics=AgentLoopMetrics(generate_sequences=0.1),
                               extra_fields={"min_global_steps": 3, "max_global_steps": 3})

    kwargs = {"uid": "u", "session_id": 4, "global_steps": 3, "raw_prompt": [{"role": "user", "content": "1+1"}],
              "index": 7}
    worker = ReusedLoopWorker.__new__(ReusedLoopWorker)
    worker.processor, worker.reward_loop_worker_handles, worker.distillation_enabled = None, None, False
    tq = _FakeTQ()
    monkeypatch.setattr(agent_loop_tq, "tq", tq)
    monkeypatch.setattr(agent_loop_tq, "list_of_dict_to_tensordict", lambda fields: list(fields))
    asyncio.run(agent_loop_tq.AgentLoopWorkerTQ.__ray_actor_class__._agent_loop_postprocess(
        worker, output(), False, **kwargs))
    [(_, keys, partition, [verls_field], [verls_tag])] = tq.calls
    entry = asyncio.run(worker._sample_entry(output(), False, **kwargs))
    assert keys == [entry.key] == ["u_4_0"] and partition == "train"
    assert entry.tag == verls_tag
    assert set(entry.field) == set(verls_field)
    for name, value in verls_field.items():
        if isinstance(value, torch.Tensor):
            assert torch.equal(entry.field[name], value), name
        else:
            assert entry.field[name] == value, name


def test_cpu_config_selects_the_reused_loop_manager():
    """cpu.yaml names the manager through verl's own setting, and verl's loader finds it and its workers."""
    from verl.utils.import_utils import load_class_from_fqn

    from rlvr_recipes.cpu_backend.agent_loop import ReusedLoopManager, ReusedLoopWorker

    cfg = OmegaConf.load(os.path.join(os.path.dirname(__file__), "..", "rlvr_recipes", "configs", "cpu.yaml"))
    fqn = cfg.actor_rollout_ref.rollout.agent.agent_loop_manager_class
    assert load_class_from_fqn(fqn, "AgentLoopManager") is ReusedLoopManager
    manager = ReusedLoopManager(config=OmegaConf.create({"actor_rollout_ref": {"rollout": {}, "model": {}}}),
                                llm_client=None)  # its workers start in create(), not here
    assert manager.agent_loop_workers_class.__ray_actor_class__ is ReusedLoopWorker


class _Done:
    """An awaitable that is already done, as a Ray ObjectRef of a finished call (the call ran when it was made)."""

    def __init__(self, value):
        self.value = value

    def __await__(self):
        if False:
            yield
        return self.value


class _Actor:
    """A Ray actor handle faked over a plain object: ``handle.method.remote(...)`` runs the method at once and counts
    the call."""

    def __init__(self, obj):
        self._obj, self.calls = obj, []

    def __getattr__(self, name):
        method, calls = getattr(self._obj, name), self.calls

        class _Method:
            @staticmethod
            def remote(*args, **kwargs):
                calls.append(name)
                return _Done(method(*args, **kwargs))

        return _Method


class _Server:
    def __init__(self, name):
        self.name, self.requests = name, []

    def generate(self, request_id, prompt_ids, sampling_params, **kwargs):
        from verl.workers.rollout.replica import TokenOutput

        self.requests.append(list(prompt_ids))
        return TokenOutput(token_ids=[7], log_probs=[-0.5], extra_fields={"global_steps": 3})


def _one_server_client(servers):
    """verl's load balancer over fake servers, behind an OneServerClient made from verl's own client."""
    from verl.workers.rollout.llm_server import LLMServerClient
    from verl.workers.rollout.router import GlobalRequestLoadBalancer

    from rlvr_recipes.cpu_backend.agent_loop import OneServerClient, one_server_client

    handles = {name: _Actor(_Server(name)) for name in servers}
    balancer = _Actor(GlobalRequestLoadBalancer(servers=handles))
    config = OmegaConf.create({"actor_rollout_ref": {"rollout": {"name": "hf"}}})
    plain = LLMServerClient(config, load_balancer_handle=balancer)
    plain.tokenizer = "kept"
    client = one_server_client(plain)
    assert isinstance(client, OneServerClient) and client.tokenizer == "kept" and client.config is config
    return client, balancer, handles


def _requests(client, n, first=0):
    async def run():
        return await asyncio.gather(*(client.generate(f"r{i}", prompt_ids=[i], sampling_params={})
                                      for i in range(first, first + n)))

    return asyncio.run(run())


def test_one_server_is_asked_for_once_a_batch_not_once_a_request():
    """verl's client makes an acquire and a release call to the balancer for every request; with one server the
    client asks once after each refresh (its servers, one acquisition, released), and sends every request there."""
    client, balancer, handles = _one_server_client(["s0"])
    outputs = _requests(client, 16)
    assert [o.token_ids for o in outputs] == [[7]] * 16 and outputs[0].extra_fields["min_global_steps"] == 3
    assert sorted(handles["s0"]._obj.requests) == [[i] for i in range(16)]
    lookup = ["get_all_servers", "require_acquire_fields", "require_release_fields", "acquire_server",
              "release_server"]
    assert balancer.calls == lookup
    assert balancer._obj._inflight_requests == {"s0": 0} and not client._direct
    _requests(client, 16, first=16)  # no refresh: no call
    assert balancer.calls == lookup
    client.refresh()  # the next batch of prompts asks again
    _requests(client, 16, first=32)
    assert balancer.calls == lookup + ["get_all_servers", "acquire_server", "release_server"]


def test_with_two_servers_every_request_goes_through_the_balancer():
    client, balancer, handles = _one_server_client(["s0", "s1"])
    _requests(client, 10)
    assert balancer.calls.count("get_all_servers") == 1
    assert balancer.calls.count("acquire_server") == 10 and balancer.calls.count("release_server") == 10
    assert sum(len(h._obj.requests) for h in handles.values()) == 10
    assert balancer._obj._inflight_requests == {"s0": 0, "s1": 0}


def test_a_failed_lookup_takes_verls_path_and_is_asked_again():
    client, balancer, handles = _one_server_client(["s0"])
    real = balancer._obj.get_all_servers
    balancer._obj.get_all_servers = lambda: (_ for _ in ()).throw(RuntimeError("balancer busy"))
    _requests(client, 3)
    assert balancer.calls.count("acquire_server") == 3 and len(handles["s0"]._obj.requests) == 3
    balancer._obj.get_all_servers = real
    _requests(client, 3, first=3)
    assert balancer.calls.count("acquire_server") == 4  # the lookup's acquisition; the 3 requests went direct


def test_each_batch_of_prompts_asks_the_balancer_afresh(monkeypatch):
    """The worker refreshes its client before verl's generate_sequences spawns the batch's samples."""
    from verl.trainer.ppo.v1.agent_loop_tq import AgentLoopWorkerTQ

    from rlvr_recipes.cpu_backend.agent_loop import ReusedLoopWorker

    client, balancer, _ = _one_server_client(["s0"])
    _requests(client, 2)
    seen = []

    async def verls(self, batch):
        seen.append((batch, self.llm_client._lookup))

    monkeypatch.setattr(AgentLoopWorkerTQ.__ray_actor_class__, "generate_sequences", verls)
    worker = ReusedLoopWorker.__new__(ReusedLoopWorker)
    worker.llm_client = client
    assert client._lookup is not None
    asyncio.run(worker.generate_sequences("batch"))
    assert seen == [("batch", None)]


def test_only_verls_plain_client_is_replaced():
    from verl.workers.rollout.llm_server import FullyAsyncLLMServerClient, LLMServerClient

    from rlvr_recipes.cpu_backend.agent_loop import one_server_client

    fully_async = FullyAsyncLLMServerClient.__new__(FullyAsyncLLMServerClient)
    assert one_server_client(fully_async) is fully_async

    class Users(LLMServerClient):
        pass

    users = Users.__new__(Users)
    assert one_server_client(users) is users


def _metrics():
    # step 0: validation only; steps 1-4: reward 0.2, 0.4, 0.6, 0.8; validation again at step 4
    m = {0: {"val-core/arithmetic/addition/acc/mean@1": 0.5}}
    for s, r, t in ((1, 0.2, 4.0), (2, 0.4, 1.0), (3, 0.6, 3.0), (4, 0.8, 2.0)):
        m[s] = {"critic/score/mean": r, "timing_s/step": t}
    m[4]["val-core/arithmetic/addition/acc/mean@1"] = 0.8
    return m


def test_transfer_queue_gets_the_cap_it_would_set_itself_without_its_warning(monkeypatch, caplog):
    """TransferQueue lowers its default cap of 8 threads to the physical cores and warns at every put and get; the CPU
    environment passes the lowered cap, so the threads are the same and the warning is gone."""
    import logging

    import psutil
    import torch
    from transfer_queue.utils import common

    from rlvr_recipes.launch.cpu_run import cpu_environment, transfer_queue_threads

    monkeypatch.setattr(psutil, "cpu_count", lambda logical=True: 2)
    assert transfer_queue_threads() == 2
    assert cpu_environment({})["TQ_NUM_THREADS"] == "2"
    assert cpu_environment({"TQ_NUM_THREADS": "4"})["TQ_NUM_THREADS"] == "4"  # a user's setting is kept

    def threads_inside(target):
        with caplog.at_level(logging.WARNING, logger=common.logger.name):
            caplog.clear()
            with common.limit_pytorch_auto_parallel_threads(target_num_threads=target):
                inside = torch.get_num_threads()
            return inside, [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]

    default_threads, default_warnings = threads_inside(8)  # TransferQueue's own default on 2 physical cores
    assert default_threads == 2 and any("should not exceed" in m for m in default_warnings)
    assert threads_inside(int(cpu_environment({})["TQ_NUM_THREADS"])) == (2, [])
    monkeypatch.setattr(psutil, "cpu_count", lambda logical=True: 32)
    assert transfer_queue_threads() == 8  # where the cores allow it, TransferQueue's default


def test_run_summary_worked_by_hand():
    line = run_summary(_metrics(), 12.3, window=5)
    # k = min(5, 4 // 2) = 2: reward (0.2+0.4)/2 = 0.30 -> (0.6+0.8)/2 = 0.70; median step (2+3)/2 = 2.5 s
    assert line == ("start-up 12 s; 2.50 s/step (median of 4); reward 0.30 (first 2 steps) -> 0.70 (last 2); "
                    "held-out greedy accuracy 0.50 (step 0) -> 0.80 (step 4), +0.30")
    assert run_summary({}, None) == "start-up ? s"


def test_val_accuracy_in_step_order():
    assert val_accuracy(_metrics()) == [(0, 0.5), (4, 0.8)]


def test_rolling_band_worked_by_hand():
    mean, low, high = rolling_band([0.0, 1.0, 1.0], window=2)
    # windows [0], [0, 1], [1, 1]: means 0, 0.5, 1; population sd 0, 0.5, 0
    assert mean == [0.0, 0.5, 1.0]
    assert low == [0.0, 0.0, 1.0]
    assert high == [0.0, 1.0, 1.0]


def test_plot_seeds_band_and_rise(tmp_path):
    dirs = []
    for seed, last in enumerate((0.7, 0.9)):
        d = tmp_path / f"seed{seed}"
        d.mkdir()
        recs = [{"step": 0, "data": {"val-core/x/acc/mean@1": 0.5}},
                {"step": 1, "data": {"critic/score/mean": 0.4}},
                {"step": 2, "data": {"critic/score/mean": 0.6, "val-core/x/acc/mean@1": last}}]
        (d / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
        dirs.append(str(d))
    png, summary = plot_seeds(dirs, str(tmp_path / "curves.png"), window=5)
    assert os.path.getsize(png) > 0
    # accuracy: mean 0.5 -> (0.7+0.9)/2 = 0.8, rises +0.2 and +0.4
    assert "held-out greedy accuracy 0.50 (step 0) -> 0.80 (step 2), rise per seed +0.20..+0.40" in summary
    # reward: trailing means per seed 0.4, 0.5: identical seeds, rise +0.10
    assert "train reward 0.40 (step 1) -> 0.50 (step 2), rise per seed +0.10..+0.10" in summary


def test_phase_medians_skip_the_warm_up_step():
    records = [
        {"step": 0, "data": {"timing_s/testing": 3.0}},
        {"step": 1, "data": {"timing_s/gen": 9.0, "timing_s/step": 20.0}},
        {"step": 2, "data": {"timing_s/gen": 1.0, "timing_s/step": 2.0}},
        {"step": 3, "data": {"timing_s/gen": 3.0, "timing_s/step": 4.0, "timing_s/testing": 5.0}},
    ]
    phases, step1, used = phase_medians(records)
    assert phases == {"gen": 2.0, "step": 3.0, "testing": 4.0}
    assert step1 == {"gen": 9.0, "step": 20.0}
    assert used == 2
    text = table({"startup_s": 1.0, "first_step_end_s": 2.0, "phases": phases, "peak_rss_gb": 1.5, "total_s": 9.0,
                  "loadavg_before": [2.0]})
    assert "timing_s/gen (median)" in text and "1.5" in text


def test_tree_sampler_sees_readiness_first_step_and_memory(tmp_path):
    import time

    from benchmarks.bench_cpu_step import READY_NEEDLE, TreeSampler

    log, metrics = tmp_path / "train.log", tmp_path / "metrics.jsonl"
    sampler = TreeSampler(str(log), str(metrics), time.monotonic(), period=0.01)
    sampler.start()
    log.write_text(f"x\n{READY_NEEDLE}, ready to fit\n")
    metrics.write_text('{"step":0,"data":{}}\n{"step":1,"data":{}}\n')  # verl's file logger: no spaces
    deadline = time.monotonic() + 10
    while (sampler.ready_s is None or sampler.first_step_end_s is None) and time.monotonic() < deadline:
        time.sleep(0.01)
    sampler.stop()
    assert not sampler.is_alive()
    assert sampler.ready_s is not None and sampler.first_step_end_s >= 0
    assert sampler.peak_rss > 0 and sampler.peak_procs >= 1
    assert 0 < sampler.peak_pss <= sampler.peak_rss  # each sample's PSS is at most its RSS
