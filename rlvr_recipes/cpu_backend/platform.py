"""A verl platform for CPU-only machines (``VERL_PLATFORM=cpu``).

verl 0.9.1 resolves every device question through one platform object (``verl.plugin.platform.get_platform``):
the torch device name, the device module (``torch.cuda``-like), the current device, the collective backend and the
Ray resource that places workers. It ships platforms for CUDA, ROCm and Ascend NPU only, and on a machine without a
GPU falls back to CUDA. This platform answers those questions for the CPU:

- device ``"cpu"``, collective backend ``"gloo"``;
- ``current_device()`` is ``torch.device("cpu")``: verl passes it as a device (``tensor.to(get_device_id())``,
  FSDP's ``device_id``), where an integer index would mean ``cuda:<index>``;
- a device module (:data:`CPU_DEVICE_MODULE`) that delegates to ``torch.cpu`` and adds the calls verl makes on
  ``torch.cuda`` (memory statistics, ``empty_cache``, rng state, ``mem_get_info``) as no-ops or host values;
- Ray resource ``"GPU"``: verl's resource pools count only ``GPU``/``NPU`` resources, so a CPU run declares logical
  GPUs to Ray (``+ray_kwargs.ray_init.num_gpus=N``, one per trainer rank; see ``rlvr_recipes/configs/cpu.yaml``). Ray then sets
  ``CUDA_VISIBLE_DEVICES`` in each worker, which a CPU build of torch ignores;
- no IPC, no profiler, no collective module.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from types import ModuleType
from typing import Any, Optional

import psutil
import torch
from verl.plugin.platform import PlatformBase

from rlvr_recipes.cpu_backend.names import PLATFORM_NAME


class _CpuProperties:
    """What ``torch.cuda.get_device_properties`` returns, as far as verl reads it."""

    name = "CPU"

    @property
    def total_memory(self) -> int:
        return psutil.virtual_memory().total


class CpuDeviceModule(ModuleType):
    """``torch.cpu`` plus the ``torch.cuda`` calls verl makes unconditionally (no-ops or host values).

    Attribute lookups that are not defined here fall through to ``torch.cpu`` (``Stream``, ``current_stream``,
    ``synchronize``, ``is_available``, ...).
    """

    def __init__(self) -> None:
        super().__init__("verl_cpu_device", "torch.cpu with the torch.cuda calls verl makes, for VERL_PLATFORM=cpu")

    def __getattr__(self, name: str) -> Any:
        return getattr(torch.cpu, name)

    # memory statistics: the CPU has no caching allocator to report on
    @staticmethod
    def memory_allocated(device: Any = None) -> int:
        return 0

    memory_reserved = max_memory_allocated = max_memory_reserved = memory_allocated

    @staticmethod
    def mem_get_info(device: Any = None) -> tuple[int, int]:
        vm = psutil.virtual_memory()
        return vm.available, vm.total

    @staticmethod
    def empty_cache() -> None:
        return None

    reset_peak_memory_stats = reset_accumulated_memory_stats = ipc_collect = empty_cache

    @staticmethod
    def set_per_process_memory_fraction(fraction: float, device: Any = None) -> None:
        return None

    @staticmethod
    def set_device(device: Any) -> None:
        return None

    @staticmethod
    def current_device() -> torch.device:
        return torch.device("cpu")

    @staticmethod
    def device_count() -> int:
        return 1

    @staticmethod
    def get_device_name(device: Any = None) -> str:
        return "CPU"

    @staticmethod
    def get_device_properties(device: Any = None) -> _CpuProperties:
        return _CpuProperties()

    @staticmethod
    def get_rng_state(device: Any = None) -> torch.Tensor:
        return torch.get_rng_state()

    @staticmethod
    def set_rng_state(state: torch.Tensor, device: Any = None) -> None:
        torch.set_rng_state(state)

    @staticmethod
    def manual_seed(seed: int) -> None:
        torch.manual_seed(seed)

    manual_seed_all = manual_seed


CPU_DEVICE_MODULE = CpuDeviceModule()


class PlatformCPU(PlatformBase):
    """verl platform for CPU-only hosts: device ``cpu``, gloo collectives, logical ``GPU`` Ray resources."""

    @property
    def device_name(self) -> str:
        return "cpu"

    @property
    def vendor_name(self) -> str:
        return "cpu"

    @property
    def device_module(self) -> ModuleType:
        return CPU_DEVICE_MODULE

    def is_available(self) -> bool:
        return True

    def is_platform_available(self, use_smi_check: bool = False) -> bool:
        # Never auto-detected: a CPU run is asked for explicitly with VERL_PLATFORM=cpu.
        return False

    def current_device(self) -> torch.device:  # type: ignore[override]  # verl uses it as a device
        return torch.device("cpu")

    def device_count(self) -> int:
        return 1

    def set_device(self, device_index: int) -> None:
        return None

    def synchronize(self, device_index: Optional[int] = None) -> None:
        return None

    def manual_seed(self, seed: int) -> None:
        torch.manual_seed(seed)

    def manual_seed_all(self, seed: int) -> None:
        torch.manual_seed(seed)

    def set_allocator_settings(self, settings: str) -> None:
        return None

    def empty_cache(self) -> None:
        return None

    def get_device_capability(self, device_index: int = 0) -> tuple[Optional[int], Optional[int]]:
        return None, None

    def communication_backend_name(self) -> str:
        return "gloo"

    def visible_devices_envvar(self) -> str:
        return "CUDA_VISIBLE_DEVICES"

    @contextmanager
    def nvtx_range(self, msg: str):
        yield

    def profiler_start(self) -> None:
        return None

    def profiler_stop(self) -> None:
        return None

    def ray_resource_name(self) -> str:
        return "GPU"

    def ray_noset_envvars(self) -> list[str]:
        return []

    def is_ipc_supported(self) -> bool:
        return False

    def cudart(self) -> Any:
        return None


def install() -> None:
    """Register :class:`PlatformCPU` as ``cpu`` and make it verl's platform in this process.

    With ``RLVR_CPU=1`` alone, ``VERL_PLATFORM`` is set to ``cpu`` too, so that Ray workers started from this
    process (they inherit its environment) resolve the same platform.
    """
    from verl.plugin.platform import PlatformRegistry, platform_manager

    PlatformRegistry.register(platform=PLATFORM_NAME)(PlatformCPU)
    os.environ["VERL_PLATFORM"] = PLATFORM_NAME
    current = platform_manager._current_platform
    if current is not None and not isinstance(current, PlatformCPU):
        print(f"[rlvr cpu] replacing verl platform {current.device_name!r} with cpu", file=sys.stderr)
    if not isinstance(current, PlatformCPU):
        platform_manager._current_platform = PlatformCPU()
