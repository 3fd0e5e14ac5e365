#!/usr/bin/env bash
#SBATCH --job-name=rlvr
#SBATCH --exclusive
#SBATCH --ntasks-per-node=1
# Multi-node training under Slurm: starts a Ray head on the first node and workers on the others (each `ray start
# --block` as its own job step), waits until they have joined, runs the recipe in the batch script against that Ray
# cluster, and stops the Ray nodes on exit, on failure and on scancel (SIGTERM). The job's exit status is the
# trainer's, so Slurm reports COMPLETED or FAILED; `sbatch --wait` blocks until then and returns it.
#   MODEL_PATH=... TRAIN_FILES=... VAL_FILES=... bash rlvr_recipes/launch/slurm.sh --recipe agrae_dapo --nnodes 2 --gpus-per-node 8
# Run outside an allocation, it checks the recipe for the shape (rlvr_recipes/launch/preflight.py) and submits itself:
# `sbatch --nodes N --ntasks-per-node 1 --exclusive --gpus-per-node G` (SBATCH_ARGS: further sbatch options, e.g.
# "--output runs/slurm/%j.log --partition gpu --wait"); inside the job each Ray step asks srun for the node's GPUs
# too, and a job without GPUs from Slurm stops at once. `sbatch --nodes 2 --gpus-per-node 8 slurm.sh ...` works as
# well (then submit from the repository root: the job finds it through SLURM_SUBMIT_DIR, or set RLVR_ROOT; submitted
# by this script, the job is told where the package is, a clone or an installed one). With --dry-run
# it prints the sbatch command and the job's commands for NNODES nodes. Environment (all optional):
#   RLVR_VENV       virtualenv whose bin/ goes first on PATH in the job (default RLVR_ROOT/.venv, if it exists); Ray
#                   is started with that python3 (python3 -m ray.scripts.scripts), which must import ray and verl
#   RAY_PORT        the head's GCS port (default 6379)
#   RAY_PORTS_BASE  every other port of the job's Ray nodes from here: the head's dashboard +1 and client server +2;
#                   node i's (0: the head) from +200(i+1): node manager, object manager, metrics, agents +0..+5,
#                   workers +10..+199 (apart even for nodes on one host); default Ray's own, which may meet another
#                   Ray instance on a shared node
#   RAY_HEAD_IP     the head's address (default the head node's Slurm NodeAddr, resolved)
#   RAY_NUM_CPUS    logical CPUs of each Ray node (default the node's; 16 with VERL_PLATFORM=cpu, as rlvr_recipes/configs/cpu.yaml)
#   RAY_TEMP_DIR    Ray's temp and log directory on each node (default Ray's: $RAY_TMPDIR/ray, else /tmp/ray)
#   RAY_START_TIMEOUT  seconds to wait for the Ray nodes (default 300)
#   RAY_START_ATTEMPTS times to start the Ray nodes when one does not come up (default 3)
#   RAY_AUTH_MODE   default token, with a fresh RAY_AUTH_TOKEN for the job unless RAY_AUTH_TOKEN(_PATH) is set
set -euo pipefail
# Under sbatch this file runs as a copy in slurmd's spool directory: the repository is RLVR_ROOT, else the directory
# the job was submitted from.
if [ -z "${RLVR_ROOT:-}" ]; then
  if [ -f "$(dirname "$0")/common.sh" ]; then RLVR_ROOT="$(dirname "$0")/../.."; else RLVR_ROOT="${SLURM_SUBMIT_DIR:-.}"; fi
fi
[ -f "$RLVR_ROOT/rlvr_recipes/launch/common.sh" ] || {
  echo "error: no rlvr_recipes/launch/common.sh under '$RLVR_ROOT': submit from the repository root or set RLVR_ROOT" >&2
  exit 2
}
# shellcheck source=rlvr_recipes/launch/common.sh
source "$RLVR_ROOT/rlvr_recipes/launch/common.sh"
usage() {
  echo "usage: $0 --nnodes N --gpus-per-node G [options] [-- KEY=VALUE ...]   (environment: see the head of this file)"
  usage_common
}
NNODES="${SLURM_JOB_NUM_NODES:-$NNODES}"
parse_common "$@"
check_inputs
# GPUs are asked from Slurm itself (sbatch and every Ray step's srun), not only given to this script; with
# VERL_PLATFORM=cpu the GPUs are Ray's logical ones and nothing is asked.
GPU_REQUEST=()
[ "${VERL_PLATFORM:-}" = cpu ] || GPU_REQUEST=("--gpus-per-node=$GPUS_PER_NODE")
if [ -z "${SLURM_JOB_NODELIST:-}" ]; then
  [ "$DRY_RUN" = 1 ] || command -v sbatch >/dev/null ||
    die "not inside a Slurm allocation and no sbatch here: run this on a Slurm submit host, or use --dry-run"
  run_preflight
  # shellcheck disable=SC2206  # SBATCH_ARGS is a list of sbatch options
  SBATCH_CMD=(sbatch --job-name=rlvr --nodes="$NNODES" --ntasks-per-node=1 --exclusive --export="ALL,RLVR_ROOT=$RLVR_ROOT"
    ${GPU_REQUEST[@]+"${GPU_REQUEST[@]}"} ${SBATCH_ARGS:-} "$RLVR_ROOT/rlvr_recipes/launch/slurm.sh")
  for a in "$@"; do [ "$a" = --dry-run ] || SBATCH_CMD+=("$a"); done
  run "${SBATCH_CMD[@]}"
  [ "$DRY_RUN" = 1 ] || exit 0
