"""Run verl's real trainer on a CPU-only machine: platform, engine registration, a gloo fix and an HF rollout.

verl 0.9.1 assumes an accelerator. :func:`activate` makes the stock ``python -m verl.trainer.main_ppo`` run on
CPUs, in-process and from the plugin only (no verl file is changed):

1. registers the ``cpu`` platform (:mod:`rlvr_recipes.cpu_backend.platform`) and makes it verl's platform;
2. registers verl's FSDP engines for device ``cpu`` (verl registers them for ``cuda`` and ``npu`` only);
3. makes ``torch.distributed.init_process_group`` accept verl's backend string ``"cpu:gloo,cpu:gloo"``
   (:func:`rlvr_recipes.cpu_backend.patches.patch_init_process_group`), and the FSDP2 engine's CPU offload policy not pin
   memory (:func:`rlvr_recipes.cpu_backend.patches.unpin_fsdp2_offload`), and the v1 replay buffer take its poll interval from
   ``trainer.v1.sampler.sampler_kwargs.poll_interval`` (:func:`rlvr_recipes.cpu_backend.patches.honour_replay_buffer_poll_interval`;
   verl's fixed 2 s rounds every rollout up to a multiple of 2 s);
4. registers the ``hf`` rollout (``actor_rollout_ref.rollout.name=hf``, :mod:`rlvr_recipes.cpu_backend.rollout`): a batched
   Hugging Face ``generate`` server in place of vLLM;
5. in vLLM's own processes (``rollout.name=vllm`` on vLLM's CPU build), keeps the linear layers' weights after vLLM
   packs them, so that verl's weight sync can load into them
   (:func:`rlvr_recipes.cpu_backend.patches.keep_vllm_cpu_linear_weights`).

The plugin entry point (:mod:`rlvr_recipes.launch.plugin`) calls :func:`activate` in every process that imports verl when
``VERL_PLATFORM=cpu`` or ``RLVR_CPU=1`` is set; nothing changes otherwise. The config overrides that go with it
are in ``rlvr_recipes/configs/cpu.yaml``; ``docs/cpu.md`` lists every workaround and the upstream change that would remove it.
"""

from __future__ import annotations

import os

from rlvr_recipes.cpu_backend.names import PLATFORM_NAME, ROLLOUT_NAME

__all__ = ["PLATFORM_NAME", "ROLLOUT_NAME", "activate", "requested"]

_ACTIVE = False

# Nothing here imports verl at import time: verl imports its plugins (and so this package) while it initialises.


def requested() -> bool:
    """True when this process was asked to run on the CPU platform (``VERL_PLATFORM=cpu`` or ``RLVR_CPU=1``)."""
    return (
        os.environ.get("VERL_PLATFORM", "").strip().lower() == PLATFORM_NAME
        or os.environ.get("RLVR_CPU", "").strip().lower() in ("1", "true", "yes")
    )


def activate() -> None:
    """Make verl run on the CPU in this process (idempotent). See the module docstring for what it changes."""
    global _ACTIVE
    if _ACTIVE:
        return
    from rlvr_recipes.cpu_backend import patches, platform

    platform.install()
    patches.patch_init_process_group()
    patches.register_fsdp_engines_for_cpu()
    patches.unpin_fsdp2_offload()
    patches.register_rollout(ROLLOUT_NAME)
    patches.warn_once_about_tokenizer_family()
    patches.honour_replay_buffer_poll_interval()
    patches.keep_vllm_cpu_linear_weights()
    _ACTIVE = True
