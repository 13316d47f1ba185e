#!/bin/sh
# The battery cleans up after itself (each check removes what it wrote
# where the driver offers remove): runs it against a real store, then looks
# at what the store holds.
#   store_left.sh file RUNNER [ARG...]       on a fresh root=DIR, removed after
#   store_left.sh redis RUNNER URL [ARG...]  URL: a server or a comma-separated
#                                            seed list (every master of a cluster)
#   store_left.sh --side-by-side N file RUNNER [ARG...]
#                                            the battery as N shards side by side
#                                            (side_by_side.sh) on the one fresh
#                                            root: a store whose checks wait on
#                                            the disk
# Passes, printing "cleaned up: ...", when the battery is CONFORMANT, its
# report says it left nothing, and the store holds no object: no regular
# file under the root (the fan-out directories stay, empty: the driver's
# layout, made on first use and shared by later runs), no key in any
# server (DBSIZE 0).
set -u
shards=1
if [ "${1:-}" = --side-by-side ]; then
  shards=$2
  shift 2
fi
kind=$1 runner=$2
shift 2
fail() { echo "store_left.sh: $1"; echo "$out"; exit 1; }
case "$kind" in
file)
  root=$(mktemp -d)
  trap 'rm -rf "$root"' EXIT
  trap 'exit 1' INT TERM
  if [ "$shards" -gt 1 ]; then
    out=$("$(dirname "$0")/side_by_side.sh" "$shards" "$runner" --driver file --option "root=$root" "$@" 2>&1)
  else
    out=$("$runner" --driver file --option "root=$root" "$@" 2>&1)
  fi
  status=$?
  files=$(find "$root" -type f | wc -l)
  dirs=$(find "$root" -mindepth 1 -type d | wc -l)
  if [ "$files" -ne 0 ]; then
    out="$out
$(find "$root" -type f | head -20)"
    fail "$files file(s) left under the root"
  fi
  held="0 files ($dirs empty fan-out directories)"
  ;;
redis)
  # Shards on one server would meet: a staged scenario sets the server's
  # maxmemory for every client.
  [ "$shards" = 1 ] || { echo "store_left.sh: --side-by-side is for the file store"; exit 2; }
  url=$1
  shift
  out=$("$runner" --driver redis --option "url=$url" "$@" 2>&1)
  status=$?
  keys=0
  for server in $(echo "$url" | tr ',' ' '); do
    n=$(redis-cli -u "$server" dbsize) || fail "redis-cli could not reach $server"
    keys=$((keys + n))
  done
  [ "$keys" -eq 0 ] || fail "$keys key(s) left in Redis"
  held="DBSIZE 0"
  ;;
*) echo "store_left.sh: unknown store $kind"; exit 2 ;;
esac
[ "$status" -eq 0 ] || fail "the battery exited $status"
echo "$out" | grep -q '^CONFORMANT$' || fail "no CONFORMANT verdict"
echo "$out" | grep -q '^left in the store: nothing ' || fail "the report does not say it left nothing"
echo "cleaned up: $held after $(echo "$out" | grep -E '^[0-9]+ passed')"
