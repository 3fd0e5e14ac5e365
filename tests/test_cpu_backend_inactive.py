"""On a GPU machine (neither ``VERL_PLATFORM=cpu`` nor ``RLVR_CPU`` set), the plugin loads and registers every
method, and nothing of the CPU backend is imported or active: no platform, patch, engine or rollout of it reaches verl."""

from __future__ import annotations

import json
import os
import subprocess
import sys

PROBE = r"""
import json, sys
import torch.distributed as dist
init_before = dist.init_process_group
import verl
from verl.trainer.ppo.core_algos import get_adv_estimator_fn
get_adv_estimator_fn("agrae")  # the plugin loaded
from rlvr_recipes import cpu_backend
from verl.workers.rollout.base import _ROLLOUT_REGISTRY
print(json.dumps({
    "modules": sorted(m for m in sys.modules if m.startswith("rlvr_recipes.cpu_backend")),
    "active": cpu_backend._ACTIVE,
    "requested": cpu_backend.requested(),
    "init_process_group_patched": dist.init_process_group is not init_before,
    "hf_rollout": ("hf", "async") in _ROLLOUT_REGISTRY,
}))
"""


def test_nothing_of_the_cpu_backend_is_active_without_the_switch():
    env = {k: v for k, v in os.environ.items() if k not in ("VERL_PLATFORM", "RLVR_CPU", "VERL_USE_EXTERNAL_MODULES")}
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    # the package's __init__ and its constant names are imported by the plugin to ask `requested()`; nothing else
    assert set(seen["modules"]) <= {"rlvr_recipes.cpu_backend", "rlvr_recipes.cpu_backend.names"}, seen["modules"]
    assert seen["active"] is False and seen["requested"] is False
    assert seen["init_process_group_patched"] is False and seen["hf_rollout"] is False
