#!/usr/bin/env bash
# The device-memory path on a machine with a CUDA GPU, in minutes: builds
# with the CUDA Toolkit, runs the host's memory-kind checks against the real
# driver, the battery's device checks against the memory and file drivers
# (and proves they bite, with their broken builds), and the device
# benchmark, and prints the figures. CI has no GPU; run this where one is.
#
#   scripts/gpu-check.sh [BUILD_DIR]     (default build-gpu)
#   scripts/gpu-check.sh --help
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
esac
build=${1:-build-gpu}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || {
  echo "gpu-check: no GPU visible (nvidia-smi failed)" >&2
  exit 1
}
cmake -S . -B "$build" -DKVBLOB_CUDA=ON -DKVBLOB_PYTHON=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" --target kvblob-conformance kvblob-bench kvblob_tests memory file \
  broken_drivers >/dev/null
echo "== host: memory kind at registration, real CUDA driver"
"$build/bin/kvblob_tests" "--test-case=memory kind*" "--test-case=DEVICE memory*"
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
for driver in memory "file --option root=$root"; do
  echo "== battery, device checks: $driver"
  # shellcheck disable=SC2086
  "$build/bin/kvblob-conformance" --driver $driver --filter 'device.*' --filter 'data.*'
done
echo "== the device checks bite (their broken builds fail them)"
ctest --test-dir "$build" -R 'pairing_device' --output-on-failure
echo "== device benchmark (baseline: cudaMemcpy)"
"$build/bin/kvblob-bench" --driver memory --memory device --sizes 64K,256K,1M,16M --ops put,get
"$build/bin/kvblob-bench" --driver file --option "root=$root" --memory device --sizes 256K,1M,16M --ops put,get
