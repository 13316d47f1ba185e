#!/bin/sh
# The battery against the tiered driver, memory over file, on a fresh file
# root removed after:   tiered_battery.sh RUNNER [ARG...]
# Passes when the battery says CONFORMANT and no file is left under the root.
set -u
runner=$1
shift
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
trap 'exit 1' INT TERM
out=$("$runner" --driver tiered --option tier.0.driver=memory --option "tier.0.store=battery-$$" \
  --option tier.1.driver=file --option "tier.1.root=$root" "$@" 2>&1)
status=$?
echo "$out"
files=$(find "$root" -type f | wc -l)
[ "$files" -eq 0 ] || { echo "tiered_battery.sh: $files file(s) left under the file tier's root"; exit 1; }
[ "$status" -eq 0 ] || { echo "tiered_battery.sh: the battery exited $status"; exit 1; }
echo "$out" | grep -q '^CONFORMANT$' || { echo "tiered_battery.sh: no CONFORMANT verdict"; exit 1; }
echo "tiered_battery.sh: CONFORMANT, nothing left under the root"
