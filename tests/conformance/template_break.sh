#!/bin/sh
# A realistic break of the driver template (tests/conformance/template_breaks.cmake),
# run as a vendor would (--strict, --json, --junit): the first FAIL names the
# rule broken, with the figures a vendor needs to find the line; no FAIL
# names a rule that was not broken; --json's failed_rule and --junit's
# failure type are the rule each failure names.
# Usage: template_break.sh CASE RUNNER BROKEN_TEMPLATE
set -u
case_name=$1 runner=$2 broken=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "template_break.sh $case_name: $*"; echo "$out"; exit 1; }
# Every FAIL line must match one of the patterns given (the broken rule).
only_fails() {
    echo "$fails" | while IFS= read -r line; do
        ok=no
        for pattern in "$@"; do
            case "$line" in $pattern) ok=yes ;; esac
        done
        [ "$ok" = yes ] || { echo "a FAIL that names no broken rule: $line"; exit 1; }
    done || fail "see above"
}
filter=
[ "$case_name" = drain_stuck ] && filter="--filter lifetime.drain-concurrent --timeout 20"
# shellcheck disable=SC2086
out=$("$runner" --driver "$broken" --allow-untrusted-plugin --option max_object_bytes=1048576 --strict \
      --json "$work/report.json" --junit "$work/report.xml" $filter 2>&1)
status=$?
[ "$status" -eq 1 ] || fail "the run exited $status, not 1"
fails=$(echo "$out" | grep '^\[FAIL\]')
first=$(echo "$fails" | head -n 1)
[ -n "$first" ] || fail "no check failed"
echo "$out" | grep -E '^\[(CRASH|TIMEOUT|XPASS)\]' && fail "a check crashed, timed out or passed unexpectedly"
echo "$out" | grep -q 'left behind: unknown' && fail "a check's leftovers are unknown: its cleanup did not run"
case "$case_name" in
short_keys)
    # Keys over 128 bytes are refused alone, within max_key_bytes (256).
    case "$first" in
    "[FAIL] data.key-space: [R-ADM-10] put of "*" distinct keys, each within max_key_bytes (256), was refused"*"alone, keys of 251, 252, 255, 256 bytes were refused too"*"keys of up to "*" bytes were admitted before: refused within every declared limit") ;;
    *) fail "the first FAIL is not R-ADM-10 with the key lengths: $first" ;;
    esac
    only_fails "\[FAIL\] *: \[R-ADM-10\] *" ;;
put_4k)
    # A put of more than 4096 bytes keeps 4096: its get is FAULT.
    case "$first" in
    "[FAIL] data.round-trip.many-regions: [R-ROW-1] get row 0 of 8192 bytes is FAULT, not READY, after its put answered READY (the driver says of the row: 'stored object has another size')") ;;
    *) fail "the first FAIL does not say the size, the put's answer and the driver's message: $first" ;;
    esac
    only_fails "\[FAIL\] data.round-trip.*: \[R-ROW-1\] get row * is FAULT, not READY, after its put answered READY*"
    for check in concurrency.two-drivers concurrency.one-key-two-drivers; do
        echo "$out" | grep -q "^\[BLOCKED\] $check: blocked by the data.round-trip checks: a put of one row of [0-9]* bytes answered READY and a get of it on the same driver answered FAULT (the driver says of the row: 'stored object has another size')" ||
            fail "$check is not BLOCKED by the round trip"
    done ;;
get_overrun)
    # A get writes a NUL right after its span.
    case "$first" in
    "[FAIL] data.round-trip.one-row: [R-REG-3] get row 0: the driver wrote the byte at offset 4096 of its 4096-byte span, 1 past its end (guarded memory)") ;;
    *) fail "the first FAIL does not name the kind, row and offset: $first" ;;
    esac
    only_fails "\[FAIL\] *: \[R-REG-3\] *"
    echo "$out" | grep -q '^\[FAIL\] results.paging-and-order: \[R-REG-3\] get row 0 (key m, READY): the driver wrote the byte at offset 512 of its 512-byte span, 1 past its end' ||
        fail "results.paging-and-order does not blame row 0's overrun" ;;
drain_stuck)
    # A deadlock asks the machine for no CPU: FAIL, not TIMEOUT (machine starved).
    case "$first" in
    "[FAIL] lifetime.drain-concurrent: [R-DRN-1] drain answered KVBLOB_E_TIMEOUT after 10000.0 ms (in "*" s of waiting, the check's process ran "*" of CPU and its threads waited "*" for one (the longest "*) ;;
    *) fail "the deadlock is not a FAIL of R-DRN-1 with the wait's figures: $first" ;;
    esac
    only_fails "\[FAIL\] lifetime.drain-concurrent: \[R-DRN-1\] *" ;;
*) fail "unknown case" ;;
esac
# --json: each failure's failed_rule is the rule its message names; --junit
# gives it as the failure's type.
/usr/bin/python3 - "$work/report.json" "$work/report.xml" <<'EOF' || fail "--json or --junit disagrees with the text"
import json, re, sys
import xml.etree.ElementTree as ET
rows = [json.loads(line) for line in open(sys.argv[1]) if line.startswith('{"id"')]
failed = [r for r in rows if r["status"] == "FAIL"]
assert failed, "no FAIL in the JSON report"
types = {case.get("name"): case.find("failure") for case in ET.parse(sys.argv[2]).getroot().iter("testcase")}
for r in failed:
    named = re.match(r"\[(R-[A-Z]+-[0-9]+)\] ", r["message"]).group(1)
    if r["failed_rule"] != named:
        sys.exit(f'{r["id"]}: failed_rule {r["failed_rule"]}, the message names {named}')
    if types[r["id"]] is None or types[r["id"]].get("type") != named:
        sys.exit(f'{r["id"]}: the JUnit failure type is not {named}')
for r in rows:
    if r["status"] != "FAIL" and r["failed_rule"] is not None:
        sys.exit(f'{r["id"]} is {r["status"]} with failed_rule {r["failed_rule"]}')
print(f"json and junit: {len(failed)} failures, each with its own rule")
EOF
echo "template_break.sh $case_name: first FAIL $first"
