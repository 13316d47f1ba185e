#!/usr/bin/env python3
"""The include arrows of docs/architecture.md, checked.

Every #include "..." (and #include <kvblob/...>) in the project's own rooms is
resolved to the file it names, the way the build resolves it (beside the
including file first, then each include folder), and the arrow from the
including room to the included room must be one docs/architecture.md allows.
An include that resolves to no file of the project (a system or third-party
header) is not an arrow.

    include_arrows.py SOURCE_DIR    check the tree; exit 1 naming each
                                    forbidden arrow (file:line, rooms, rule)
    include_arrows.py --self-test   plant forbidden arrows in a scratch tree
                                    and check that each is reported
"""
import os
import re
import sys
import tempfile

# Room of a file: the longest matching path prefix. Files in no room (the
# build folder, scripts, docs) are not checked.
ROOMS = [
    ("abi/", "abi"),
    ("host/include/", "host-api"),
    ("host/internal/", "host-internal"),
    ("host/src/loading/", "host-loading"),
    ("host/src/guarding/", "host-guarding"),
    ("host/src/engine_helpers/", "host-engine-helpers"),
    ("host/src/metrics/", "host-metrics"),
    ("host/src/shared/", "host-shared"),
    ("host/python/", "python"),
    ("plugins/support/", "support"),
    ("plugins/tiered/", "tiered"),
    ("plugins/", "drivers"),
    ("conformance-runner/", "runner"),
    ("bench/", "bench"),
    ("tools/common/", "tools-common"),
    ("tools/", "tools"),
    ("examples/", "examples"),
]

# Where the build finds a quoted or <kvblob/...> include, after the including
# file's own folder (the targets' include directories).
INCLUDE_DIRS = [
    "abi/include",
    "host/include",
    "host/internal",
    "host/src",
    "plugins/support/include",
    "tools/common/include",
    "plugins/mooncake",
]

HOST_INSIDE = ["host-loading", "host-guarding", "host-engine-helpers", "host-metrics", "host-shared"]

# What each room may include besides itself (docs/architecture.md, "Arrows").
ALLOWED = {
    "abi": [],
    "host-api": ["abi"],
    "host-internal": ["abi"],
    "host-shared": ["abi", "host-api", "host-internal"],
    "host-engine-helpers": ["abi", "host-api", "host-internal"],
    "host-guarding": ["abi", "host-api", "host-internal", "host-metrics"],
    "host-metrics": ["abi", "host-api", "host-internal"],
    "host-loading": ["abi", "host-api", "host-internal", "host-guarding"],
    "python": ["abi", "host-api"],
    "support": ["abi"],
    "drivers": ["abi", "support"],
    # The tiered driver loads its tiers through the host library, as an
    # engine does, so that each tier gets the loader's checks.
    "tiered": ["abi", "support", "host-api"],
    "tools-common": ["abi", "host-api", "host-internal"],
    "tools": ["abi", "host-api", "host-internal", "tools-common"],
    "runner": ["abi", "host-api", "host-internal", "tools-common"],
    "bench": ["abi", "host-api", "host-internal", "tools-common"],
    "examples": ["abi", "host-api", "tools-common"],
}

# Single files a room may include outside its arrows, and why.
EXCEPTIONS = {
    # A driver keeps the object its code lives in loaded, and pins it when
    # it cannot be closed.
    ("host-guarding", "host/src/loading/library.hpp"),
    # kvblob-bench's Mooncake baseline speaks to Mooncake's C API through
    # the loader the driver uses, so both measure the same library.
    ("bench", "plugins/mooncake/store_api.hpp"),
    # kvblob-bench --checksums times the drivers' CRC32C paths themselves:
    # a measurement of that code, not a check that must not share it.
    ("bench", "plugins/support/include/kvblob/support/crc32c.hpp"),
}

# Headers that must not be included from where they are named: the host's
# internal headers name the small types of kvblob/host/types.hpp, never the
# classes of the API they implement.
FORBIDDEN_FROM_HEADERS = {
    "host-loading": ["host/include/kvblob/host/driver.hpp", "host/include/kvblob/host/plugin.hpp"],
    "host-guarding": ["host/include/kvblob/host/driver.hpp", "host/include/kvblob/host/plugin.hpp"],
    "host-engine-helpers": ["host/include/kvblob/host/driver.hpp", "host/include/kvblob/host/plugin.hpp"],
    "host-shared": ["host/include/kvblob/host/driver.hpp", "host/include/kvblob/host/plugin.hpp"],
}

