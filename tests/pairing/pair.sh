#!/bin/sh
# Proves one conformance check bites: it passes against the reference driver
# and FAILs against the broken driver made for it, naming one of its rules.
# Usage: pair.sh RUNNER REFERENCE BROKEN CHECK [key=value ...]
set -u
runner=$1 reference=$2 broken=$3 check=$4
shift 4
options=""
for o in "$@"; do options="$options --option $o"; done

rules=$("$runner" --list --json | grep "\"id\":\"$check\"" | grep -o '"R-[A-Z]*-[0-9]*"' | tr -d '"')
[ -n "$rules" ] || { echo "no check named $check"; exit 1; }

# shellcheck disable=SC2086
reference_run=$("$runner" --driver "$reference" $options --filter "$check" 2>&1)
# A check that needs a CUDA device cannot be proven on a machine without one:
# the runner cannot exercise it, or the reference driver (which declares
# device_memory only where it sees a device) does not declare it.
if echo "$reference_run" | grep -qE "^\[NOT_EXERCISED\] $check: no CUDA device|^\[NOT_SUPPORTED\] device\.[^ ]*: needs capability device_memory"; then
    echo "skipped: $(echo "$reference_run" | grep -E "^\[NOT_(EXERCISED|SUPPORTED)\] $check")"
    exit 77
fi
echo "$reference_run" | grep -qE "^\[PASS\] $check(: |$)" || {
    echo "the reference driver does not pass $check:"
    echo "$reference_run"
    exit 1
}
# A check that bites on a race (two threads meeting in a window) may miss
# it in one run on a busy machine: the broken driver gets three runs, as the
# mutation campaign's survivors do, and must FAIL in one of them.
for _ in 1 2 3; do
    # shellcheck disable=SC2086
    broken_run=$("$runner" --driver "$broken" $options --filter "$check" 2>&1)
    status=$?
    failure=$(echo "$broken_run" | grep "^\[FAIL\] $check: ")
    [ -n "$failure" ] && [ "$status" -eq 1 ] && break
done
if [ -z "$failure" ] || [ "$status" -ne 1 ]; then
    echo "the broken driver is not FAIL for $check in three runs (the last exited $status):"
    echo "$broken_run"
    exit 1
fi
for rule in $rules; do
    case "$failure" in *"[$rule]"*) echo "bites: $failure"; exit 0 ;; esac
done
echo "the failure names none of the check's rules ($rules): $failure"
exit 1
