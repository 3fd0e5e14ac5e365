"""verl's v1 agent-loop manager with one single-turn agent loop per worker, built once instead of once a sample.

verl's ``AgentLoopWorker._run_agent_loop`` builds a new agent loop for every sample with Hydra's ``instantiate``
(OmegaConf merges of the call's arguments, then the loop's ``__init__``): 29 % of the agent-loop worker's time with
samples in a profile of the CPU lab; built once, generation takes 0.11 s less a step, with the same answers
(docs/lab.md, "The generation phase"). verl's ``SingleTurnAgentLoop`` keeps nothing from one sample to the next (its
attributes are set in ``__init__`` and only read by ``run``), so :class:`ReusedLoopWorker` builds it once per worker
and runs every single-turn sample through it; any other agent loop (a tool or multi-turn loop, which may keep state)
is still built per sample by verl's method. verl's own extension point selects it:
``actor_rollout_ref.rollout.agent.agent_loop_manager_class`` (set in ``rlvr_recipes/configs/cpu.yaml``).
"""

from __future__ import annotations

from typing import Any

import hydra
import ray
from verl.experimental.agent_loop.agent_loop import (
    AgentLoopOutput,
    DictConfigWrap,
    ToolListWrap,
    _agent_loop_registry,
    rollout_trace_attr,
)
from verl.trainer.ppo.v1.agent_loop_tq import AgentLoopManagerTQ, AgentLoopWorkerTQ

#: The agent loop that :class:`ReusedLoopWorker` builds once: verl's ``SingleTurnAgentLoop``, by the class its
#: registry entry names (a loop registered in its place under the same name is built per sample, as verl does).
REUSED_LOOP_CLASS = "verl.experimental.agent_loop.single_turn_agent_loop.SingleTurnAgentLoop"


def is_reused(agent_name: str) -> bool:
    """Whether ``agent_name``'s registry entry builds verl's ``SingleTurnAgentLoop`` (:data:`REUSED_LOOP_CLASS`) with
    no arguments of its own (an entry from an agent-loop config file may pass some: it is built per sample)."""
    entry = _agent_loop_registry.get(agent_name)
    return entry is not None and entry.get("_target_") == REUSED_LOOP_CLASS and set(entry) <= {"_target_", "name"}


class ReusedLoopWorker(AgentLoopWorkerTQ.__ray_actor_class__):  # type: ignore[name-defined,misc]
    """verl's ``AgentLoopWorkerTQ``, whose single-turn agent loop is built on the first sample and reused after."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # An __init__ of its own: with the inherited one, Ray's actor failed in verl's ``super().__init__`` ("obj
        # must be an instance or subtype of type"; the e2e runs of tests/test_e2e_cpu.py start it)
        super().__init__(*args, **kwargs)
        self._reused_loop: Any = None

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
            return await self._agent_loop_postprocess(output, trajectory["validate"], **kwargs)


class ReusedLoopManager(AgentLoopManagerTQ):
    """verl's v1 ``AgentLoopManagerTQ`` with :class:`ReusedLoopWorker` as its workers."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.agent_loop_workers_class = ray.remote(ReusedLoopWorker)