SOURCE_EXT = (".c", ".h", ".cpp", ".hpp", ".cc")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def room_of(rel):
    for prefix, room in ROOMS:
        if rel.startswith(prefix):
            return room
    return None


def resolve(root, including, name, quoted):
    candidates = []
    if quoted:
        candidates.append(os.path.join(os.path.dirname(including), name))
    elif not name.startswith("kvblob/"):
        return None
    candidates += [os.path.join(d, name) for d in INCLUDE_DIRS]
    for c in candidates:
        path = os.path.normpath(c)
        if os.path.isfile(os.path.join(root, path)):
            return path
    return None


def check(root):
    problems = []
    for top in sorted({p.split("/")[0] for p, _ in ROOMS}):
        for folder, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith(SOURCE_EXT):
                    continue
                rel = os.path.relpath(os.path.join(folder, f), root)
                room = room_of(rel)
                if room is None:
                    continue
                with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as text:
                    for n, line in enumerate(text, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target = resolve(root, rel, m.group(2), m.group(1) == '"')
                        if target is None:
                            continue
                        to = room_of(target)
                        where = f"{rel}:{n}: {room} -> {to} ({target})"
                        if rel.endswith((".h", ".hpp")) and target in FORBIDDEN_FROM_HEADERS.get(room, []):
                            problems.append(f"{where}: an internal header of the host includes the API it "
                                            "implements; name the types from kvblob/host/types.hpp")
                        elif to is None or to == room or to in ALLOWED[room] or (room, target) in EXCEPTIONS:
                            continue
                        else:
                            problems.append(f"{where}: {room} may include only "
                                            f"{', '.join(ALLOWED[room]) or 'itself'} (docs/architecture.md)")
    return problems


def self_test():
    plants = {
        # Each a forbidden arrow, and the room it comes from.
        "plugins/memory/bad.cpp": '#include "kvblob/host/plugin.hpp"\n',
        "plugins/support/src/bad.cpp": '#include "kvblob/cli/quantities.hpp"\n',
        "conformance-runner/src/bad.cpp": '#include "kvblob/support/device_copy.hpp"\n',
        "host/src/guarding/bad.hpp": '#include "kvblob/host/driver.hpp"\n',
        "host/src/shared/bad.cpp": '#include "loading/plugin_file.hpp"\n',
        "host/include/kvblob/host/bad.hpp": '#include "kvblob/host/json.hpp"\n',
    }
    allowed = {
        "host/src/loading/good.cpp": '#include "guarding/driver_core.hpp"\n#include <vector>\n',
        "conformance-runner/src/good.cpp": '#include "kvblob/cli/quantities.hpp"\n#include "kvblob/host/plugin.hpp"\n',
        "host/src/guarding/good.cpp": '#include "kvblob/host/driver.hpp"\n',
        "plugins/tiered/good.cpp": '#include "kvblob/host/plugin.hpp"\n',
    }
    targets = ["host/include/kvblob/host/plugin.hpp", "host/include/kvblob/host/driver.hpp",
               "host/internal/kvblob/host/json.hpp", "tools/common/include/kvblob/cli/quantities.hpp",
               "plugins/support/include/kvblob/support/device_copy.hpp", "host/src/loading/plugin_file.hpp",
               "host/src/guarding/driver_core.hpp"]
    with tempfile.TemporaryDirectory() as root:
        for rel, text in list(plants.items()) + list(allowed.items()) + [(t, "") for t in targets]:
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w") as f:
                f.write(text)
        problems = check(root)
    reported = {p.split(":")[0] for p in problems}
    missed = sorted(set(plants) - reported)
    wrong = sorted(reported - set(plants))
    for p in problems:
        print("planted, reported:", p)
    if missed or wrong:
        print("self-test FAILED: missed", missed, "reported wrongly", wrong)
        return 1
    print(f"self-test passed: {len(plants)} planted arrows reported, {len(allowed)} allowed ones not")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    problems = check(sys.argv[1])
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} include(s) break the arrows of docs/architecture.md")
        return 1
    print("every include follows the arrows of docs/architecture.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
