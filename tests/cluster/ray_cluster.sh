#!/usr/bin/env bash
# A local multi-node Ray cluster on this machine for the cluster tests (docs/cluster.md): a head and WORKERS worker
# nodes, each its own `ray start` with its own logical resources, on non-default ports and under its own temp dir,
# so that it never touches another Ray instance on the same host.
#   bash tests/cluster/ray_cluster.sh start   # prints RAY_ADDRESS=http://127.0.0.1:$DASHBOARD_PORT when the nodes are up
#   bash tests/cluster/ray_cluster.sh stop    # stops exactly the processes this cluster started (never `ray stop`)
# Environment: CLUSTER_DIR (state, logs; default /tmp/rlvr-raycl), PYTHON (default .venv/bin/python; its Ray is used),
# BASE_PORT (default 48300), WORKERS (default 1), GPUS_PER_NODE (logical, default 1), CPUS_PER_NODE (logical, default 8).
set -euo pipefail
CLUSTER_DIR="${CLUSTER_DIR:-/tmp/rlvr-raycl}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
BASE_PORT="${BASE_PORT:-48300}"
WORKERS="${WORKERS:-1}"
GPUS_PER_NODE="${GPUS_PER_NODE:-1}"
CPUS_PER_NODE="${CPUS_PER_NODE:-8}"
GCS_PORT=$((BASE_PORT))
DASHBOARD_PORT=$((BASE_PORT + 1))
# Every process of this cluster carries this tag in its environment: `stop` finds them by it, and by nothing broader.
TAG="rlvr-local-ray:$CLUSTER_DIR"
# Ray 2.60 `ray start` enables token authentication (token in ~/.ray/auth_token, made on first use); clients need the mode too
export RAY_AUTH_MODE="${RAY_AUTH_MODE:-token}"

# ports of node i: BASE_PORT + 10 + 10*i ... + 9; worker processes: BASE_PORT + 200 + 100*i ... + 99
node_ports() {
  local i=$1 p=$((BASE_PORT + 10 + 10 * $1))
  echo "--node-manager-port=$p --object-manager-port=$((p + 1)) --metrics-export-port=$((p + 2))" \
    "--dashboard-agent-listen-port=$((p + 3)) --dashboard-agent-grpc-port=$((p + 4))" \
    "--runtime-env-agent-port=$((p + 5)) --min-worker-port=$((BASE_PORT + 200 + 100 * i))" \
    "--max-worker-port=$((BASE_PORT + 299 + 100 * i))"
}

start_node() {  # start_node INDEX ARGS...: one `ray start --block` in its own session, its pid in CLUSTER_DIR
  local i=$1; shift
  # shellcheck disable=SC2046
  PATH="$(dirname "$PYTHON"):$PATH" RLVR_LOCAL_RAY="$TAG" RAY_USAGE_STATS_ENABLED=0 setsid "$PYTHON" -m ray.scripts.scripts start --block --disable-usage-stats \
    --temp-dir="$CLUSTER_DIR/tmp" --num-cpus="$CPUS_PER_NODE" --num-gpus="$GPUS_PER_NODE" \
    --resources="{\"node$i\": 1}" $(node_ports "$i") "$@" >"$CLUSTER_DIR/node$i.log" 2>&1 &
  echo $! >"$CLUSTER_DIR/node$i.pid"
}

wait_nodes() {  # wait until the cluster shows N alive nodes
  local n=$1
  for _ in $(seq 1 120); do
    if "$PYTHON" - "$GCS_PORT" "$n" <<'PY' 2>/dev/null; then return 0; fi
import sys, ray
ray.init(address=f"127.0.0.1:{sys.argv[1]}", logging_level="ERROR", log_to_driver=False)
sys.exit(0 if sum(n["Alive"] for n in ray.nodes()) >= int(sys.argv[2]) else 1)
PY
    sleep 2
  done
  echo "error: the local Ray cluster did not reach $n nodes; logs in $CLUSTER_DIR" >&2
  return 1
}

stop() {
  local f pid pids
  for f in "$CLUSTER_DIR"/node*.pid; do
    [ -f "$f" ] || continue
    pid="$(cat "$f")"
    kill -TERM "$pid" 2>/dev/null || true
  done
  # then everything left that carries this cluster's tag (workers, agents), by pid
  local try
  for try in $(seq 1 20); do
    pids="$(grep -lasF "RLVR_LOCAL_RAY=$TAG" /proc/[0-9]*/environ | cut -d/ -f3 | grep -vx "$$" || true)"
    [ -n "$pids" ] || break
    # shellcheck disable=SC2086
    kill -TERM $pids 2>/dev/null || true
    sleep 1
    # shellcheck disable=SC2086
    [ "$try" -lt 5 ] || kill -KILL $pids 2>/dev/null || true
  done
  rm -f "$CLUSTER_DIR"/node*.pid
  [ -z "$pids" ] || { echo "error: processes left: $pids" >&2; return 1; }
}

case "${1:-}" in
  start)
    mkdir -p "$CLUSTER_DIR/tmp"
    start_node 0 --head --port="$GCS_PORT" --node-ip-address=127.0.0.1 --include-dashboard=true \
      --dashboard-host=127.0.0.1 --dashboard-port="$DASHBOARD_PORT" --ray-client-server-port=$((BASE_PORT + 2))
    wait_nodes 1
    for i in $(seq 1 "$WORKERS"); do
      start_node "$i" --address="127.0.0.1:$GCS_PORT" --node-ip-address=127.0.0.1
    done
    wait_nodes $((WORKERS + 1))
    echo "RAY_ADDRESS=http://127.0.0.1:$DASHBOARD_PORT"
    ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
