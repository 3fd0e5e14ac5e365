#!/usr/bin/env bash
# The embedded default: verl's real trainer (python -m verl.trainer.main_ppo) on this machine's CPU, with a tiny
# model and an addition task built locally (nothing is downloaded), for any method of this package.
#   bash rlvr_recipes/launch/quickstart.sh [METHOD] [--rollout hf|vllm] [--steps N] [--seeds N] [--ranks R] [-- KEY=VALUE ...]
# METHOD: grpo (default), dapo, drgrpo, gspo, gspo_n, any estimator (agrae, avspo, grpo_n, ...), cw_grpo, aapo.
# First run: creates .venv (torch 2.13.0 CPU, verl 0.9.1, this package; a few minutes) and builds the tiny model
# with a short supervised warm start (under a minute). Then 20 steps: about 90-100 s of start-up and 3.3 s per step on
# 2 cores, 3 min in all; the held-out greedy accuracy ends at 0.64-0.86, a rise of +0.01..+0.30 that depends mostly on
# where this CPU's build of the warm start begins (0.51-0.64 on the builds measured; docs/cpu.md).
# --rollout vllm: verl's own vLLM rollout (vLLM's CPU build) instead of this package's hf server, from a second venv,
# .venv-vllm (make setup-vllm; see docs/cpu.md "vLLM rollout": two steps ran, bf16 rollout probabilities within ~0.06).
# Writes runs/quickstart/METHOD/{train.log,metrics.jsonl,curves.png} and ends with a one-line summary (start-up,
# s/step, reward and held-out accuracy first vs last); --seeds N: METHOD/seed<k>/ and a plot across seeds. docs/cpu.md.
# From an installed package (no clone around it) it runs with the python on PATH and writes under ./runs
# (or $RLVR_RUNS_DIR); `rlvr-recipes cpu train METHOD ...` is the same without this script.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
in_clone=0
if [ -f "$root/Makefile" ] && [ -f "$root/setup.py" ]; then
  in_clone=1
  cd "$root"
fi

method="grpo"
if [ $# -gt 0 ] && [[ "$1" != -* ]]; then
  method="$1"
  shift
fi

rollout="hf"
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --rollout) rollout="${2:?--rollout needs hf or vllm}"; shift 2 ;;
    --rollout=*) rollout="${1#--rollout=}"; shift ;;
    --) break ;;
    *) args+=("$1"); shift ;;
  esac
done
overrides=()
if [ $# -gt 0 ]; then shift; overrides=("$@"); fi

case "${rollout}" in
  hf)
    if [ "$in_clone" = 1 ]; then
      echo "== setting up .venv (first run: a few minutes)"
      make --no-print-directory setup
      python=.venv/bin/python
    else
      python="$(command -v python3 || command -v python)"
    fi
    ;;
  vllm)
    [ "$in_clone" = 1 ] || { echo "--rollout vllm needs a clone of the repository (make setup-vllm)" >&2; exit 2; }
    echo "== setting up .venv and .venv-vllm (first run: a few minutes)"
    make --no-print-directory setup-vllm
    python=.venv-vllm/bin/python
    # verl's vLLM server on vLLM's CPU build: no sleep mode (CUDA memory pool), bf16 (vLLM's CPU attention),
    # gpu_memory_utilization read by vLLM's CPU platform as a fraction of RAM for the KV cache, no CUDA graphs
    overrides=(
      actor_rollout_ref.rollout.name=vllm
      actor_rollout_ref.rollout.dtype=bfloat16
      +actor_rollout_ref.rollout.enable_sleep_mode=false
      actor_rollout_ref.rollout.free_cache_engine=false
      actor_rollout_ref.rollout.gpu_memory_utilization=0.1
      actor_rollout_ref.rollout.enforce_eager=true
      actor_rollout_ref.rollout.max_model_len=64
      actor_rollout_ref.rollout.max_num_batched_tokens=4096
      "${overrides[@]}"
    )
    ;;
  *) echo "--rollout: hf or vllm, not '${rollout}'" >&2; exit 2 ;;
esac

echo "== training '${method}' with verl's trainer on the CPU (${rollout} rollout)"
# The runner stops the trainer itself after --timeout seconds (default 1800); this is the outer guard.
exec timeout --signal=INT --kill-after=60 3600 "${python}" -m rlvr_recipes.launch.cpu_run train "${method}" "${args[@]}" \
  -- "${overrides[@]}"
