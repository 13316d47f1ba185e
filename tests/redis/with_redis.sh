#!/usr/bin/env bash
# Runs a command against real Redis servers started here on loopback, on
# free ports, and stops them afterwards, whatever the command does.
#
#   with_redis.sh single  COMMAND...   one redis-server
#   with_redis.sh cluster COMMAND...   a three-master Redis Cluster
#   with_redis.sh auth    COMMAND...   one redis-server that requires a login
#
# The command runs through sh -c with KVBLOB_REDIS_URL set to the server,
# or to the cluster's seed list (redis://127.0.0.1:P1,redis://...). In auth
# mode the default user's password is KVBLOB_REDIS_PASSWORD, and the ACL
# users KVBLOB_REDIS_ACL_USER (every command) and KVBLOB_REDIS_LIMITED_USER
# (every command but CLUSTER) have the password KVBLOB_REDIS_ACL_PASSWORD;
# each password is fresh for the run.
#
# KVBLOB_REDIS_SERVER_CPUS, when set, pins every server to those CPUs
# (taskset -c LIST), so that the command can run on others
# (scripts/perf-report's redis-pinned table).
set -euo pipefail
mode=$1
shift
work=$(mktemp -d "${TMPDIR:-/tmp}/kvblob-redis.XXXXXX")
pids=()
cleanup() {
  # A server a test left stopped (SIGSTOP) handles SIGTERM only once continued.
  for pid in "${pids[@]}"; do kill -CONT "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
# shellcheck source=../support/listener.sh
. "$(dirname "$0")/../support/listener.sh"

# Starts a server on a free port (retrying ports another process holds)
# and sets $port to it.
start_server() {
  local extra=("$@") dir pid pin=() span=1
  # A cluster node's bus listens at port + 10000: both below the ephemeral range.
  [[ " ${extra[*]} " == *" --cluster-enabled "* ]] && span=10001
  [ -n "${KVBLOB_REDIS_SERVER_CPUS:-}" ] && pin=(taskset -c "$KVBLOB_REDIS_SERVER_CPUS")
  for _ in $(seq 1 50); do
    port=$(port_to_try "$span")
    dir="$work/$port"
    mkdir -p "$dir"
    "${pin[@]}" redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" \
      --logfile "$dir/log" "${extra[@]}" >/dev/null 2>&1 &
    pid=$!
    # Ready when it answers PING on a socket of its own (bounded: 60 s on a
    # loaded machine): a server beside it that took the port first answers
    # PING too, while this one, failing its bind, exits.
    for _ in $(seq 1 1200); do
      if listens_on "$pid" "$port" && redis-cli -p "$port" ping 2>/dev/null | grep -q PONG; then
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
auth)
  export KVBLOB_REDIS_PASSWORD="default-$RANDOM$RANDOM$RANDOM"
  export KVBLOB_REDIS_ACL_USER=kvblob-engine KVBLOB_REDIS_LIMITED_USER=kvblob-limited
  export KVBLOB_REDIS_ACL_PASSWORD="user-$RANDOM$RANDOM$RANDOM"
  # redis-cli pings with the default user's password (REDISCLI_AUTH).
  REDISCLI_AUTH=$KVBLOB_REDIS_PASSWORD start_server --requirepass "$KVBLOB_REDIS_PASSWORD" \
    --user "$KVBLOB_REDIS_ACL_USER" on ">$KVBLOB_REDIS_ACL_PASSWORD" '~*' '&*' '+@all' \
    --user "$KVBLOB_REDIS_LIMITED_USER" on ">$KVBLOB_REDIS_ACL_PASSWORD" '~*' '&*' '+@all' '-cluster'
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
  # Ready when every node says cluster_state:ok (bounded: 60 s).
  for _ in $(seq 1 600); do
    ok=1
    for p in "${ports[@]}"; do
      redis-cli -p "$p" cluster info | grep -q 'cluster_state:ok' || ok=0
    done
    [ "$ok" = 1 ] && break
    sleep 0.1
  done
  [ "$ok" = 1 ] || { echo "with_redis.sh: the cluster is not ok after 60 s" >&2; exit 1; }
  KVBLOB_REDIS_URL=$(printf 'redis://127.0.0.1:%s,' "${ports[@]}")
  export KVBLOB_REDIS_URL=${KVBLOB_REDIS_URL%,}
  ;;
*)
  echo "usage: with_redis.sh single|cluster|auth COMMAND..." >&2
  exit 2
  ;;
esac

# The servers outlive a failing command only until the trap stops them.
set +e
sh -c "$*"
rc=$?
exit $rc
