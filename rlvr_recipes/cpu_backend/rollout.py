"""A Hugging Face ``generate`` rollout for verl's server-mode rollout API (``actor_rollout_ref.rollout.name=hf``).

verl 0.9.1 rolls out only through servers (vLLM, SGLang, TensorRT-LLM), none of which installs next to verl's
pinned stack on a CPU-only machine (see docs/cpu.md). This module provides the same three pieces for
``transformers``' ``generate``:

- :class:`~rlvr_recipes.cpu_backend.hf_server.HFServer` (in a module of its own that imports no verl, so that its
  process starts in seconds), one Ray actor per rollout replica: holds a copy of the policy, batches the concurrent
  token-in/token-out ``generate`` requests of verl's agent loop (requests that arrive within ``batch_wait_s`` of
  each other and share sampling parameters run as one left-padded ``generate`` call), and reports the processed
  log-probabilities of the sampled tokens when asked (``logprobs_mode=processed_logprobs``, as vLLM). Each request
  draws its tokens from a random stream of its own (:mod:`rlvr_recipes.cpu_backend.sampling`), so its answer does
  not depend on which other requests shared its batch: two runs of one seed sample the same answers;
- :class:`HFReplica`, the :class:`~verl.workers.rollout.replica.RolloutReplica` that launches it next to the
  trainer's workers (hybrid mode) or in a colocated resource pool;
- :class:`HFServerAdapter`, the in-worker :class:`~verl.workers.rollout.base.BaseRollout` through which verl's
  weight sync (``checkpoint_engine.backend=naive``) hands the trainer's full weights to the server after each step.

Sleep/wake-up are no-ops: host memory is not the constraint GPU memory is. Options under
``actor_rollout_ref.rollout.engine_kwargs.hf``: ``batch_wait_s`` (default 0.02), ``num_threads`` (torch threads of
the server, default: unchanged).
"""

from __future__ import annotations

import logging
import os
from typing import Any, Generator, Optional

import ray
import torch
from verl.workers.rollout.base import BaseRollout
from verl.workers.rollout.replica import RolloutReplica

from rlvr_recipes.cpu_backend.hf_server import HFServer, server_settings

logger = logging.getLogger(__name__)

SERVER_NAME_PREFIX = "hf_server"

def server_name(replica_rank: int, role: str = "", suffix: str = "") -> str:
    """Ray actor name of a replica's server; the adapter in each trainer worker finds its server by this name."""
    return f"{SERVER_NAME_PREFIX}_{role + '_' if role else ''}{replica_rank}{suffix}"


class HFReplica(RolloutReplica):
    """A rollout replica served by one :class:`HFServer` actor on the node of its first worker."""

    async def launch_servers(self) -> None:
        """Start the server actor (named :func:`server_name`) and wait until its model is loaded."""
        options: dict[str, Any] = dict(
            name=server_name(
                self.replica_rank,
                "reward" if self.is_reward_model else "teacher" if self.is_teacher_model else "",
                self.name_suffix,
            ),
            num_cpus=0,
            max_concurrency=self.max_concurrency,
        )
        if self.workers:
            node_id = await self.workers[0].__ray_call__.remote(lambda w: ray.get_runtime_context().get_node_id())
            options["scheduling_strategy"] = ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy(
                node_id=node_id, soft=False
            )
        rollout, model = server_settings(self.config, self.model_config)
        server = ray.remote(HFServer).options(**options).remote(
            config=rollout, model_config=model, replica_rank=self.replica_rank
        )
        await server.ready.remote()
        self.servers = [server]
        self._server_handle = server
        self._server_address = f"hf-replica-{self.replica_rank}{self.name_suffix}"


class HFServerAdapter(BaseRollout):
    """The rollout inside each trainer worker: forwards weight syncs to its replica's :class:`HFServer`.

    Every rank consumes the weight generator (gathering FSDP shards is a collective); the first rank of each
    replica sends the full tensors to the server.
    """

    def __init__(self, config: Any, model_config: Any, device_mesh: Any, replica_rank: int = -1, **kwargs: Any):
        super().__init__(config, model_config, device_mesh)
        rank = int(os.environ.get("RANK", "0"))
        world = (
            self.config.tensor_model_parallel_size
            * self.config.data_parallel_size
            * self.config.pipeline_model_parallel_size
        )
        self.replica_rank = rank // world if replica_rank == -1 else replica_rank
        self.rollout_rank = rank % world
        self.is_leader_rank = self.rollout_rank == 0
        self.server_handle: Optional[ray.actor.ActorHandle] = None

    def _server(self) -> Optional[ray.actor.ActorHandle]:
        if not self.is_leader_rank:
            return None
        if self.server_handle is None:
            self.server_handle = ray.get_actor(server_name(self.replica_rank))
        return self.server_handle

    async def resume(self, tags: list[str]) -> None:
        return None

    async def release(self) -> None:
        return None

    @torch.no_grad()
    async def update_weights(
        self,
        weights: Generator[tuple[str, torch.Tensor], None, None],
        global_steps: Optional[int] = None,
        wire_format: str = "named_tensors",
        peft_config: Optional[dict] = None,
        **kwargs: Any,
    ) -> None:
        if wire_format != "named_tensors":
            raise NotImplementedError(
                f"the hf rollout takes full weights only (checkpoint_engine.backend=naive); got wire_format={wire_format!r}"
            )
        if peft_config is not None:
            raise NotImplementedError(
                "the hf rollout does not take LoRA adapters: set actor_rollout_ref.model.lora.merge=True"
            )
        from verl.workers.rollout.utils import ensure_async_iterator

        state = {}
        async for name, tensor in ensure_async_iterator(weights):  # every rank: the gather is collective
            if self.is_leader_rank:
                state[name] = tensor.detach().to("cpu", copy=True)
        server = self._server()
        if server is not None:
            await server.update_weights.remote(state, global_steps)
