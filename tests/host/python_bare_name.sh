#!/bin/sh
# kvblob.load(bare_name, sha256=...) from Python is judged like a path: a
# world-writable libevil.so on LD_LIBRARY_PATH is refused, pinned or not.
# Usage: python_bare_name.sh PYTHON PYTHONPATH FIXTURE_PLUGIN
set -u
python=$1 pythonpath=$2 fixture=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
chmod 755 "$dir"
cp "$fixture" "$dir/libevil.so"
chmod 666 "$dir/libevil.so"
fail() { echo "FAILED: $1"; echo "$out"; exit 1; }
try() {
  LD_LIBRARY_PATH="$dir" PYTHONPATH="$pythonpath" "$python" -c "
import kvblob, sys
try:
    kvblob.load('libevil.so'$1)
except Exception as e:
    print(type(e).__name__, e)
    sys.exit(0)
print('LOADED')
sys.exit(1)
" 2>&1
}
out=$(try ", sha256='$(printf '0%.0s' $(seq 64))'") || fail "a pinned bare name loaded"
echo "$out" | grep -q "$dir/libevil.so" || fail "the refusal does not name the file"
echo "$out" | grep -q 'stage open' || fail "the refusal does not name the stage"
echo "$out" | grep -q '\[R-LOAD-11\]' || fail "no R-LOAD-11 for the wrong digest"
echo "$out" | grep -q '\[R-LOAD-10\]' || fail "no R-LOAD-10 for the world-writable file"
out=$(try "") || fail "a world-writable bare name loaded"
echo "$out" | grep -q '\[R-LOAD-10\]' || fail "no R-LOAD-10 for the world-writable file"
echo "refused: a bare name pinned and unpinned"
