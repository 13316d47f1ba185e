#!/bin/sh
# tests/runpath/check.sh over an install of the build tree into a scratch prefix.
# Usage: installed.sh CMAKE BUILD_DIR
set -u
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
"$1" --install "$2" --prefix "$prefix" > "$prefix.log" 2>&1 || { cat "$prefix.log"; rm -f "$prefix.log"; exit 1; }
rm -f "$prefix.log"
"$(dirname "$0")/check.sh" "$prefix"
