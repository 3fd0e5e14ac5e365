"""verl's v1 agent-loop manager with one single-turn agent loop per worker, and one TransferQueue put per group.

verl's ``AgentLoopWorker._run_agent_loop`` builds a new agent loop for every sample with Hydra's ``instantiate``
(OmegaConf merges of the call's arguments, then the loop's ``__init__``): 29 % of the agent-loop worker's time with
samples in a profile of the CPU lab; built once, generation takes 0.11 s less a step, with the same answers
(docs/lab.md, "The generation phase"). verl's ``SingleTurnAgentLoop`` keeps nothing from one sample to the next (its
attributes are set in ``__init__`` and only read by ``run``), so :class:`ReusedLoopWorker` builds it once per worker
and runs every single-turn sample through it; any other agent loop (a tool or multi-turn loop, which may keep state)
is still built per sample by verl's method. verl's own extension point selects it:
``actor_rollout_ref.rollout.agent.agent_loop_manager_class`` (set in ``rlvr_recipes/configs/cpu.yaml``).

verl's worker also puts each answer into TransferQueue on its own as it finishes: 128 puts a step of 16 prompts x 8,
which queue in TransferQueue's client (a step's last put ended 0.24-0.66 s after its last reward in a traced run). The
worker here puts a prompt's group in one call once all its samples have finished, before the group's terminal status,
which verl's replay buffer waits for anyway: the same keys, fields and tags, in session order. Generation is 0.36 s
shorter a step on the countdown task, with the same answers (docs/lab.md, "One put a group").

verl's client of the rollout servers asks its load-balancer actor for a server before every request and tells it
when the request is done: two Ray calls a sample. The worker here holds its client as a :class:`OneServerClient`,
which, when the balancer holds a single server, asks for it once per batch of prompts and sends the batch's requests
straight to it (docs/lab.md, "One server, asked once a batch").
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from dataclasses import dataclass
from typing import Any

import hydra
import ray
import torch
import transfer_queue as tq
from verl.experimental.agent_loop.agent_loop import (
    AgentLoopOutput,
    DictConfigWrap,
    ToolListWrap,
    _agent_loop_registry,
    rollout_trace_attr,
)
from verl.trainer.ppo.v1.agent_loop_tq import AgentLoopManagerTQ, AgentLoopWorkerTQ, apply_greedy_sampling_params
from verl.utils.tensordict_utils import list_of_dict_to_tensordict
from verl.workers.rollout.llm_server import LLMServerClient

logger = logging.getLogger(__name__)

#: The agent loop that :class:`ReusedLoopWorker` builds once: verl's ``SingleTurnAgentLoop``, by the class its
#: registry entry names (a loop registered in its place under the same name is built per sample, as verl does).
REUSED_LOOP_CLASS = "verl.experimental.agent_loop.single_turn_agent_loop.SingleTurnAgentLoop"


def is_reused(agent_name: str) -> bool:
    """Whether ``agent_name``'s registry entry builds verl's ``SingleTurnAgentLoop`` (:data:`REUSED_LOOP_CLASS`) with
    no arguments of its own (an entry from an agent-loop config file may pass some: it is built per sample)."""
    entry = _agent_loop_registry.get(agent_name)
    return entry is not None and entry.get("_target_") == REUSED_LOOP_CLASS and set(entry) <= {"_target_", "name"}


class OneServerClient(LLMServerClient):
    """verl's ``LLMServerClient`` that asks the load balancer for a server once per batch of prompts when it holds one.

    verl's client makes two calls to the load-balancer actor for every request: ``acquire_server``, awaited before the
    request goes out, and ``release_server`` after it (256 Ray calls a step of 16 prompts x 8). With one server in the
    balancer, every acquisition returns that server. This client asks at the first request after :meth:`refresh`
    (the worker calls it at each batch of prompts): the balancer's servers and, if there is exactly one, its handle
    (one acquisition, released at once). Until the next refresh, requests go to that server with no call to the
    balancer; with more servers, or none, every request takes verl's path. What the balancer's counts would have
    told it, which server is least busy and which served a request before, has one answer with one server.
    """

    def __init__(self, config: Any, load_balancer_handle: Any = None, **kwargs: Any) -> None:
        super().__init__(config, load_balancer_handle, **kwargs)
        self._lookup: asyncio.Future | None = None
        self._direct: Counter[str | None] = Counter()  # requests sent to the one server without the balancer

    @classmethod
    def from_client(cls, client: LLMServerClient) -> "OneServerClient":
        """The same client (its config, balancer and every attribute set on it) as a ``OneServerClient``."""
        one = cls.__new__(cls)
        one.__dict__.update(vars(client))
        one._lookup, one._direct = None, Counter()
        return one

    def refresh(self) -> None:
        """Ask the balancer again at the next request (its servers may have changed since the last batch)."""
        self._lookup = None

    async def _one_server(self, request_id: str, **extra: Any) -> tuple[str, Any] | None:
        """``(server_id, handle)`` when the balancer holds exactly one server, else None."""
        servers = await self._load_balancer.get_all_servers.remote()
        if len(servers) != 1:
            return None
        server_id, handle = await super()._acquire_server(request_id, **extra)
        super()._release_server(server_id, request_id=request_id)
        return server_id, handle

    async def _acquire_server(self, request_id: str, **extra: Any) -> tuple[str, Any]:
        if self._lookup is None:
            self._lookup = asyncio.ensure_future(self._one_server(request_id, **extra))
        try:
            one = await asyncio.shield(self._lookup)
        except Exception:
            self._lookup = None  # a failed lookup is asked again; this request takes verl's path
            one = None
        if one is None:
            return await super()._acquire_server(request_id, **extra)
        self._direct[request_id] += 1
        return one

    def _release_server(self, server_id: str, request_id: str | None = None) -> None:
        if self._direct[request_id] > 0:  # acquired without the balancer: nothing to release there
            self._direct[request_id] -= 1
            if not self._direct[request_id]:
                del self._direct[request_id]
            return
        super()._release_server(server_id, request_id=request_id)


def one_server_client(client: Any) -> Any:
    """``client`` as a :class:`OneServerClient` when it is verl's plain ``LLMServerClient``; any other client (the
    fully-async trainers' ``FullyAsyncLLMServerClient``, which retries while weights are synchronised, or a user's
    subclass) is kept as it is."""
    return OneServerClient.from_client(client) if type(client) is LLMServerClient else client


@dataclass
class SampleEntry:
    """One finished sample's TransferQueue entry, as verl's ``AgentLoopWorkerTQ._agent_loop_postprocess`` puts it."""

    key: str
    field: dict[str, Any]
    tag: dict[str, Any]


class ReusedLoopWorker(AgentLoopWorkerTQ.__ray_actor_class__):  # type: ignore[name-defined,misc]
    """verl's ``AgentLoopWorkerTQ``, whose single-turn agent loop is built on the first sample and reused after, whose
    single-turn samples of one prompt are put into TransferQueue in one call, and whose client of the rollout servers
    is a :class:`OneServerClient` (verl's plain client replaced; any other kept)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # An __init__ of its own: with the inherited one, Ray's actor failed in verl's ``super().__init__`` ("obj
        # must be an instance or subtype of type"; the e2e runs of tests/test_e2e_cpu.py start it)
        super().__init__(*args, **kwargs)
        self._reused_loop: Any = None
        self.llm_client = one_server_client(self.llm_client)

    async def generate_sequences(self, batch: Any) -> None:
        """verl's ``AgentLoopWorkerTQ.generate_sequences``, the client asked afresh for the balancer's servers."""
        if isinstance(self.llm_client, OneServerClient):
            self.llm_client.refresh()
        await super().generate_sequences(batch)

    def _build_agent_loop(self, agent_name: str) -> Any:
        """The agent loop verl's ``_run_agent_loop`` builds, with the same arguments."""
        return hydra.utils.instantiate(
            config=_agent_loop_registry[agent_name],
            trainer_config=DictConfigWrap(config=self.config),
            server_manager=self.llm_client,
            tokenizer=self.tokenizer,
            processor=self.processor,
            hf_model_type=self.hf_model_type,
            dataset_cls=self.dataset_cls,
            data_config=DictConfigWrap(self.config.data),
            tools=ToolListWrap(self.tools),
        )

    async def _run_agent_loop(
        self, sampling_params: dict[str, Any], trajectory: dict[str, Any], *, agent_name: str, trace: bool = True,
        **kwargs: Any,
    ) -> Any:
        """verl's ``_run_agent_loop`` (verl 0.9.1, ``verl/experimental/agent_loop/agent_loop.py``) for the single-turn
        loop, which is built once; any other agent loop goes to verl's method as it is."""
        if not is_reused(agent_name):
            return await super()._run_agent_loop(sampling_params, trajectory, agent_name=agent_name, trace=trace,
                                                 **kwargs)
        with rollout_trace_attr(step=trajectory["step"], sample_index=trajectory["sample_index"],
                                rollout_n=trajectory["rollout_n"], validate=trajectory["validate"], name="agent_loop",
                                trace=trace):
            if self._reused_loop is None:
                self._reused_loop = self._build_agent_loop(agent_name)
            output: AgentLoopOutput = await self._reused_loop.run(sampling_params, **kwargs)
            return await self._sample_entry(output, trajectory["validate"], **kwargs)

    async def _sample_entry(self, output: AgentLoopOutput, validate: bool, **kwargs: Any) -> SampleEntry:
        """verl's ``AgentLoopWorkerTQ._agent_loop_postprocess`` (verl 0.9.1, ``verl/trainer/ppo/v1/agent_loop_tq.py``)
        for one single-turn output: its reward, its teacher log-probs, its fields and its tag, up to the put, which
        it returns instead of making (:meth:`_run_prompt` puts the group's entries in one call)."""
        await self._compute_score([output], kwargs=kwargs)
        await self._compute_teacher_logprobs(output, prompt_ids=output.prompt_ids, response_ids=output.response_ids,
                                             validate=validate, sample_kwargs=kwargs)
        prompts = torch.tensor(output.prompt_ids, dtype=torch.int64)
        responses = torch.tensor(output.response_ids, dtype=torch.int64)
        input_ids = torch.cat([prompts, responses], dim=0)
        attention_mask = torch.ones_like(input_ids, dtype=torch.int64)
        multi_modal_inputs = self._compute_multi_modal_inputs(output, input_ids)
        position_ids = self._compute_position_ids(
            input_ids.unsqueeze(0), attention_mask.unsqueeze(0), multi_modal_inputs
        ).squeeze(0)
        field = output.as_dict()
        field.update(kwargs)
        field.pop("multi_modal_data", None)  # verl does not store raw images or videos
        field["loss_mask"] = field["response_mask"]
        field["input_ids"] = input_ids
        field["position_ids"] = position_ids
        field["multi_modal_inputs"] = multi_modal_inputs
        prompt_len, response_len = field["prompts"].size(0), field["responses"].size(0)
        tag = {
            "status": "success",
            "prompt_len": prompt_len,
            "response_len": response_len,
            "seq_len": prompt_len + response_len,
            "global_steps": kwargs["global_steps"],
            "min_global_steps": field["extra_fields"].get("min_global_steps"),
            "max_global_steps": field["extra_fields"].get("max_global_steps"),
        }
        return SampleEntry(key=f"{kwargs['uid']}_{kwargs['session_id']}_0", field=field, tag=tag)

    async def _run_prompt(self, prompt: dict, sampling_params: dict, trajectory: dict, trace: bool = False) -> None:
        """verl's ``AgentLoopWorkerTQ._run_prompt``: the prompt's ``n`` samples, then its terminal status. The
        single-turn samples' entries are put in one call once all have finished, in session order, before that
        status; a sample of another agent loop is put by verl's method as it finishes. As in verl, a failed sample
        makes the status ``failure`` and the others' entries are put."""
        uid, partition_id = prompt["uid"], "train" if not trajectory["validate"] else "val"
        await tq.async_kv_put(key=uid, partition_id=partition_id, tag={"status": "running"})
        tasks: list[asyncio.Task] = []
        try:
            config = self.config.actor_rollout_ref.rollout
            n = prompt.pop("__rollout_n__", config.n if not trajectory["validate"] else config.val_kwargs.n)
            do_sample = prompt.pop("__do_sample__", True)
            run_sampling_params = dict(sampling_params)
            if not trajectory["validate"] and not do_sample:
                apply_greedy_sampling_params(run_sampling_params)
            tasks = [
                asyncio.create_task(self._run_agent_loop(run_sampling_params, trajectory=trajectory, trace=trace,
                                                         session_id=i, **prompt))
                for i in range(n)
            ]
            results = await asyncio.gather(*tasks, return_exceptions=True)
            entries = [r for r in results if isinstance(r, SampleEntry)]
            if entries:
                await tq.async_kv_batch_put(keys=[e.key for e in entries],
                                            fields=list_of_dict_to_tensordict([e.field for e in entries]),
                                            tags=[e.tag for e in entries], partition_id=partition_id)
            errors = [r for r in results if isinstance(r, BaseException)]
            for error in errors:
                logger.error(f"Error in _run_prompt for uid={uid}", exc_info=(type(error), error, error.__traceback__))
            await tq.async_kv_put(key=uid, partition_id=partition_id,
                                  tag={"status": "failure" if errors else "finished"})
        except Exception as e:
            logger.exception(f"Error in _run_prompt: {e}")
            if tasks:
                await asyncio.gather(*tasks, return_exceptions=True)
            await tq.async_kv_put(key=uid, partition_id=partition_id, tag={"status": "failure"})


class ReusedLoopManager(AgentLoopManagerTQ):
    """verl's v1 ``AgentLoopManagerTQ`` with :class:`ReusedLoopWorker` as its workers."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.agent_loop_workers_class = ray.remote(ReusedLoopWorker)
