#!/usr/bin/env bash
# The Debian packages as a user meets them: cpack builds them from this build
# folder, each declares what it depends on, dpkg-deb unpacks them into a
# scratch root (no root rights, the system untouched), and a driver and an
# engine build out of tree against that root (tests/out_of_tree/run.sh).
# Usage: run.sh BUILD_DIR SOURCE_DIR DRIVER_SOURCE
set -euo pipefail
build=$1 src=$2 driver_source=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

(cd "$build" && cpack -G DEB -B "$work/packages" >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log"; fail "cpack"; }
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
deb() { ls "$work"/packages/"$1"_*.deb 2>/dev/null | head -1; }
depends() { dpkg-deb -f "$1" Depends; }

for p in libkvblob-host0 kvblob-dev kvblob-tools kvblob-drivers; do
  [ -n "$(deb $p)" ] || fail "no $p package among: $(ls "$work/packages")"
  echo "$p: $(dpkg-deb -f "$(deb $p)" Version) Depends: $(depends "$(deb $p)")"
done
# What each package must declare.
depends "$(deb libkvblob-host0)" | grep -q 'libstdc++6' || fail "libkvblob-host0 does not depend on libstdc++6"
if depends "$(deb libkvblob-host0)" | grep -q 'libssl3'; then
  fail "libkvblob-host0 depends on libssl3, but its SHA-256 is its own (host/src/sha256/)"
fi
depends "$(deb kvblob-dev)" | grep -q "libkvblob-host0 (= $version)" || fail "kvblob-dev does not depend on libkvblob-host0 (= $version)"
depends "$(deb kvblob-dev)" | grep -q 'cmake' || fail "kvblob-dev does not depend on cmake"
depends "$(deb kvblob-tools)" | grep -q "libkvblob-host0 (= $version)" || fail "kvblob-tools does not depend on libkvblob-host0"
depends "$(deb kvblob-drivers)" | grep -q 'libhiredis' || fail "kvblob-drivers does not depend on hiredis (the redis driver)"
if [ -n "$(deb python3-kvblob)" ]; then
  depends "$(deb python3-kvblob)" | grep -q "python3" || fail "python3-kvblob does not depend on python3"
  # kvblob.load('memory') (the engine guide's Python) needs a bundled driver.
  dpkg-deb -f "$(deb python3-kvblob)" Recommends | grep -q kvblob-drivers ||
    fail "python3-kvblob does not recommend kvblob-drivers"
fi
# kvblob-dev builds drivers: it brings CMake, a C and a C++ compiler, the C
# library's headers and a build tool, even where recommends are not
# installed (scripts/package-install-check installs it so and builds).
dev_depends=$(depends "$(deb kvblob-dev)")
for need in cmake c-compiler c++-compiler libc-dev make; do
  echo "$dev_depends" | grep -q "$need" || fail "kvblob-dev does not depend on $need: $dev_depends"
done
# The copyright says what is compiled in and what is linked: toml++ is
# linked (the host library's NEEDED), so it is not among the compiled-in.
if [ -n "$(deb libkvblob-host0)" ]; then
  dpkg-deb -x "$(deb libkvblob-host0)" "$work/host-root"
  host_lib=$(find "$work/host-root" -name 'libkvblob_host.so.0' | head -1)
  if objdump -p "$host_lib" | grep -q 'NEEDED.*libtomlplusplus'; then
    grep -q 'toml++ is not compiled in' "$src/cmake/debian-copyright" ||
      fail "libkvblob_host links toml++; cmake/debian-copyright does not say so"
  fi
fi
# Each file in one package only, each package only its own kind of file.
# Libraries in Debian's multiarch folder (the drivers in kvblob/ beside the
# host library, where the loader looks), documents in each package's own
# /usr/share/doc/<package>/.
contents() { dpkg-deb -c "$1" | awk '{print $6}' | grep -v '/$'; }
libdir=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)
contents "$(deb libkvblob-host0)" | grep -qx ".$libdir/libkvblob_host.so.0" ||
  fail "no host library in $libdir in libkvblob-host0 (a build folder configured with CMAKE_INSTALL_LIBDIR=lib?): $(contents "$(deb libkvblob-host0)" | paste -sd' ')"