elif [ "${#GPU_REQUEST[@]}" -gt 0 ]; then
  gpus_here="${SLURM_GPUS_ON_NODE:-${SLURM_GPUS_PER_NODE:-${SLURM_JOB_GPUS:-}}}"
  [ -n "$gpus_here" ] || die "the job has no GPUs from Slurm (SLURM_GPUS_ON_NODE, SLURM_GPUS_PER_NODE, SLURM_JOB_GPUS \
unset): submit with 'bash $0 --nnodes $NNODES --gpus-per-node $GPUS_PER_NODE ...' or 'sbatch --gpus-per-node $GPUS_PER_NODE ...'"
  if [[ "${SLURM_GPUS_ON_NODE:-}" =~ ^[0-9]+$ ]] && [ "$SLURM_GPUS_ON_NODE" -lt "$GPUS_PER_NODE" ]; then
    die "the job has $SLURM_GPUS_ON_NODE GPUs per node from Slurm but --gpus-per-node is $GPUS_PER_NODE"
  fi
fi
RAY_PORT="${RAY_PORT:-6379}"
RAY_START_TIMEOUT="${RAY_START_TIMEOUT:-300}"
RAY_START_ATTEMPTS="${RAY_START_ATTEMPTS:-3}"
is_positive_int "$RAY_PORT" || die "RAY_PORT must be a port number, got '$RAY_PORT'"
is_positive_int "$RAY_START_TIMEOUT" || die "RAY_START_TIMEOUT must be a number of seconds, got '$RAY_START_TIMEOUT'"
is_positive_int "$RAY_START_ATTEMPTS" || die "RAY_START_ATTEMPTS must be a positive integer, got '$RAY_START_ATTEMPTS'"
[ -z "${RAY_PORTS_BASE:-}" ] || is_positive_int "$RAY_PORTS_BASE" || die "RAY_PORTS_BASE must be a port number"
if [ -n "${SLURM_JOB_NODELIST:-}" ]; then
  mapfile -t nodes < <(scontrol show hostnames "$SLURM_JOB_NODELIST")
else
  [ "$DRY_RUN" = 1 ] || die "not inside a Slurm allocation: submit with sbatch, or use --dry-run"
  nodes=()
  for i in $(seq 0 $((NNODES - 1))); do nodes+=("node$i"); done
fi
[ "${#nodes[@]}" -eq "$NNODES" ] || die "allocation has ${#nodes[@]} nodes but --nnodes is $NNODES"
head_node="${nodes[0]}"

# The address the other nodes and the trainer reach the head at (its Slurm NodeAddr), given to the head as its node
# IP: Ray otherwise takes the address of the host's default route, which need not be the one Slurm uses. (Ray turns a
# loopback address into that one, for the head and for the trainer alike.)
head_ip="${RAY_HEAD_IP:-}"
if [ -z "$head_ip" ] && [ "$DRY_RUN" != 1 ]; then
  node_addr="$(scontrol show node "$head_node" -o | grep -o 'NodeAddr=[^ ]*' | cut -d= -f2)" || node_addr=""
  head_ip="$(getent ahostsv4 "${node_addr:-$head_node}" | awk 'NR == 1 {print $1}')" || head_ip=""
fi
head_addr="${head_ip:-$head_node}"

[ "${VERL_PLATFORM:-}" = cpu ] && RAY_NUM_CPUS="${RAY_NUM_CPUS:-16}"
if [ -n "${RAY_PORTS_BASE:-}" ] && [ $((RAY_PORTS_BASE + 200 * (NNODES + 1))) -gt 65535 ]; then
  die "RAY_PORTS_BASE=$RAY_PORTS_BASE leaves no room for the ports of $NNODES nodes (200 each)"
