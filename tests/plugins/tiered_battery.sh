#!/bin/sh
# The battery against the tiered driver, a memory tier over a store, and
# what the store holds after it:
#   tiered_battery.sh file RUNNER [ARG...]        over the file driver on a
#                                                 fresh root, removed after
#   tiered_battery.sh redis RUNNER URL [ARG...]   over the Redis driver at URL
#   tiered_battery.sh file-redis RUNNER URL [ARG...]
#                                                 over the file driver on a
#                                                 fresh root over the Redis
#                                                 driver at URL; and the
#                                                 battery against the Redis
#                                                 driver alone, whose count
#                                                 of NOT_SUPPORTED checks the
#                                                 stack may not exceed
# Passes, printing "tiered_battery.sh: CONFORMANT", when the battery says
# CONFORMANT and no store below holds an object (no file under the root;
# DBSIZE 0).
set -u
. "$(dirname "$0")/../support/scratch.sh"
kind=$1 runner=$2
shift 2
top="--option tier.0.driver=memory --option tier.0.store=battery-$$"
# The count of NOT_SUPPORTED checks in a battery's summary line.
not_supported() { echo "$1" | sed -n 's/.* failed, [0-9]* skipped, \([0-9]*\) not supported,.*/\1/p' | tail -n 1; }
case "$kind" in
file)
  root=$(mktemp -d -p "$(scratch_parent)") || { echo "tiered_battery.sh: no scratch folder in $(scratch_parent)"; exit 1; }
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
file-redis)
  url=$1
  shift
  root=$(mktemp -d -p "$(scratch_parent)") || { echo "tiered_battery.sh: no scratch folder in $(scratch_parent)"; exit 1; }
  trap 'rm -rf "$root"' EXIT
  trap 'exit 1' INT TERM
  out=$("$runner" --driver tiered $top --option tier.1.driver=file --option "tier.1.root=$root" \
    --option tier.2.driver=redis --option "tier.2.url=$url" "$@" 2>&1)
  status=$?
  files=$(find "$root" -type f | wc -l)
  keys=$(redis-cli -u "$url" dbsize) || { echo "tiered_battery.sh: redis-cli could not reach $url"; exit 1; }
  left=$((files + keys))
  # The bottom tier alone, on the same server, for its NOT_SUPPORTED count,
  # with the battery's arguments less the tiered driver's own options
  # (write=back, say), which the Redis driver would refuse.
  n=$#
  while [ "$n" -gt 0 ]; do
    n=$((n - 1))
    if [ "$1" = --option ] && [ "$n" -gt 0 ]; then
      case "$2" in
      write=* | write_back_* | top_bytes=* | lru_keys=*) shift 2; n=$((n - 1)); continue ;;
      esac
    fi
    set -- "$@" "$1"
    shift
  done
  alone=$("$runner" --driver redis --option "url=$url" "$@" 2>&1)
  stack_ns=$(not_supported "$out") alone_ns=$(not_supported "$alone")
  echo "redis alone:"
  echo "$alone" | grep '^\[NOT_SUPPORTED\]'
  echo "$alone" | tail -n 2
  [ -n "$stack_ns" ] && [ -n "$alone_ns" ] || { echo "$out"; echo "tiered_battery.sh: no summary line to count"; exit 1; }
  echo "tiered_battery.sh: NOT_SUPPORTED $stack_ns through the stack, $alone_ns for redis alone"
  [ "$stack_ns" -le "$alone_ns" ] ||
    { echo "$out"; echo "tiered_battery.sh: more checks NOT_SUPPORTED than the bottom tier alone"; exit 1; }
  ;;
*) echo "tiered_battery.sh: unknown store $kind"; exit 2 ;;
esac
echo "$out"
[ -n "${root:-}" ] && echo "tiered_battery.sh: the file tier's root was $root"
[ "$left" -eq 0 ] || { echo "tiered_battery.sh: $left object(s) left in the $kind tiers"; exit 1; }
[ "$status" -eq 0 ] || { echo "tiered_battery.sh: the battery exited $status"; exit 1; }
echo "$out" | grep -q '^CONFORMANT$' || { echo "tiered_battery.sh: no CONFORMANT verdict"; exit 1; }
echo "tiered_battery.sh: CONFORMANT, nothing left in the $kind tier"
