#!/usr/bin/env bash
# Shared helpers of the launchers: argument parsing, input checks, the training command, dry runs.
# Sourced by single_node.sh, ray_submit.sh and slurm.sh; not run on its own.

RLVR_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
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
EXTRA_ARGS=()

usage_common() {
  cat <<USAGE
  --recipe NAME         a config in configs/ (e.g. agrae_grpo); env RECIPE
  --nnodes N            nodes (env NNODES, default 1)
  --gpus-per-node N     GPUs per node (env GPUS_PER_NODE, default 8)
  --tp N                vLLM tensor-parallel size (env TP_SIZE, default 1)
  --dry-run             print exactly what would run, run nothing
  -- KEY=VALUE ...      further Hydra overrides
Needs MODEL_PATH, TRAIN_FILES and VAL_FILES in the environment.
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
  [ -f "$RLVR_ROOT/configs/$RECIPE.yaml" ] || die "unknown recipe '$RECIPE'; known: $(list_recipes)"
  is_positive_int "$NNODES" || die "--nnodes must be a positive integer, got '$NNODES'"
  is_positive_int "$GPUS_PER_NODE" || die "--gpus-per-node must be a positive integer, got '$GPUS_PER_NODE'"
  is_positive_int "$TP_SIZE" || die "--tp must be a positive integer, got '$TP_SIZE'"
  [ $((GPUS_PER_NODE % TP_SIZE)) -eq 0 ] || die "--gpus-per-node ($GPUS_PER_NODE) is not divisible by --tp ($TP_SIZE)"
  [ -n "${MODEL_PATH:-}" ] || die "MODEL_PATH is not set (a local model directory or hub name)"
  [ -n "${TRAIN_FILES:-}" ] || die "TRAIN_FILES is not set (verl parquet, see python -m launch.data)"
  [ -n "${VAL_FILES:-}" ] || die "VAL_FILES is not set (verl parquet, see python -m launch.data)"
}

list_recipes() {
  local names=()
  local f
  for f in "$RLVR_ROOT"/configs/*.yaml; do
    f="$(basename "$f" .yaml)"
    [ "$f" = rlvr_base ] || [ "$f" = cpu ] || names+=("$f")
  done
  echo "${names[*]}"
}

# The training command, one word per array element (read by the scripts that source this file).
train_command() {
  # shellcheck disable=SC2034
  TRAIN_CMD=(python3 -m verl.trainer.main_ppo
    --config-path "$RLVR_ROOT/configs" --config-name "$RECIPE"
    "trainer.nnodes=$NNODES" "trainer.n_gpus_per_node=$GPUS_PER_NODE"
    "actor_rollout_ref.rollout.tensor_model_parallel_size=$TP_SIZE"
    "${EXTRA_ARGS[@]}")
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
