#!/usr/bin/env bash
# Submit one recipe to an existing Ray cluster. The job's runtime env ships this repository as its working_dir
# (on every worker's Python path) and loads the plugin through VERL_USE_EXTERNAL_MODULES, so no install is needed
# on the cluster beyond verl itself.
#   RAY_ADDRESS=http://head:8265 MODEL_PATH=... TRAIN_FILES=... VAL_FILES=... \
#     bash launch/ray_submit.sh --recipe avspo --nnodes 2 --gpus-per-node 8
set -euo pipefail
# shellcheck source=launch/common.sh
source "$(dirname "$0")/common.sh"
usage() {
  echo "usage: $0 [options] [-- KEY=VALUE ...]   (env RAY_ADDRESS: the cluster's dashboard address)"
  usage_common
}
parse_common "$@"
check_inputs
[ -n "${RAY_ADDRESS:-}" ] || die "RAY_ADDRESS is not set (the Ray dashboard address, e.g. http://head:8265)"
train_command
runtime_env="{\"working_dir\": \"$RLVR_ROOT\", \"env_vars\": {\"VERL_USE_EXTERNAL_MODULES\": \"advantage.plugin\", \"MODEL_PATH\": \"$MODEL_PATH\", \"TRAIN_FILES\": \"$TRAIN_FILES\", \"VAL_FILES\": \"$VAL_FILES\"}}"
run ray job submit --address "$RAY_ADDRESS" --runtime-env-json "$runtime_env" -- "${TRAIN_CMD[@]}"
