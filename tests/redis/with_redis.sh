#!/usr/bin/env bash
# Runs a command against real Redis servers started here on loopback, on
# free ports, and stops them afterwards, whatever the command does.
#
#   with_redis.sh single  COMMAND...   one redis-server
#   with_redis.sh cluster COMMAND...   a three-master Redis Cluster
#
# The command runs through sh -c with KVBLOB_REDIS_URL set to the server,
# or to the cluster's seed list (redis://127.0.0.1:P1,redis://...).
set -euo pipefail
mode=$1
shift
work=$(mktemp -d "${TMPDIR:-/tmp}/kvblob-redis.XXXXXX")
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# Starts a server on a free port (retrying ports another process holds)
# and sets $port to it.
start_server() {
  local extra=("$@") dir pid
  for _ in $(seq 1 50); do
    port=$((20000 + RANDOM % 40000))
    dir="$work/$port"
    mkdir -p "$dir"
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" \
      --logfile "$dir/log" "${extra[@]}" >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 1 100); do
      if redis-cli -p "$port" ping 2>/dev/null | grep -q PONG; then
        pids+=("$pid")
        return 0
      fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.05
    done
    kill "$pid" 2>/dev/null || true
  done
  echo "with_redis.sh: could not start redis-server" >&2
  return 1
}

case "$mode" in
single)
  start_server
  export KVBLOB_REDIS_URL="redis://127.0.0.1:$port"
  ;;
cluster)
  ports=()
  for _ in 1 2 3; do
    start_server --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000
    ports+=("$port")
  done
  redis-cli --cluster create "${ports[@]/#/127.0.0.1:}" --cluster-replicas 0 --cluster-yes >"$work/create.log" 2>&1 ||
    { cat "$work/create.log" >&2; exit 1; }
  for _ in $(seq 1 100); do
    ok=1
    for p in "${ports[@]}"; do
      redis-cli -p "$p" cluster info | grep -q 'cluster_state:ok' || ok=0
    done
    [ "$ok" = 1 ] && break
    sleep 0.1
  done
  KVBLOB_REDIS_URL=$(printf 'redis://127.0.0.1:%s,' "${ports[@]}")
  export KVBLOB_REDIS_URL=${KVBLOB_REDIS_URL%,}
  ;;
*)
  echo "usage: with_redis.sh single|cluster COMMAND..." >&2
  exit 2
  ;;
esac

# The servers outlive a failing command only until the trap stops them.
set +e
sh -c "$*"
rc=$?
exit $rc
