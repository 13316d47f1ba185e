#!/bin/sh
# One bug, one diagnosis: the driver template with its get broken (READY for
# a key never put) fails only the checks that judge a get of an absent key,
# naming R-ROW-4 and what the driver answered; every check that reads a get
# that is not READY as evidence for another rule says BLOCKED, and by which
# check, instead of failing a rule it did not test.
# Usage: blocked_not_blamed.sh RUNNER BROKEN_TEMPLATE
set -u
runner=$1 broken=$2
# The newest host only: the older hosts' reruns repeat the same bodies.
out=$("$runner" --driver "$broken" --allow-untrusted-plugin --option max_object_bytes=1048576 --exclude '*@*' 2>&1)
status=$?
fail() { echo "blocked_not_blamed: $*"; echo "$out"; exit 1; }
[ "$status" -eq 1 ] || fail "the run exited $status, not 1"
fails=$(echo "$out" | grep '^\[FAIL\]')
[ -n "$fails" ] || fail "no check failed"
echo "$fails" | while IFS= read -r line; do
    case "$line" in
    "[FAIL] data.miss.untouched: [R-ROW-4] a get of a key never put answered READY; R-ROW-4 wants MISS"*) ;;
    "[FAIL] data.absent-is-miss: [R-ROW-4] get of an absent key answered READY; R-ROW-4 wants MISS"*) ;;
    *) echo "a FAIL that does not name the broken behaviour's rule and answer: $line"; exit 1 ;;
    esac
done || fail "see above"
[ "$(echo "$fails" | wc -l)" -eq 2 ] || fail "expected the two checks of absence to fail"
echo "$out" | grep -E '^\[(CRASH|TIMEOUT|XPASS)\]' && fail "a check crashed, hung or passed unexpectedly"
blocked=$(echo "$out" | grep '^\[BLOCKED\]')
echo "$blocked" | grep -v '^\[BLOCKED\] [^ ]*: blocked by data.miss.untouched: a get of a key never put answered READY, so ' &&
    fail "a BLOCKED line that does not name the blocking check and what the driver answered"
# The checks that read a get of an absent key as evidence, once FAIL here.
for check in admission.empty-key admission.too-many-rows admission.hint-gated refusal.no-side-effects \
             results.paging-and-order lifetime.drain-waits-for-calls concurrency.one-key-two-drivers \
             concurrency.threads; do
    echo "$blocked" | grep -q "^\[BLOCKED\] $check: " || fail "$check is not BLOCKED"
done
echo "$out" | grep -qE ", [1-9][0-9]* blocked$" || fail "the summary does not count the blocked checks"
echo "$out" | grep -qx "NOT CONFORMANT" || fail "the verdict is not NOT CONFORMANT"
echo "one diagnosis: $(echo "$blocked" | wc -l) checks blocked, $(echo "$fails" | wc -l) failed naming R-ROW-4"
