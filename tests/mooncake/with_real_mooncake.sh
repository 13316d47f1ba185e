#!/usr/bin/env bash
# The battery against a real Mooncake store: runs only with
# KVBLOB_MOONCAKE_REAL=1, a mooncake_master on PATH and Mooncake's C library
# (KVBLOB_MOONCAKE_LIBRARY, default libmooncake_store.so from the linker's
# search path). Starts the master, with its HTTP metadata server, on
# loopback ports, runs the battery, prints what it ran against, and stops
# the master. Exit 77 (skipped) otherwise.
#
#   with_real_mooncake.sh KVBLOB_CONFORMANCE
set -euo pipefail
conformance=$1
if [ "${KVBLOB_MOONCAKE_REAL:-}" != 1 ]; then
  echo "skipped: set KVBLOB_MOONCAKE_REAL=1 with mooncake_master and libmooncake_store.so installed"
  exit 77
fi
command -v mooncake_master >/dev/null || { echo "KVBLOB_MOONCAKE_REAL=1 but no mooncake_master on PATH" >&2; exit 1; }
library=${KVBLOB_MOONCAKE_LIBRARY:-libmooncake_store.so}
port=$((20000 + RANDOM % 20000))
http_port=$((port + 1))
work=$(mktemp -d "${TMPDIR:-/tmp}/kvblob-mooncake.XXXXXX")
mooncake_master --port="$port" --enable_http_metadata_server=true --http_metadata_server_port="$http_port" \
  >"$work/master.log" 2>&1 &
master=$!
trap 'kill $master 2>/dev/null || true; wait $master 2>/dev/null || true; rm -rf "$work"' EXIT
sleep 2
kill -0 "$master" 2>/dev/null || { cat "$work/master.log" >&2; exit 1; }
echo "mooncake_master: $(command -v mooncake_master) ($(sha256sum "$(command -v mooncake_master)" | cut -c1-16))"
echo "library: $library"
"$conformance" --driver mooncake --option "library=$library" --option "master_server_address=127.0.0.1:$port" \
  --option "metadata_server=http://127.0.0.1:$http_port/metadata" --option protocol=tcp \
  --option local_hostname=127.0.0.1
