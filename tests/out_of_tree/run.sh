#!/usr/bin/env bash
# Installs this build into a scratch prefix, then configures and builds the
# out-of-tree project against it with find_package(kvblob), and loads the
# result. Usage: run.sh BUILD_DIR SOURCE_DIR DRIVER_SOURCE
set -euo pipefail
build=$1 src=$2 driver_source=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$src/tests/out_of_tree" -B "$work/oot" -DCMAKE_PREFIX_PATH="$work/prefix" \
      -DDRIVER_SOURCE="$driver_source" >/dev/null
cmake --build "$work/oot" -j2 >/dev/null
so="$work/oot/libkvblob_vendor.so"
exported=$(nm -D --defined-only "$so" | awk '{print $3}' | sed 's/@.*//' | grep -v '^KVBLOB_1$' || true)
[ "$exported" = "kvblob_plugin_negotiate" ] || { echo "exports: $exported"; exit 1; }
"$work/prefix/bin/kvblob-info" "$so"
"$work/oot/vendor_engine" "$so"

# The vendor's template, copied out of the tree as a vendor would, builds
# against the installed package and passes the installed battery.
cp -r "$src/examples/minimal_driver" "$work/template"
cmake -S "$work/template" -B "$work/template/build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/template/build" -j2 >/dev/null
"$work/prefix/bin/kvblob-conformance" --driver "$work/template/build/libkvblob_minimal.so" | tail -n 2