contents "$(deb kvblob-dev)" | grep -qx ".$libdir/cmake/kvblob/kvblobConfig.cmake" || fail "no CMake package in $libdir in kvblob-dev"
contents "$(deb kvblob-dev)" | grep -q '/usr/include/kvblob/kvblob.h' || fail "no ABI header in kvblob-dev"
contents "$(deb kvblob-dev)" | grep -qx './usr/share/doc/kvblob-dev/contract.md' || fail "no contract in /usr/share/doc/kvblob-dev"
contents "$(deb kvblob-dev)" | grep -q '/usr/share/kvblob/minimal_driver/minimal_driver.c' || fail "no template in kvblob-dev"
contents "$(deb kvblob-drivers)" | grep -qx ".$libdir/kvblob/libkvblob_memory.so" || fail "no memory driver in $libdir/kvblob in kvblob-drivers"
for d in "$work"/packages/*.deb; do
  p=$(dpkg-deb -f "$d" Package)
  outside=$(contents "$d" | grep '^\./usr/share/doc/' | grep -v "^\./usr/share/doc/$p/" || true)
  [ -z "$outside" ] || fail "$p has documents outside /usr/share/doc/$p: $outside"
  dpkg-deb -f "$d" Maintainer | grep -qv '@invalid' || fail "$p's Maintainer is not an address: $(dpkg-deb -f "$d" Maintainer)"
done
contents "$(deb kvblob-tools)" | grep -q '/usr/share/kvblob/examples/engine/memory.toml' ||
  fail "no example engine config in kvblob-tools (the README's command 1 runs it)"
contents "$(deb kvblob-tools)" | grep -q '/usr/share/kvblob/examples/engine/tiered.toml' ||
  fail "no tiered example engine config in kvblob-tools (docs/engine-guide.md points at it)"
if command -v help2man >/dev/null; then
  for tool in kvblob-info kvblob-conformance kvblob-soak kvblob-bench kvblob-engine; do
    contents "$(deb kvblob-tools)" | grep -q "/usr/share/man/man1/$tool.1.gz" || fail "no manual page for $tool"
  done
fi
# Each package says what may be done with it, in Debian's place; the project
# has chosen no licence yet, and the file says so rather than name one.
for p in libkvblob-host0 kvblob-dev kvblob-tools kvblob-drivers python3-kvblob; do
  [ -n "$(deb $p)" ] || continue
  contents "$(deb $p)" | grep -qx "./usr/share/doc/$p/copyright" || fail "no /usr/share/doc/$p/copyright in $p"
done
# The operator guide's list of kvblob-tools' programs (its "Packages") is the package's.
readme_tools=$(tr '\n' ' ' < "$src/docs/operator-guide.md" | grep -o '`kvblob-tools` ([^)]*' | sed 's/^[^(]*(//' | grep -o '`kvblob-[a-z-]*`' | tr -d '`' | sort | paste -sd' ')
packaged_tools=$(contents "$(deb kvblob-tools)" | grep '/usr/bin/' | sed 's|.*/||' | sort | paste -sd' ')
[ -n "$readme_tools" ] && [ "$readme_tools" = "$packaged_tools" ] ||
  fail "docs/operator-guide.md says kvblob-tools holds '$readme_tools'; it holds '$packaged_tools'"
dupes=$(for d in "$work"/packages/*.deb; do contents "$d"; done | sort | uniq -d)
[ -z "$dupes" ] || fail "files in two packages: $dupes"

root="$work/root"
for d in "$work"/packages/*.deb; do dpkg-deb -x "$d" "$root"; done
"$root/usr/bin/kvblob-info" memory | head -n 2
grep -q "has not chosen a licence yet" "$root/usr/share/doc/kvblob-tools/copyright" ||
  fail "the copyright file does not say that no licence is chosen yet"
# The installed headers are the public API alone: each compiles on its own
# from the package, declares its names in namespace kvblob, and none of the
# host's internal headers ships.
for h in json sha256 key_codec; do
  [ ! -e "$root/usr/include/kvblob/host/$h.hpp" ] || fail "internal header kvblob/host/$h.hpp is installed"
done
for h in "$root"/usr/include/kvblob/host/*.hpp; do
  grep -q '^namespace kvblob' "$h" || fail "$h declares nothing in namespace kvblob"
  echo "#include <kvblob/host/$(basename "$h")>" | c++ -std=c++20 -fsyntax-only -x c++ -I"$root/usr/include" - ||
    fail "$h does not compile on its own from the package"
done
if [ -n "$(deb python3-kvblob)" ]; then
  PYTHONPATH="$root/usr/lib/python3/dist-packages" /usr/bin/python3 -c \
    'import kvblob, sys; print("python module from", kvblob.__file__)' | grep -q "$root" || fail "python3-kvblob does not import"
fi
"$src/tests/out_of_tree/run.sh" "$build" "$src" "$driver_source" "$root/usr"
