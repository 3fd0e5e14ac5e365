#!/usr/bin/env bash
#SBATCH --job-name=rlvr
#SBATCH --exclusive
#SBATCH --ntasks-per-node=1
# Multi-node training under Slurm: starts a Ray head on the first node and workers on the others, then runs the recipe.
#   MODEL_PATH=... TRAIN_FILES=... VAL_FILES=... sbatch --nodes 2 launch/slurm.sh --recipe agrae_dapo --gpus-per-node 8
# Outside an allocation, --dry-run prints the commands for NNODES nodes.
set -euo pipefail
# shellcheck source=launch/common.sh
source "${RLVR_ROOT:-$(dirname "$0")/..}/launch/common.sh"
usage() {
  echo "usage: sbatch --nodes N $0 [options] [-- KEY=VALUE ...]"
  usage_common
}
NNODES="${SLURM_JOB_NUM_NODES:-$NNODES}"
parse_common "$@"
check_inputs
RAY_PORT="${RAY_PORT:-6379}"
if [ -n "${SLURM_JOB_NODELIST:-}" ]; then
  mapfile -t nodes < <(scontrol show hostnames "$SLURM_JOB_NODELIST")
else
  [ "$DRY_RUN" = 1 ] || die "not inside a Slurm allocation: submit with sbatch, or use --dry-run"
  nodes=()
  for i in $(seq 0 $((NNODES - 1))); do nodes+=("node$i"); done
fi
[ "${#nodes[@]}" -eq "$NNODES" ] || die "allocation has ${#nodes[@]} nodes but --nnodes is $NNODES"
head_node="${nodes[0]}"
run_bg srun --nodes=1 --ntasks=1 -w "$head_node" ray start --head --port="$RAY_PORT" --num-gpus="$GPUS_PER_NODE" --block
[ "$DRY_RUN" = 1 ] || sleep 10
for node in "${nodes[@]:1}"; do
  run_bg srun --nodes=1 --ntasks=1 -w "$node" ray start --address="$head_node:$RAY_PORT" --num-gpus="$GPUS_PER_NODE" --block
done
[ "$DRY_RUN" = 1 ] || sleep 10
train_command
export RAY_ADDRESS="$head_node:$RAY_PORT"
run "${TRAIN_CMD[@]}"
