#!/usr/bin/env bash
# Train one recipe on this node.
#   MODEL_PATH=... TRAIN_FILES=... VAL_FILES=... bash rlvr_recipes/launch/single_node.sh --recipe agrae_grpo --gpus-per-node 8
set -euo pipefail
# shellcheck source=rlvr_recipes/launch/common.sh
source "$(dirname "$0")/common.sh"
usage() {
  echo "usage: $0 [options] [-- KEY=VALUE ...]"
  usage_common
}
parse_common "$@"
check_inputs
[ "$NNODES" = 1 ] || die "single_node.sh runs on one node; use slurm.sh or ray_submit.sh for --nnodes $NNODES"
run_preflight
train_command
run "${TRAIN_CMD[@]}"
