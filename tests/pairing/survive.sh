#!/bin/sh
# The runner outlives the drivers it judges.
# Usage: survive.sh RUNNER CRASHING_DRIVER HANGING_DRIVER
set -u
runner=$1 crashing=$2 hanging=$3
fail() { echo "$1"; echo "$out"; exit 1; }

# A driver that dies in put: its checks are CRASH, later checks still run, exit 1.
out=$("$runner" --driver "$crashing" --filter 'data.round-trip.one-row' --filter 'data.miss.untouched' \
      --filter 'admission.no-rows' 2>&1)
status=$?
echo "$out" | grep -q '^\[CRASH\] data.round-trip.one-row: killed by signal' || fail "no CRASH for one-row"
echo "$out" | grep -q '^\[PASS\] data.miss.untouched$' || fail "the check after the crash did not run"
echo "$out" | grep -q '^\[PASS\] admission.no-rows$' || fail "the last check did not run"
[ "$status" -eq 1 ] || fail "exit $status after a crash, not 1"

# A driver that hangs in put: TIMEOUT at --timeout, later checks still run, exit 1.
out=$("$runner" --driver "$hanging" --timeout 2 --filter 'data.round-trip.one-row' --filter 'admission.no-rows' 2>&1)
status=$?
echo "$out" | grep -q '^\[TIMEOUT\] data.round-trip.one-row: no answer within 2 s' || fail "no TIMEOUT for one-row"
echo "$out" | grep -q '^\[PASS\] admission.no-rows$' || fail "the check after the hang did not run"
[ "$status" -eq 1 ] || fail "exit $status after a timeout, not 1"

# Interrupted while a check hangs: the summary still comes, exit 4.
"$runner" --driver "$hanging" --timeout 60 --filter 'data.round-trip.one-row' > interrupted.out 2>&1 &
pid=$!
# The runner prints its header once its SIGTERM handler is in place: wait for
# that line (however long a loaded machine takes), not for a guessed time.
waited=0
until grep -q '^kvblob-conformance .*: driver ' interrupted.out 2>/dev/null; do
  kill -0 "$pid" 2>/dev/null || { out=$(cat interrupted.out); fail "the runner ended before its header"; }
  waited=$((waited + 1))
  [ "$waited" -lt 6000 ] || { kill -KILL "$pid"; out=$(cat interrupted.out); fail "no header within 300 s"; }
  sleep 0.05
done
kill -TERM "$pid"
wait "$pid"
status=$?
out=$(cat interrupted.out)
rm -f interrupted.out
echo "$out" | grep -q '^run incomplete' || fail "no incomplete notice after SIGTERM"
[ "$status" -eq 4 ] || fail "exit $status after SIGTERM, not 4"
echo "survived: crash, hang and interruption"
