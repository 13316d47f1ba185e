#!/usr/bin/env bash
# Configuring an unchanged tree again must not make the next build compile
# anything: generated sources are written only when their text changes
# (file(CONFIGURE), not file(WRITE)), or a vendor's second `cmake -S . -B
# build` recompiles a hundred objects for nothing.
# Usage: reconfigure_rebuilds_nothing.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
cmake -S "$src" -B "$build" >/dev/null
# A dry run of the whole build: the commands make would run, none of them run.
planned=$(cmake --build "$build" -- -n 2>&1 | grep -E 'Building (C|CXX) object|Linking' || true)
if [ -n "$planned" ]; then
  echo "FAIL: after configuring again, the build would redo $(echo "$planned" | wc -l) step(s), e.g.:"
  echo "$planned" | head -5
  exit 1
fi
echo "configuring again left every object up to date"
