#!/usr/bin/env bash
# Debian's package checker on the packages as cpack builds them from this
# build folder: lintian must report no error on any of them. Its warnings
# are printed (with the reason for each that cannot be fixed, from
# tests/packaging/lintian-warnings), and a warning not listed there fails
# too, so a new one is seen and either fixed or explained.
# Exit 77 (ctest: skipped) where lintian is not installed (Debian: lintian,
# among scripts/install-deps' packages).
# Usage: lintian.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
if ! command -v lintian >/dev/null; then
  echo "SKIP: lintian is not installed (Debian: lintian; scripts/install-deps installs it)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

(cd "$build" && cpack -G DEB -B "$work/packages" >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log"; fail "cpack"; }
debs=("$work"/packages/*.deb)
[ -e "${debs[0]}" ] || fail "cpack made no package"
echo "lintian $(lintian --version | awk '{print $2}') on: $(cd "$work/packages" && ls ./*.deb | sed 's|^\./||' | paste -sd' ')"

# --tag-display-limit 0: every instance; --display-info: the I: tags too,
# printed for the reader, never failing the test. Lintian's own exit status
# is not used: it depends on its --fail-on default, and the tags say more.
lintian --tag-display-limit 0 --display-info "${debs[@]}" >"$work/lintian.txt" 2>&1 || true
cat "$work/lintian.txt"

# "E: package: tag [context]" or "W: ...": the severity, package and tag.
errors=$(grep -E '^E: ' "$work/lintian.txt" || true)
known=$src/tests/packaging/lintian-warnings
unexplained=""
while read -r line; do
  [ -n "$line" ] || continue
  tag=$(awk '{print $3}' <<<"$line")
  package=$(awk '{print $2}' <<<"$line" | tr -d ':')
  grep -Eq "^($package|\*) $tag( |$)" "$known" || unexplained+="$line"$'\n'
done < <(grep -E '^W: ' "$work/lintian.txt" || true)
[ -z "$errors" ] || fail "lintian reports errors:"$'\n'"$errors"
[ -z "$unexplained" ] || fail "lintian warnings not explained in tests/packaging/lintian-warnings:"$'\n'"$unexplained"
grep -q '^[EW]: ' "$work/lintian.txt" || echo "lintian: no error and no warning on ${#debs[@]} packages"
grep -q '^W: ' "$work/lintian.txt" && echo "lintian: no error on ${#debs[@]} packages; every warning explained"
exit 0
