#!/usr/bin/env bash
# tests/support/scratch.sh: scratch_parent picks /dev/shm only where it is
# a tmpfs with 8 GiB free, KVBLOB_TEST_SCRATCH first, else TMPDIR. The
# file system's type and free space come from stat and df: shims on PATH
# say what each case needs (a fake, and says so: this machine's /dev/shm
# is what it is).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/scratch.sh"
passed=0 failed=0
check() { if eval "$2"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $1"; fi; }
shims=$(mktemp -d)
trap 'rm -rf "$shims"' EXIT
# shim TYPE FREE_KIB: stat -f says TYPE, df says FREE_KIB available.
shim() {
  printf '#!/bin/sh\necho %s\n' "$1" > "$shims/stat"
  printf '#!/bin/sh\necho "Filesystem 1024-blocks Used Available Capacity Mounted"\necho "shm 0 0 %s 0%% /dev/shm"\n' "$2" > "$shims/df"
  chmod +x "$shims/stat" "$shims/df"
}
pick() { PATH="$shims:$PATH" TMPDIR=/tmp/elsewhere scratch_parent; }

# (Taken only where this machine's /dev/shm is writable too.)
room=/dev/shm
[ -w /dev/shm ] || room=/tmp/elsewhere
shim tmpfs $((8 * 1024 * 1024))
check "a tmpfs with 8 GiB free is taken" '[ "$(pick)" = "$room" ]'
shim tmpfs $((8 * 1024 * 1024 - 1))
check "a tmpfs with less is not" '[ "$(pick)" = /tmp/elsewhere ]'
shim ext2/ext3 $((64 * 1024 * 1024))
check "a disk at /dev/shm is not" '[ "$(pick)" = /tmp/elsewhere ]'
shim tmpfs $((64 * 1024 * 1024))
check "KVBLOB_TEST_SCRATCH comes first" '[ "$(KVBLOB_TEST_SCRATCH=/srv/scratch pick)" = /srv/scratch ]'
shim ext2/ext3 1
unset_tmpdir() { PATH="$shims:$PATH" env -u TMPDIR bash -c '. "$1"; scratch_parent' _ "$here/scratch.sh"; }
check "TMPDIR unset means /tmp" '[ "$(unset_tmpdir)" = /tmp ]'
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