fi
node_args() {  # node_args I: the options of the `ray start` of node I (0: the head) in the array NODE_ARGS
  NODE_ARGS=()
  if [ -n "${RAY_PORTS_BASE:-}" ]; then
    # node i's ports from RAY_PORTS_BASE + 200 (i + 1): apart even when several nodes share a host
    local p=$((RAY_PORTS_BASE + 200 * ($1 + 1)))
    NODE_ARGS+=("--node-manager-port=$p" "--object-manager-port=$((p + 1))" "--metrics-export-port=$((p + 2))"
      "--dashboard-agent-listen-port=$((p + 3))" "--dashboard-agent-grpc-port=$((p + 4))"
      "--runtime-env-agent-port=$((p + 5))" "--min-worker-port=$((p + 10))" "--max-worker-port=$((p + 199))")
  fi
  [ -z "${RAY_NUM_CPUS:-}" ] || NODE_ARGS+=("--num-cpus=$RAY_NUM_CPUS")
  [ -z "${RAY_TEMP_DIR:-}" ] || NODE_ARGS+=("--temp-dir=$RAY_TEMP_DIR")
  if [ "$1" = 0 ]; then
    [ -z "$head_ip" ] || NODE_ARGS+=("--node-ip-address=$head_ip")
    [ -z "${RAY_PORTS_BASE:-}" ] || NODE_ARGS+=("--dashboard-port=$((RAY_PORTS_BASE + 1))"
      "--ray-client-server-port=$((RAY_PORTS_BASE + 2))")
  fi
  return 0
}

# The job's environment, inherited by the job steps (the Ray nodes, hence every Ray worker) and the trainer: this
# checkout and the plugin (the CPU backend first under VERL_PLATFORM=cpu), the venv's ray and python3, one auth
# token for the job's Ray cluster, no drain wait at shutdown (Ray Serve's; Slurm kills after KillWait).
RAY_CMD=(python3 -m ray.scripts.scripts start)  # `ray start` with the job's interpreter, not a `ray` found on PATH
if [ "$DRY_RUN" != 1 ]; then
  RLVR_VENV="${RLVR_VENV:-$RLVR_ROOT/.venv}"
  [ ! -x "$RLVR_VENV/bin/python3" ] || export PATH="$RLVR_VENV/bin:$PATH"
  job_python="$(command -v python3)" || die "no python3 on PATH in the job: activate the environment rlvr-recipes is installed in before submitting, or set RLVR_VENV"
  "$job_python" -c 'import ray, verl' 2>/dev/null || die "$job_python cannot import ray and verl: activate the \
environment rlvr-recipes is installed in before submitting (sbatch passes the environment on), or set RLVR_VENV"
  RAY_CMD=("$job_python" -m ray.scripts.scripts start)
  export PYTHONPATH="$RLVR_ROOT${PYTHONPATH:+:$PYTHONPATH}"
  modules="$PLUGIN_MODULES"
  [ "${VERL_PLATFORM:-}" = cpu ] && modules="$CPU_PLUGIN_MODULES"
  export VERL_USE_EXTERNAL_MODULES="${VERL_USE_EXTERNAL_MODULES:-$modules}"
  export RAY_AUTH_MODE="${RAY_AUTH_MODE:-token}"
  if [ "$RAY_AUTH_MODE" = token ] && [ -z "${RAY_AUTH_TOKEN:-}${RAY_AUTH_TOKEN_PATH:-}" ]; then
    RAY_AUTH_TOKEN="$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')"
    export RAY_AUTH_TOKEN
  fi
  export RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S="${RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S:-0}"
  export RAY_USAGE_STATS_ENABLED="${RAY_USAGE_STATS_ENABLED:-0}"
fi
# inside the job (again, if this script submitted it): the recipe on this shape, with the job's verl
[ -z "${SLURM_JOB_NODELIST:-}" ] || run_preflight

