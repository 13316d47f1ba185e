#!/usr/bin/env bash
# The whole battery as N runs side by side, each a shard of it (the
# runner's --shard K/N: the checks whose place in the battery is K-1 modulo
# N), for a store whose checks wait on it (the disk's fsync, an access
# delay, a lease) rather than on the CPU: N waits overlap where one run
# would wait for each in turn. The runs share the store the ARGs name: a
# store that several processes may use at once (a file root; the memory
# driver's store, which is each check's process's own), whose checks each
# write keys of their own run's prefix.
#   side_by_side.sh N RUNNER [ARG...]
#
# Prints each run's report, every line of it behind "[K/N] ", then the
# lines of one run's report for them together, which the tests read: "left
# in the store: nothing ..." where every run left nothing, the counts (the
# sums; skipped counts the checks no run ran), and CONFORMANT only where
# every run exited 0 saying CONFORMANT. A run's own verdict is never a line
# of its own, so no run's CONFORMANT stands for the others'. Exits 0, or the
# first shard's nonzero exit status.
set -u
n=${1:-}
case "$n" in '' | *[!0-9]* | 0) echo "side_by_side.sh: usage: side_by_side.sh N RUNNER [ARG...] (N >= 1)" >&2; exit 2 ;; esac
shift
[ $# -ge 1 ] || { echo "side_by_side.sh: no RUNNER" >&2; exit 2; }
work=$(mktemp -d)
pids=()
# A ctest timeout or ^C ends the runs too (each then ends the check in
# progress and prints its summary).
stop() { for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null; done; wait; rm -rf "$work"; exit 1; }
trap stop INT TERM
trap 'rm -rf "$work"' EXIT
for k in $(seq 1 "$n"); do
  "$@" --shard "$k/$n" > "$work/$k.out" 2>&1 &
  pids+=($!)
done
status=0
for k in $(seq 1 "$n"); do
  rc=0
  wait "${pids[$((k - 1))]}" || rc=$?
  echo "$rc" > "$work/$k.rc"
  [ "$status" = 0 ] && status=$rc
done

for k in $(seq 1 "$n"); do sed "s|^|[$k/$n] |" "$work/$k.out"; done

# The counts line of a run: "P passed, F failed, S skipped, U not supported,
# E not exercised by this runner, X xfail, Y xpass, B blocked[, T starved ...]".
counts_re='^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped, [0-9]+ not supported, [0-9]+ not exercised by this runner, [0-9]+ xfail, [0-9]+ xpass, [0-9]+ blocked'
left_nothing=1 conformant=1 verdict="" waived=""
for k in $(seq 1 "$n"); do
  out="$work/$k.out"
  grep -q '^left in the store: nothing ' "$out" || left_nothing=0
  line=$(grep -E "$counts_re" "$out" | tail -n 1)
  said=$(grep -A1 -E "$counts_re" "$out" | tail -n 1)
  if [ -z "$line" ]; then
    conformant=0
    [ -n "$verdict" ] || verdict="NOT CONFORMANT: run $k/$n printed no summary (exit $(cat "$work/$k.rc"))"
    continue
  fi
  echo "$line" >> "$work/counts"
  case "$said" in
  CONFORMANT) ;;
  "CONFORMANT EXCEPT WAIVED MUST CHECKS:"*) waived="$waived${waived:+,}${said#CONFORMANT EXCEPT WAIVED MUST CHECKS: }" ;;
  *) conformant=0; [ -n "$verdict" ] || verdict="$said (run $k/$n)" ;;
  esac
  [ "$(cat "$work/$k.rc")" = 0 ] || { conformant=0; [ -n "$verdict" ] || verdict="NOT CONFORMANT: run $k/$n exited $(cat "$work/$k.rc")"; }
done

if [ "$left_nothing" = 1 ]; then
  echo "left in the store: nothing (each check removed what it wrote)"
else
  echo "left in the store: see each run's own line above"
fi
# Every run counts every check once: its own as what they did, the others'
# as skipped. So one run's total is the battery's, and the checks no run ran
# are that total less what the runs ran.
if [ -s "$work/counts" ]; then
  awk '{ for (i = 1; i <= NF; ++i) if ($i ~ /^[0-9]+$/) v[NR, i] = $i; fields = NF }
       END {
         total = 0; for (i = 1; i <= fields; ++i) if ((1, i) in v) total += v[1, i]
         for (i = 1; i <= fields; ++i) if ((1, i) in v) for (r = 1; r <= NR; ++r) sum[i] += v[r, i]
         counted = 0; for (i = 1; i <= fields; ++i) if ((1, i) in v && i != 5) counted += sum[i]
         printf "%d passed, %d failed, %d skipped, %d not supported, %d not exercised by this runner, %d xfail, %d xpass, %d blocked",
                sum[1], sum[3], total - counted, sum[7], sum[10], sum[16], sum[18], sum[20]
         if (sum[22] > 0) printf ", %d starved (TIMEOUT, machine starved)", sum[22]
         printf "\n" }' "$work/counts"
fi
if [ "$conformant" = 1 ] && [ -z "$waived" ]; then
  echo "CONFORMANT"
elif [ "$conformant" = 1 ]; then
  echo "CONFORMANT EXCEPT WAIVED MUST CHECKS: $waived"
else
  echo "${verdict:-NOT CONFORMANT}"
fi
echo "side by side: $n runs of the battery (--shard K/$n), the verdict is theirs together"
exit "$status"
