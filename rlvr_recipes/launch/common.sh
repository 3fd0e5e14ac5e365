#!/usr/bin/env bash
# Shared helpers of the launchers: argument parsing, input checks, the training command, dry runs.
# Sourced by single_node.sh, ray_submit.sh and slurm.sh; not run on its own.

RLVR_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"  # the directory that holds rlvr_recipes/
export RLVR_ROOT

die() {
  echo "error: $*" >&2
  exit 2
}

# Defaults, overridable by environment variables or the flags parsed below.
RECIPE="${RECIPE:-}"
NNODES="${NNODES:-1}"
GPUS_PER_NODE="${GPUS_PER_NODE:-8}"
TP_SIZE="${TP_SIZE:-1}"
DRY_RUN="${DRY_RUN:-0}"
PREFLIGHT="${PREFLIGHT:-1}"
EXTRA_ARGS=()
# The recipes name their reward by RLVR_REWARD_FILE (rlvr_recipes/configs/base/rlvr.yaml): the installed module, found
# wherever the job runs, not a file path relative to the directory it was started from.
export RLVR_REWARD_FILE="${RLVR_REWARD_FILE:-pkg://rlvr_recipes.reward.math_reward}"
# Where the training command finds the recipe configs: this package's directory (ray_submit.sh: the package as
# installed on the cluster, pkg://rlvr_recipes.configs).
CONFIG_PATH="$RLVR_ROOT/rlvr_recipes/configs"

usage_common() {
  cat <<USAGE
  --recipe NAME         a config in rlvr_recipes/configs/ (e.g. agrae_grpo); env RECIPE
  --nnodes N            nodes (env NNODES, default 1)
  --gpus-per-node N     GPUs per node (env GPUS_PER_NODE, default 8)
  --tp N                vLLM tensor-parallel size (env TP_SIZE, default 1)
  --dry-run             print exactly what would run, run nothing
  -- KEY=VALUE ...      further Hydra overrides
Needs MODEL_PATH, TRAIN_FILES and VAL_FILES in the environment. Before anything runs, the recipe is checked for the
shape (python -m rlvr_recipes.launch.preflight: verl's config validation and batch arithmetic; PREFLIGHT=0 skips it).
USAGE
}

parse_common() {
  while [ $# -gt 0 ]; do
    case "$1" in
      --recipe) RECIPE="${2:-}"; shift 2 ;;
      --nnodes) NNODES="${2:-}"; shift 2 ;;
      --gpus-per-node) GPUS_PER_NODE="${2:-}"; shift 2 ;;
      --tp) TP_SIZE="${2:-}"; shift 2 ;;
      --dry-run) DRY_RUN=1; shift ;;
      -h|--help) usage; exit 0 ;;
      --) shift; EXTRA_ARGS+=("$@"); break ;;
      *=*) EXTRA_ARGS+=("$1"); shift ;;
      *) die "unknown argument '$1' (see --help)" ;;
    esac
  done
}

is_positive_int() {
  [[ "$1" =~ ^[1-9][0-9]*$ ]]
}

check_inputs() {
  [ -n "$RECIPE" ] || die "no recipe given: --recipe NAME (one of: $(list_recipes))"
  [ -f "$RLVR_ROOT/rlvr_recipes/configs/$RECIPE.yaml" ] || die "unknown recipe '$RECIPE'; known: $(list_recipes)"
  is_positive_int "$NNODES" || die "--nnodes must be a positive integer, got '$NNODES'"
  is_positive_int "$GPUS_PER_NODE" || die "--gpus-per-node must be a positive integer, got '$GPUS_PER_NODE'"
  is_positive_int "$TP_SIZE" || die "--tp must be a positive integer, got '$TP_SIZE'"
  [ $((GPUS_PER_NODE % TP_SIZE)) -eq 0 ] || die "--gpus-per-node ($GPUS_PER_NODE) is not divisible by --tp ($TP_SIZE)"
  [ -n "${MODEL_PATH:-}" ] || die "MODEL_PATH is not set (a local model directory or hub name)"
  [ -n "${TRAIN_FILES:-}" ] || die "TRAIN_FILES is not set (verl parquet, see python -m rlvr_recipes.launch.data)"
  [ -n "${VAL_FILES:-}" ] || die "VAL_FILES is not set (verl parquet, see python -m rlvr_recipes.launch.data)"
}