ray_pids=()  # the srun of each `ray start --block`
child_pid=""  # the command the script waits for (a check of the Ray nodes, the trainer)
# SIGTERM to the job's Ray steps (`scancel --signal=TERM JOB.STEP`): `ray start --block` then stops its node's Ray
# processes and exits. Not a SIGTERM to srun: srun answers that by SIGKILLing its step.
# shellcheck disable=SC2329  # called by the traps below
stop_ray() {
  local steps
  [ -n "${ray_pids[*]}" ] || return 0
  echo "slurm.sh: stopping the job's Ray nodes" >&2
  steps="$(squeue -h -s -j "${SLURM_JOB_ID:-0}" -o %i 2>/dev/null | grep -E '^[0-9]+[.][0-9]+$' | tr '\n' ' ')" || steps=""
  # shellcheck disable=SC2086  # a list of step ids
  [ -z "$steps" ] || scancel --signal=TERM $steps 2>/dev/null || true
  wait_pids 30 "${ray_pids[@]}" || { kill -TERM "${ray_pids[@]}" 2>/dev/null || true; wait_pids 30 "${ray_pids[@]}"; } || true
  ray_pids=()
}
# shellcheck disable=SC2329
wait_pids() {  # wait_pids SECONDS PID...: until none of the PIDs is alive; 1 if some still are
  local seconds=$1 i pid alive; shift
  for i in $(seq 1 "$seconds"); do
    alive=""
    for pid in "$@"; do if kill -0 "$pid" 2>/dev/null; then alive=1; fi; done
    [ -n "$alive" ] || return 0
    [ "$i" = "$seconds" ] || sleep 1
  done
  return 1
}
# shellcheck disable=SC2329
on_signal() {
  echo "slurm.sh: $1 received, stopping" >&2
  [ -z "$child_pid" ] || kill -TERM "$child_pid" 2>/dev/null || true
  exit 143
}
if [ "$DRY_RUN" != 1 ]; then
  trap stop_ray EXIT
  trap 'on_signal SIGTERM' TERM
  trap 'on_signal SIGINT' INT
fi

# Connects to the head and counts the alive nodes (exit status 0 when there are at least N).
NODES_UP='import sys, ray
ray.init(address=sys.argv[1], logging_level="ERROR", log_to_driver=False)
sys.exit(0 if sum(n["Alive"] for n in ray.nodes()) >= int(sys.argv[2]) else 1)'
wait_ray_nodes() {  # wait_ray_nodes N: until N Ray nodes are alive; 1 if a `ray start` step ends first or on timeout
  [ "$DRY_RUN" != 1 ] || return 0
  local n=$1 t0=$SECONDS pid
  while true; do
    for pid in "${ray_pids[@]}"; do
      kill -0 "$pid" 2>/dev/null || { echo "slurm.sh: a 'ray start' step ended before $n Ray nodes were up" >&2; return 1; }
    done
    # in the background (here and below), so that a signal reaches its trap at once: bash runs traps between commands
    timeout 120 python3 -c "$NODES_UP" "$head_addr:$RAY_PORT" "$n" 2>/dev/null &
    child_pid=$!
    if wait "$child_pid"; then child_pid=""; return 0; fi
    child_pid=""
    [ $((SECONDS - t0)) -lt "$RAY_START_TIMEOUT" ] || { echo "slurm.sh: no $n Ray nodes after $RAY_START_TIMEOUT s" >&2; return 1; }
    sleep 2
  done
}

start_ray() {  # the head, then a worker on every other node; 1 if they are not all up
  node_args 0
  run_bg srun --nodes=1 --ntasks=1 ${GPU_REQUEST[@]+"${GPU_REQUEST[@]}"} -w "$head_node" "${RAY_CMD[@]}" --head \
    --port="$RAY_PORT" --num-gpus="$GPUS_PER_NODE" --block ${NODE_ARGS[@]+"${NODE_ARGS[@]}"}
  [ "$DRY_RUN" = 1 ] || ray_pids+=("$!")
  wait_ray_nodes 1 || return 1
  local i
  for i in $(seq 1 $((NNODES - 1))); do
    node_args "$i"
    run_bg srun --nodes=1 --ntasks=1 ${GPU_REQUEST[@]+"${GPU_REQUEST[@]}"} -w "${nodes[$i]}" "${RAY_CMD[@]}" \
      --address="$head_addr:$RAY_PORT" \
      --num-gpus="$GPUS_PER_NODE" --block ${NODE_ARGS[@]+"${NODE_ARGS[@]}"}
    [ "$DRY_RUN" = 1 ] || ray_pids+=("$!")
  done
  wait_ray_nodes "$NNODES"
}

# A node that does not come up (on a loaded machine the raylet gives up waiting for its agents after a few seconds)
# is retried: the job's Ray processes are stopped and started again, RAY_START_ATTEMPTS times in all.
for attempt in $(seq 1 "$RAY_START_ATTEMPTS"); do
  start_ray && break
  stop_ray
  [ "$attempt" -lt "$RAY_START_ATTEMPTS" ] || die "the Ray cluster did not start ($attempt attempts; the output of 'ray start' is above)"
  echo "slurm.sh: starting the Ray cluster again (attempt $((attempt + 1)) of $RAY_START_ATTEMPTS)" >&2
done
train_command
cluster_overrides
export RAY_ADDRESS="$head_addr:$RAY_PORT"
if [ "$DRY_RUN" = 1 ]; then
  run "${TRAIN_CMD[@]}"
  exit 0
fi
"${TRAIN_CMD[@]}" &
child_pid=$!
status=0
wait "$child_pid" || status=$?
child_pid=""
echo "slurm.sh: the trainer exited with status $status" >&2
exit "$status"
