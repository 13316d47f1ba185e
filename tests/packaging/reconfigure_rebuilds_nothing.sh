#!/usr/bin/env bash
# Configuring an unchanged tree again must not make the next build compile
# anything: sources the configure step generates (the pairing drivers, the
# ABI header probes, test configs) are written only when their text changes
# (file(CONFIGURE), not file(WRITE)), or a vendor's second `cmake -S . -B
# build` recompiles a hundred objects for nothing. Checked in a scratch
# build folder of its own, configured twice: the generated files' times
# must not move.
# Usage: reconfigure_rebuilds_nothing.sh SOURCE_DIR
set -euo pipefail
src=$1
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
generated() {
  find "$scratch" -path "$scratch/CMakeFiles" -prune -o -type f \
    \( -name '*.c' -o -name '*.cpp' -o -name '*.sorted' -o -name '*.toml' \) -printf '%p %T@\n' | sort
}
cmake -S "$src" -B "$scratch" >/dev/null
before=$(generated)
[ -n "$before" ] || { echo "FAIL: the configure step generated no source to watch"; exit 1; }
cmake -S "$src" -B "$scratch" >/dev/null
after=$(generated)
if [ "$before" != "$after" ]; then
  echo "FAIL: configuring again rewrote $(diff <(echo "$before") <(echo "$after") | grep -c '^>') generated file(s), e.g.:"
  diff <(echo "$before") <(echo "$after") | grep '^>' | head -5
  exit 1
fi
echo "configuring again left all $(echo "$before" | wc -l) generated sources untouched"