list_recipes() {
  local names=()
  local f
  for f in "$RLVR_ROOT"/rlvr_recipes/configs/*.yaml; do
    f="$(basename "$f" .yaml)"
    [ "$f" = cpu ] || names+=("$f")
  done
  echo "${names[*]}"
}

# The training command, one word per array element (read by the scripts that source this file).
train_command() {
  # shellcheck disable=SC2034
  TRAIN_CMD=(python3 -m verl.trainer.main_ppo
    --config-path "$CONFIG_PATH" --config-name "$RECIPE"
    "trainer.nnodes=$NNODES" "trainer.n_gpus_per_node=$GPUS_PER_NODE"
    "actor_rollout_ref.rollout.tensor_model_parallel_size=$TP_SIZE"
    "${EXTRA_ARGS[@]}")
}

# The recipe on this shape, checked before anything is started or submitted (rlvr_recipes/launch/preflight.py): verl's
# validate_config and the batch arithmetic of its workers; on a failure it names the key to change and a value that
# works, and the launcher stops. Runs under --dry-run too; its report goes to stderr.
# PYTHON: the interpreter that runs it (default python3), which must import verl.
run_preflight() {
  [ "$PREFLIGHT" != 0 ] || return 0
  local report py="${PYTHON:-python3}"
  PYTHONPATH="$RLVR_ROOT${PYTHONPATH:+:$PYTHONPATH}" "$py" -c 'import importlib.util as u, sys
sys.exit(not (u.find_spec("verl") and u.find_spec("rlvr_recipes")))' 2>/dev/null || die "the \
pre-flight needs verl here: $py cannot import verl and rlvr_recipes; activate the environment they are installed in, \
set PYTHON to its python, or skip the check with PREFLIGHT=0"
  if ! report="$(PYTHONPATH="$RLVR_ROOT${PYTHONPATH:+:$PYTHONPATH}" "$py" -m rlvr_recipes.launch.preflight \
      --recipe "$RECIPE" --nnodes "$NNODES" --gpus-per-node "$GPUS_PER_NODE" -- \
      "actor_rollout_ref.rollout.tensor_model_parallel_size=$TP_SIZE" ${EXTRA_ARGS[@]+"${EXTRA_ARGS[@]}"} 2>&1)"; then
    echo "$report" >&2
    die "pre-flight of '$RECIPE' on $NNODES x $GPUS_PER_NODE GPUs failed (above); nothing was started (PREFLIGHT=0 skips the check)"
  fi
  echo "$report" | tail -n 1 >&2
}

# Run "$@", or print it shell-quoted under --dry-run.
run() {
  if [ "$DRY_RUN" = 1 ]; then
    printf '%q ' "$@"
    printf '\n'
  else
    "$@"
  fi
}

# Start "$@" in the background, or print it (with a trailing &) under --dry-run.
run_bg() {
  if [ "$DRY_RUN" = 1 ]; then
    printf '%q ' "$@"
    printf '&\n'
  else
    "$@" &
  fi
}

# Modules of this package a job loads in every process (the CPU backend first under VERL_PLATFORM=cpu).
PLUGIN_MODULES="rlvr_recipes.launch.plugin"
CPU_PLUGIN_MODULES="rlvr_recipes.cpu_backend.plugin,rlvr_recipes.launch.plugin"

# Overrides every cluster launch adds: on a running cluster `ray.init` must not be given resources, which the CPU
# config sets for its own local cluster (rlvr_recipes/configs/cpu.yaml, ray_kwargs.ray_init).
cluster_overrides() {
  if [ "${VERL_PLATFORM:-}" = cpu ]; then
    TRAIN_CMD+=("ray_kwargs.ray_init.num_cpus=null" "ray_kwargs.ray_init.num_gpus=null")
  fi
}

# The job's runtime env as JSON: this package shipped as a Python module (py_modules: importable by the job's driver
# and every worker, whether or not the cluster has it installed; no path of the submitting machine is used), the
# named environment variables (those set), VERL_PLATFORM, RLVR_REWARD_FILE and the plugin modules; WORKING_DIR, when
# set, also as the job's working_dir.
runtime_env_json() {
  local modules="$PLUGIN_MODULES"
  [ "${VERL_PLATFORM:-}" = cpu ] && modules="$CPU_PLUGIN_MODULES"
  python3 - "$RLVR_ROOT/rlvr_recipes" "${WORKING_DIR:-}" "$modules" VERL_PLATFORM RLVR_REWARD_FILE "$@" <<'PY'
import json, os, sys
package, working_dir, modules, *names = sys.argv[1:]
env = {n: os.environ[n] for n in names if os.environ.get(n)}
env["VERL_USE_EXTERNAL_MODULES"] = modules
# verl passes its own runtime_env (env_vars) to ray.init; combine it with the job's instead of failing on a shared key
env["RAY_OVERRIDE_JOB_RUNTIME_ENV"] = "1"
runtime = {"py_modules": [package], "excludes": ["**/__pycache__", "*.pyc"], "env_vars": env}
if working_dir:
    runtime["working_dir"] = working_dir
    runtime["excludes"] += [".venv", "runs", ".git", "outputs"]
print(json.dumps(runtime))
PY
}

# Wait for Ray job ID to end; print Ray's status lines, return 0 if it succeeded and 1 if it failed or was stopped.
job_exit_status() {
  local out status
  while true; do
    out="$(ray job status --address "$RAY_ADDRESS" "$1" 2>&1)" || true
    status="$(grep -Eo "Job '[^']*' (succeeded|failed|stopped)" <<<"$out" | awk '{print $NF}' | head -n 1)" || true
    [ -z "$status" ] || break
    sleep 5
  done
  grep -E "Job '|Status message" <<<"$out" | cut -c1-2000 >&2
  [ "$status" = succeeded ]
}
