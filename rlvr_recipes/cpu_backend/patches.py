"""The registrations and the one wrapper that :func:`rlvr_recipes.cpu_backend.activate` applies to verl 0.9.1 (see docs/cpu.md)."""

from __future__ import annotations

import functools
import logging
from typing import Any

import torch.distributed


def dedupe_backend(backend: Any) -> Any:
    """``"cpu:gloo,cpu:gloo"`` -> ``"cpu:gloo"``: drop repeated ``device:backend`` pairs of a backend string.

    verl builds ``f"cpu:gloo,{device}:{backend}"`` (``verl/utils/distributed.py``), which on the CPU platform names
    the CPU twice; torch rejects that ("Duplicate device type cpu"). Other values pass through unchanged.
    """
    if not isinstance(backend, str) or "," not in backend:
        return backend
    seen: dict[str, str] = {}
    for part in (p.strip() for p in backend.split(",")):
        device, _, name = part.partition(":")
        if name and device in seen and seen[device] != name:
            raise ValueError(f"backend string {backend!r} names two backends for device {device!r}")
        seen.setdefault(device, name)
    return ",".join(f"{d}:{b}" if b else d for d, b in seen.items())


def patch_init_process_group() -> None:
    """Wrap ``torch.distributed.init_process_group`` so that it accepts verl's CPU backend string (idempotent).

    This is the only wrapper of the CPU support; upstream, ``initialize_global_process_group{,_ray}`` building
    ``"gloo"`` when ``get_device_name() == "cpu"`` would remove it.
    """
    original = torch.distributed.init_process_group
    if getattr(original, "_rlvr_cpu_wrapped", False):
        return

    @functools.wraps(original)
    def init_process_group(*args: Any, **kwargs: Any) -> Any:
        if "backend" in kwargs:
            kwargs["backend"] = dedupe_backend(kwargs["backend"])
        elif args:
            args = (dedupe_backend(args[0]), *args[1:])
        return original(*args, **kwargs)

    init_process_group._rlvr_cpu_wrapped = True  # type: ignore[attr-defined]
    torch.distributed.init_process_group = init_process_group


def register_fsdp_engines_for_cpu() -> None:
    """Register verl's FSDP/FSDP2 actor and critic engines for device ``cpu`` (verl registers cuda and npu only)."""
    from verl.workers.engine import EngineRegistry
    from verl.workers.engine.fsdp.transformer_impl import FSDPEngineWithLMHead, FSDPEngineWithValueHead

    for model_type, engine in (("language_model", FSDPEngineWithLMHead), ("value_model", FSDPEngineWithValueHead)):
        backends = [b for b in ("fsdp", "fsdp2") if "cpu" not in EngineRegistry._engines.get(model_type, {}).get(b, {})]
        if backends:
            EngineRegistry.register(model_type=model_type, backend=backends, device="cpu")(engine)


def unpin_fsdp2_offload() -> None:
    """Make verl's FSDP2 engine build ``CPUOffloadPolicy(pin_memory=False)`` (idempotent).

    verl gives the forward-only reference model ``CPUOffloadPolicy(pin_memory=True)``; pinning host memory needs an
    accelerator ("Cannot access accelerator device when none is available"). On the CPU the offload is a no-op
    copy anyway; only the pinning has to go. Upstream: ``pin_memory=get_device_name() != "cpu"`` at that call.
    """
    from torch.distributed.fsdp import CPUOffloadPolicy

    import verl.workers.engine.fsdp.transformer_impl as impl

    if getattr(impl.CPUOffloadPolicy, "_rlvr_unpinned", False):
        return

    class UnpinnedCPUOffloadPolicy(CPUOffloadPolicy):
        """``CPUOffloadPolicy`` that never pins memory (there is no accelerator to pin it for)."""

        _rlvr_unpinned = True

        def __init__(self, pin_memory: bool = False) -> None:
            super().__init__(pin_memory=False)

    impl.CPUOffloadPolicy = UnpinnedCPUOffloadPolicy


def register_rollout(name: str) -> None:
    """Make ``actor_rollout_ref.rollout.name=<name>`` select the Hugging Face rollout of :mod:`rlvr_recipes.cpu_backend.rollout`.

    Two registries: the in-worker adapter (``_ROLLOUT_REGISTRY[(name, "async")]``) and the server replica
    (``RolloutReplicaRegistry``).
    """
    from verl.workers.rollout.base import _ROLLOUT_REGISTRY
    from verl.workers.rollout.replica import RolloutReplicaRegistry

    _ROLLOUT_REGISTRY[(name, "async")] = "rlvr_recipes.cpu_backend.rollout.HFServerAdapter"

    def _load() -> type:
        from rlvr_recipes.cpu_backend.rollout import HFReplica

        return HFReplica

    RolloutReplicaRegistry.register(name, _load)


