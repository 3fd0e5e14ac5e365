#!/usr/bin/env bash
# Submit one recipe to an existing Ray cluster with `ray job submit`. The job's runtime env ships this package as a
# Python module (py_modules: importable by the job's driver and every worker, from a clone or an installed package),
# the recipe configs are found inside it (--config-path pkg://rlvr_recipes.configs, not a path of this machine), the
# reward is the module pkg://rlvr_recipes.reward.math_reward, and the plugin loads through VERL_USE_EXTERNAL_MODULES;
# the cluster needs verl and this package's dependencies (math-verify: a run without it stops at start). Checks the
# recipe for the shape first (rlvr_recipes/launch/preflight.py). Prints the submission id and returns; with --follow it
# streams the job's log and returns the job's exit status (0 SUCCEEDED, 1 FAILED or STOPPED, with Ray's message).
# WORKING_DIR: a directory to ship as the job's working_dir as well (its current directory on the cluster).
#   RAY_ADDRESS=http://head:8265 MODEL_PATH=... TRAIN_FILES=... VAL_FILES=... \
#     bash rlvr_recipes/launch/ray_submit.sh --recipe avspo --nnodes 2 --gpus-per-node 8 [--follow]
# CPU recipe (VERL_PLATFORM=cpu in the environment): see docs/cluster.md.
# FORWARD_ENV: space-separated names of further environment variables to pass to the job (e.g. "HF_TOKEN WANDB_API_KEY").
set -euo pipefail
# shellcheck source=rlvr_recipes/launch/common.sh
source "$(dirname "$0")/common.sh"
FOLLOW=0
usage() {
  echo "usage: $0 [--follow] [options] [-- KEY=VALUE ...]   (env RAY_ADDRESS: the cluster's dashboard address)"
  echo "  --follow              stream the job's log, return its exit status"
  usage_common
}
args=()
for a in "$@"; do
  if [ "$a" = --follow ]; then FOLLOW=1; else args+=("$a"); fi
done
parse_common "${args[@]+"${args[@]}"}"
check_inputs
[ -n "${RAY_ADDRESS:-}" ] || die "RAY_ADDRESS is not set (the Ray dashboard address, e.g. http://head:8265)"
run_preflight
CONFIG_PATH="pkg://rlvr_recipes.configs"
train_command
cluster_overrides
SUBMISSION_ID="${SUBMISSION_ID:-rlvr-$RECIPE-$(date +%Y%m%d-%H%M%S)-$$}"
# shellcheck disable=SC2086  # FORWARD_ENV is a list of names
runtime_env="$(runtime_env_json MODEL_PATH TRAIN_FILES VAL_FILES ${FORWARD_ENV:-})"
run ray job submit --address "$RAY_ADDRESS" --submission-id "$SUBMISSION_ID" --no-wait \
  --runtime-env-json "$runtime_env" -- "${TRAIN_CMD[@]}"
[ "$FOLLOW" = 1 ] || exit 0
[ "$DRY_RUN" = 1 ] && { echo "ray job logs --address $RAY_ADDRESS --follow $SUBMISSION_ID"; exit 0; }
ray job logs --address "$RAY_ADDRESS" --follow "$SUBMISSION_ID" || true
job_exit_status "$SUBMISSION_ID"
