#!/usr/bin/env bash
# Runs a command against a real Mooncake store: starts mooncake_master, with
# its HTTP metadata server, on free loopback ports, and stops it afterwards,
# whatever the command does.
#
#   with_mooncake.sh [--defaults] COMMAND...
#
# --defaults: the master as it ships, with none of its lease or timeout
# flags (a 10 s lease), and KVBLOB_MOONCAKE_OPTIONS naming only the
# addresses (the driver's library is then found through LD_LIBRARY_PATH,
# which the command sets from KVBLOB_MOONCAKE_LIBRARY_DIR).
#
# The Mooncake build is the prefix KVBLOB_MOONCAKE_PREFIX names (from
# scripts/build-mooncake). Without it, or without a complete build there, the
# command does not run and this exits 77 (skipped), saying why.
#
# KVBLOB_MOONCAKE_MASTER_CPUS, when set, pins the master to those CPUs
# (taskset -c LIST), so that the command can run on others
# (scripts/perf-report's mooncake-pinned table).
#
# The command runs through sh -c with:
#   KVBLOB_MOONCAKE_LIBRARY     the prefix's lib/libmooncake_store.so
#   KVBLOB_MOONCAKE_LIBRARY_DIR the folder it lies in
#   KVBLOB_MOONCAKE_MASTER      127.0.0.1:RPC_PORT
#   KVBLOB_MOONCAKE_METADATA    http://127.0.0.1:HTTP_PORT/metadata
#   KVBLOB_MOONCAKE_MASTER_PID  the master's pid (a test may stop it)
#   KVBLOB_MOONCAKE_OPTIONS     the driver options naming all of the above
#   KVBLOB_MOONCAKE_LEASE_MS    the master's default_kv_lease_ttl
set -euo pipefail

defaults=0
if [ "${1:-}" = --defaults ]; then defaults=1; shift; fi

# Only where asked for: the suite's plain runs (ctest, the sanitizer presets)
# skip these; scripts/test-mooncake builds Mooncake, names its prefix and runs
# them once.
prefix=${KVBLOB_MOONCAKE_PREFIX:-}
if [ -z "$prefix" ]; then
  echo "skipped: KVBLOB_MOONCAKE_PREFIX is not set (scripts/test-mooncake builds Mooncake, sets it and runs these tests)"
  exit 77
fi
if [ ! -f "$prefix/.complete" ]; then
  echo "skipped: no complete Mooncake build at $prefix (scripts/build-mooncake builds it; scripts/test-mooncake builds it and runs these tests)"
  exit 77
fi
master_bin="$prefix/bin/mooncake_master"
library="$prefix/lib/libmooncake_store.so"

# Otherwise a shorter lease than the master's default (10 s), which makes
# every remove within 10 s of the driver's own get or probe wait for the
# lease it took (the driver waits up to lease_ttl_ms), yet long enough that
# a get on a loaded machine ends before its lease does (else LEASE_EXPIRED).
lease_ms=${KVBLOB_MOONCAKE_LEASE_MS:-2000}
lease_flags=(--default_kv_lease_ttl="$lease_ms")
if [ "$defaults" = 1 ]; then lease_ms=10000; lease_flags=(); fi

work=$(mktemp -d "${TMPDIR:-/tmp}/kvblob-mooncake.XXXXXX")
master=""
stop_master() {
  if [ -n "$master" ]; then
    kill -CONT "$master" 2>/dev/null || true  # a test may have left it stopped
    kill "$master" 2>/dev/null || true
    wait "$master" 2>/dev/null || true
  fi
}
cleanup() {
  stop_master
  rm -rf "$work"
}
trap cleanup EXIT

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# shellcheck source=../support/listener.sh
. "$(dirname "$0")/../support/listener.sh"

pin=()
[ -n "${KVBLOB_MOONCAKE_MASTER_CPUS:-}" ] && pin=(taskset -c "$KVBLOB_MOONCAKE_MASTER_CPUS")
started=0
for attempt in $(seq 1 20); do
  rpc=$(port_to_try 3); http=$((rpc + 1)); metrics=$((rpc + 2))
  if port_open "$rpc" || port_open "$http" || port_open "$metrics"; then continue; fi
  # The master's own RUNPATH names the build folder it was linked in, which
  # a prefix mounted or copied elsewhere lacks: its libasio.so is in the
  # prefix's lib/.
  LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ${pin[@]+"${pin[@]}"} "$master_bin" \
    --rpc_address=127.0.0.1 --rpc_port="$rpc" \
    --enable_http_metadata_server=true --http_metadata_server_host=127.0.0.1 \
    --http_metadata_server_port="$http" --metrics_port="$metrics" --enable_metric_reporting=false \
    ${lease_flags[@]+"${lease_flags[@]}"} >"$work/master.$attempt.log" 2>&1 &
  master=$!
  # Ready when both its ports are its own listeners: the signal the master
  # gives. (A port another process took after the check above accepts too,
  # and this master, failing its bind, exits: try other ports.)
  for _ in $(seq 1 600); do
    if listens_on "$master" "$rpc" && listens_on "$master" "$http"; then started=1; break; fi
    kill -0 "$master" 2>/dev/null || break
    sleep 0.05
  done
  [ "$started" = 1 ] && break
  stop_master
  master=""
done
if [ "$started" != 1 ]; then
  echo "with_mooncake.sh: could not start $master_bin on loopback; its last log:" >&2
  tail -n 20 "$work"/master.*.log >&2 || true
  exit 1
fi

export KVBLOB_MOONCAKE_LIBRARY="$library"
export KVBLOB_MOONCAKE_MASTER="127.0.0.1:$rpc"
export KVBLOB_MOONCAKE_METADATA="http://127.0.0.1:$http/metadata"
export KVBLOB_MOONCAKE_MASTER_PID="$master"
export KVBLOB_MOONCAKE_LEASE_MS="$lease_ms"
export KVBLOB_MOONCAKE_LIBRARY_DIR="$prefix/lib"
addresses="--option master_server_address=$KVBLOB_MOONCAKE_MASTER --option metadata_server=$KVBLOB_MOONCAKE_METADATA --option local_hostname=127.0.0.1"
if [ "$defaults" = 1 ]; then
  export KVBLOB_MOONCAKE_OPTIONS="$addresses"
  echo "mooncake_master: $master_bin (pid $master, rpc $rpc, http $http, its default flags); driver options: the addresses only"
else
  export KVBLOB_MOONCAKE_OPTIONS="--option library=$library $addresses --option protocol=tcp --option global_segment_size=64M --option local_buffer_size=16M --option lease_ttl_ms=$lease_ms"
  echo "mooncake_master: $master_bin (pid $master, rpc $rpc, http $http, lease ${lease_ms} ms)"
fi

set +e
sh -c "$*"
rc=$?
if ! kill -0 "$master" 2>/dev/null; then
  echo "with_mooncake.sh: the master is gone; its log:" >&2
  tail -n 20 "$work"/master.*.log >&2 || true
fi
exit $rc
