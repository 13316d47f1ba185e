#!/usr/bin/env bash
# scripts/build-mooncake refuses what it must, with its exit codes: an
# unknown argument (2), sources that are absent (3), a tarball whose digest
# is not the one SHA256SUMS pins (4, naming the file). Nothing is built.
set -euo pipefail
script=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/kvblob-build-mooncake.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

set +e
"$script" --frobnicate >/dev/null 2>&1; [ $? = 2 ] || fail "an unknown argument did not exit 2"
out=$(KVBLOB_THIRDPARTY="$work/none" "$script" 2>&1); rc=$?
[ $rc = 3 ] || fail "absent sources exited $rc, not 3"
echo "$out" | grep -q "sources absent: $work/none" || fail "absent sources not named: $out"
mkdir "$work/tp"
echo "not mooncake" >"$work/tp/mooncake-0.3.12.post1.tar.gz"
echo "not ylt" >"$work/tp/yalantinglibs-6a0e067d.tar.gz"
printf '%064d  mooncake-0.3.12.post1.tar.gz\n%064d  yalantinglibs-6a0e067d.tar.gz\n' 1 2 >"$work/tp/SHA256SUMS"
out=$(KVBLOB_THIRDPARTY="$work/tp" KVBLOB_MOONCAKE_PREFIX="$work/prefix" "$script" 2>&1); rc=$?
[ $rc = 4 ] || fail "a tampered tarball exited $rc, not 4"
echo "$out" | grep -q "mooncake-0.3.12.post1.tar.gz: digest" || fail "the tampered tarball not named: $out"
[ ! -e "$work/prefix" ] || fail "a prefix was made from unverified sources"
echo "build-mooncake refuses: 3 passed, 0 failed"
