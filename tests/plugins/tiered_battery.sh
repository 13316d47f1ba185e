#!/bin/sh
# The battery against the tiered driver, a memory tier over a store, and
# what the store holds after it:
#   tiered_battery.sh file RUNNER [ARG...]        over the file driver on a
#                                                 fresh root, removed after
#   tiered_battery.sh redis RUNNER URL [ARG...]   over the Redis driver at URL
# Passes, printing "tiered_battery.sh: CONFORMANT", when the battery says
# CONFORMANT and the bottom store holds no object (no file under the root;
# DBSIZE 0).
set -u
kind=$1 runner=$2
shift 2
top="--option tier.0.driver=memory --option tier.0.store=battery-$$"
case "$kind" in
file)
  root=$(mktemp -d)
  trap 'rm -rf "$root"' EXIT
  trap 'exit 1' INT TERM
  out=$("$runner" --driver tiered $top --option tier.1.driver=file --option "tier.1.root=$root" "$@" 2>&1)
  status=$?
  left=$(find "$root" -type f | wc -l)
  ;;
redis)
  url=$1
  shift
  out=$("$runner" --driver tiered $top --option tier.1.driver=redis --option "tier.1.url=$url" "$@" 2>&1)
  status=$?
  left=$(redis-cli -u "$url" dbsize) || { echo "tiered_battery.sh: redis-cli could not reach $url"; exit 1; }
  ;;
*) echo "tiered_battery.sh: unknown store $kind"; exit 2 ;;
esac
echo "$out"
[ "$left" -eq 0 ] || { echo "tiered_battery.sh: $left object(s) left in the $kind tier"; exit 1; }
[ "$status" -eq 0 ] || { echo "tiered_battery.sh: the battery exited $status"; exit 1; }
echo "$out" | grep -q '^CONFORMANT$' || { echo "tiered_battery.sh: no CONFORMANT verdict"; exit 1; }
echo "tiered_battery.sh: CONFORMANT, nothing left in the $kind tier"
