#!/usr/bin/env bash
# Builds the out-of-tree project (a vendor's driver against kvblob::abi, an
# engine against kvblob::host) against an installed kvblob with
# find_package(kvblob), loads the result, then builds the installed driver
# template and runs the installed battery on it.
# Usage: run.sh BUILD_DIR SOURCE_DIR DRIVER_SOURCE [PREFIX]
# Without PREFIX, this build is installed into a scratch prefix first; with
# it (tests/packaging/run.sh: the unpacked Debian packages), that install is
# used as it is.
set -euo pipefail
build=$1 src=$2 driver_source=$3 prefix=${4:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -z "$prefix" ]; then
  prefix="$work/prefix"
  cmake --install "$build" --prefix "$prefix" >/dev/null
fi
cmake -S "$src/tests/out_of_tree" -B "$work/oot" -DCMAKE_PREFIX_PATH="$prefix" \
      -DDRIVER_SOURCE="$driver_source" >/dev/null
cmake --build "$work/oot" -j2 >/dev/null
so="$work/oot/libkvblob_fixture.so"
exported=$(nm -D --defined-only "$so" | awk '{print $3}' | sed 's/@.*//' | grep -v '^KVBLOB_1$' || true)
[ "$exported" = "kvblob_plugin_negotiate" ] || { echo "exports: $exported"; exit 1; }
"$prefix/bin/kvblob-info" "$so"
"$work/oot/vendor_engine" "$so"

# The vendor's template, copied out of the install as a vendor would, builds
# against the installed package and passes the installed battery.
cp -r "$prefix/share/kvblob/minimal_driver" "$work/template"
cmake -S "$work/template" -B "$work/template/build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/template/build" -j2 >/dev/null
"$prefix/bin/kvblob-conformance" --driver "$work/template/build/libkvblob_minimal.so" | tail -n 2
