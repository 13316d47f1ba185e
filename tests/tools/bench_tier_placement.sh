#!/bin/sh
# kvblob-bench --tier, the tiered driver (memory over file on a fresh root):
# the warm-up leaves each lane's rows where the point says, or the point
# fails saying where they are. Results, not timings: only exit codes, the
# report's fields and the bench's own placement checks are asserted.
#   bench_tier_placement.sh BENCH
set -u
bench=$1
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
stack="--option tier.0.driver=memory --option tier.0.store=bench-tier-$$ --option tier.1.driver=file --option tier.1.root=$root"
short="--sizes 4K,64K --batch 4 --duration 0.05 --json"

# top: rows written through and found in tier 0; measured against the
# memory driver alone. bottom: rows only in tier 1 (removed from tier 0
# after the warm-up and after every step); against the file driver alone.
# promoted: rows only in tier 1, got once (which promotes each into tier 0,
# checked there): the gets measured are the second; against memory alone.
for want in "top|memory driver alone (tier 0)" "bottom|file driver alone (tier 1)" \
  "promoted|memory driver alone (tier 0)"; do
  place=${want%%|*} baseline=${want#*|}
  # shellcheck disable=SC2086
  out=$("$bench" --driver tiered $stack --tier "$place" --ops get,probe $short 2>&1) ||
    { echo "$out"; fail "--tier $place exited $?"; }
  echo "$out" | grep -qF "\"tier\":\"$place\"" || { echo "$out"; fail "--tier $place: no \"tier\" in the report"; }
  echo "$out" | grep -qF "\"baseline\":\"$baseline\"" || { echo "$out"; fail "--tier $place: baseline is not $baseline"; }
  echo "$out" | grep -q '"ratio_to_baseline":[0-9]' || { echo "$out"; fail "--tier $place: no ratio"; }
  # bottom: the baseline's steps are as far apart as the tiered lanes'
  # (each of theirs waits for its promotions, then takes them out again);
  # top and promoted gets leave nothing to take out: no pause.
  if [ "$place" = bottom ]; then
    echo "$out" | grep -q '"method":"steps [1-9][0-9]* us apart' ||
      { echo "$out"; fail "--tier bottom: the baseline's steps are not as far apart as the tiered lanes'"; }
  elif echo "$out" | grep -q '"method":"steps'; then
    echo "$out"; fail "--tier $place: the baseline paused where the tiered lanes take nothing out"
  fi
  echo "--tier $place: placed, measured against the $baseline"
done
# Nothing left behind in the bottom tier (the lanes remove what they put).
left=$(find "$root" -type f | wc -l)
[ "$left" -eq 0 ] || fail "$left file(s) left in the file tier"

# A top tier too small for one row: the warm-up cannot place the set, and
# says so; the bench exits 1 (a point not measured as asked).
# shellcheck disable=SC2086
out=$("$bench" --driver tiered --option tier.0.driver=memory --option tier.0.store=bench-tier-small-$$ \
  --option tier.0.capacity=16K --option tier.1.driver=file --option "tier.1.root=$root" --tier top --ops get \
  --sizes 64K --batch 2 --duration 0.05 2>&1)
rc=$?
[ "$rc" -eq 1 ] || { echo "$out"; fail "a top tier too small: exit $rc, not 1"; }
echo "$out" | grep -qF "the warm-up left 2 of 2 rows out of tier 0 (memory)" ||
  { echo "$out"; fail "a top tier too small: the bench does not say the rows are out of tier 0"; }
echo "--tier top with a top tier too small: refused, naming tier 0"
# The same for promoted: the promotion a full top tier skips leaves the rows
# below, and the bench says they were not promoted.
# shellcheck disable=SC2086
out=$("$bench" --driver tiered --option tier.0.driver=memory --option tier.0.store=bench-tier-small2-$$ \
  --option tier.0.capacity=16K --option tier.1.driver=file --option "tier.1.root=$root" --tier promoted --ops get \
  --sizes 64K --batch 2 --duration 0.05 2>&1)
rc=$?
[ "$rc" -eq 1 ] || { echo "$out"; fail "promoted into a top tier too small: exit $rc, not 1"; }
echo "$out" | grep -qF "left 2 of 2 rows out of tier 0 (memory): they were not promoted" ||
  { echo "$out"; fail "promoted into a top tier too small: the bench does not say the rows were not promoted"; }
echo "--tier promoted with a top tier too small: refused, the rows not promoted"

# --tier is the tiered driver's alone.
out=$("$bench" --driver memory --tier top --sizes 4K --duration 0.05 2>&1)
rc=$?
[ "$rc" -eq 2 ] || { echo "$out"; fail "--tier with the memory driver: exit $rc, not 2"; }
echo "PASS: kvblob-bench --tier places the set where it says"