class _OncePerMessage(logging.Filter):
    """Let each distinct message through once per process."""

    def __init__(self) -> None:
        super().__init__()
        self._seen: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message in self._seen:
            return False
        self._seen.add(message)
        return True


def warn_once_about_tokenizer_family() -> None:
    """Show verl's "no model-specific Continuous Token builder for model_type=..." warning once per process.

    verl logs it for every rollout sample of a model family it has no builder for (the tiny Llama): thousands of
    identical lines per run otherwise.
    """
    log = logging.getLogger("verl.utils.tokenizer.continuous_token_wiring")
    if not any(isinstance(f, _OncePerMessage) for f in log.filters):
        log.addFilter(_OncePerMessage())


def honour_replay_buffer_poll_interval() -> None:
    """Let ``trainer.v1.sampler.sampler_kwargs.poll_interval`` set the v1 replay buffer's poll interval (idempotent).

    verl 0.9.1's ``ReplayBuffer.sample`` (``verl/trainer/ppo/v1/replay_buffer.py``) checks TransferQueue for finished
    rollouts, and sleeps ``poll_interval`` seconds between checks; ``trainer_base._build_replay_buffer`` never passes
    that argument, so it is always the default, 2 s. With a rollout of a fraction of a second every ``gen`` phase
    (and every validation) is rounded up to the next multiple of 2 s: ``timing_s/gen`` was 4.02, 6.03, 8.04 s on the
    tiny task. The built-in buffer ignores ``sampler_kwargs`` otherwise, so the key is free to carry the value.
    Upstream: ``poll_interval=sampler_config.get("poll_interval", 2.0)`` in ``_build_replay_buffer``.
    """
    from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer

    original = ReplayBuffer.__init__
    if getattr(original, "_rlvr_poll_interval", False):
        return

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        interval = (self.sampler_kwargs or {}).get("poll_interval", None)
        if interval is not None:
            if float(interval) <= 0:
                raise ValueError(f"trainer.v1.sampler.sampler_kwargs.poll_interval={interval!r} must be > 0")
            self.poll_interval = float(interval)

    __init__._rlvr_poll_interval = True  # type: ignore[attr-defined]
    ReplayBuffer.__init__ = __init__


def keep_vllm_cpu_linear_weights() -> None:
    """In a vLLM process on vLLM's CPU platform, keep each linear layer's weight after vLLM packs it (idempotent).

    vLLM 0.32.0's ``UnquantizedLinearMethod.process_weights_after_loading`` (``vllm/model_executor/layers/linear.py``)
    calls ``dispatch_cpu_unquantized_gemm(layer, remove_weight=True)`` on the CPU: the layer computes from a packed
    copy (oneDNN, or the sgl kernel with AMX) and its ``weight`` is replaced by an empty ``Parameter`` without
    ``weight_loader``. verl's weight sync (``vLLMColocateWorkerExtension.update_weights_from_ipc``) then loads the
    trainer's weights into that parameter and fails in ``QKVParallelLinear.load_weights`` with
    ``AttributeError: 'Parameter' object has no attribute 'weight_loader'``. With ``remove_weight=False`` (what vLLM
    already does for the embedding and the tied LM head) the loaded weight lands in the original parameter, and the
    ``process_weights_after_loading`` that verl runs after every sync packs it again. Cost: each linear weight is
    held twice (packed and plain). Applied only where vLLM is already imported (its server and worker processes,
    which import verl through ``worker_extension_cls`` before loading the model); elsewhere nothing is imported.
    Upstream: keep the weight (or its loader) when the platform is CPU and the model may be reloaded.
    """
    import sys

    if "vllm" not in sys.modules:
        return
    try:
        from vllm.model_executor.layers.linear import UnquantizedLinearMethod
    except ImportError:  # a vLLM without this layout: nothing to patch
        return
    original = UnquantizedLinearMethod.process_weights_after_loading
    if getattr(original, "_rlvr_keep_weight", False):
        return

    @functools.wraps(original)
    def process_weights_after_loading(self: Any, layer: Any) -> None:
        from vllm.platforms import current_platform

        if not current_platform.is_cpu() or getattr(layer, "_cpu_skip_gemm_dispatch", False):
            return original(self, layer)
        from vllm.model_executor.layers.utils import dispatch_cpu_unquantized_gemm

        dispatch_cpu_unquantized_gemm(layer, remove_weight=False)

    process_weights_after_loading._rlvr_keep_weight = True  # type: ignore[attr-defined]
    UnquantizedLinearMethod.process_weights_after_loading = process_weights_after_loading
