#!/usr/bin/env python3
"""The include arrows of docs/architecture.md, checked.

Every #include "..." (and #include <kvblob/...>) in the project's own rooms is
resolved to the file it names, the way the build resolves it (beside the
including file first, then each include folder), and the arrow from the
including room to the included room must be one docs/architecture.md allows.
An include that resolves to no file of the project (a system or third-party
header) is not an arrow.

Two more rules hold: the rooms of the host include each other without a
cycle (what two rooms both need sits in a room below both), and a source of
host/src/ starts with the header it implements, found in one predictable
place: host/include/kvblob/host/ (the API), host/internal/kvblob/host/
(shared with the tools), or beside the source in its own room.

    include_arrows.py SOURCE_DIR    check the tree; exit 1 naming each
                                    forbidden arrow (file:line, rooms, rule),
                                    each cycle between host rooms, and each
                                    source whose header is elsewhere
    include_arrows.py --self-test   plant forbidden arrows in a scratch tree
                                    and check that each is reported
"""
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import tree  # noqa: E402 (after the line above)

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
    ("host/src/loaded_object/", "host-loaded-object"),
    ("host/src/sha256/", "host-sha256"),
    ("host/src/text/", "host-text"),
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
    "plugins/redis",
    "conformance-runner/src",
]

HOST_INSIDE = ["host-loading", "host-guarding", "host-engine-helpers", "host-metrics", "host-loaded-object",
               "host-sha256", "host-text"]

# What each room may include besides itself (docs/architecture.md, "Arrows").
ALLOWED = {
    "abi": [],
    "host-api": ["abi"],
    "host-internal": ["abi"],
    "host-text": ["abi", "host-api", "host-internal"],
    "host-sha256": ["abi", "host-api", "host-internal"],
    "host-loaded-object": [],
    "host-engine-helpers": ["abi", "host-api", "host-internal"],
    "host-guarding": ["abi", "host-api", "host-internal", "host-metrics", "host-loaded-object"],
    "host-metrics": ["abi", "host-api", "host-internal"],
    "host-loading": ["abi", "host-api", "host-internal", "host-guarding", "host-loaded-object"],
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
    # kvblob-bench's Mooncake baseline speaks to Mooncake's C API through
    # the loader the driver uses, so both measure the same library.
    ("bench", "plugins/mooncake/store_api.hpp"),
    # Its hiredis baseline logs in as the Redis driver does: the URL's
    # userinfo decoded by the driver's own header-only decoder.
    ("bench", "plugins/redis/percent_decoded.hpp"),
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
    "host-text": ["host/include/kvblob/host/driver.hpp", "host/include/kvblob/host/plugin.hpp"],
    "host-sha256": ["host/include/kvblob/host/driver.hpp", "host/include/kvblob/host/plugin.hpp"],
}

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


def project_includes(root, rel):
    """(line number, resolved path) of each include of rel that names a file of the project."""
    for n, line in enumerate(tree.read(root, rel).splitlines(), 1):
        m = INCLUDE.match(line)
        if m:
            target = resolve(root, rel, m.group(2), m.group(1) == '"')
            if target is not None:
                yield n, target


def check(root):
    problems = []
    arrows = {}  # (from room, to room) between host rooms -> first include making it
    tops = {p.split("/")[0] for p, _ in ROOMS}
    for rel in tree.source_files(root):
        room = room_of(rel)
        if room is None or rel.split(os.sep)[0] not in tops:
            continue
        for n, target in project_includes(root, rel):
            to = room_of(target)
            where = f"{rel}:{n}: {room} -> {to} ({target})"
            if room in HOST_INSIDE and to in HOST_INSIDE and to != room:
                arrows.setdefault((room, to), where)
            if rel.endswith((".h", ".hpp")) and target in FORBIDDEN_FROM_HEADERS.get(room, []):
                problems.append(f"{where}: an internal header of the host includes the API it "
                                "implements; name the types from kvblob/host/types.hpp")
            elif not (to is None or to == room or to in ALLOWED[room] or (room, target) in EXCEPTIONS):
                problems.append(f"{where}: {room} may include only "
                                f"{', '.join(ALLOWED[room]) or 'itself'} (docs/architecture.md)")
    # The table itself allows no cycle between host rooms, so none can be built.
    allowed = {(a, b): f"tests/architecture/include_arrows.py: ALLOWED lets {a} include {b}"
               for a in HOST_INSIDE for b in ALLOWED[a] if b in HOST_INSIDE}
    return problems + cycles(arrows) + cycles(allowed) + header_places(root)


def cycles(arrows):
    """Each cycle among the host rooms' include arrows, named by an include of each of its arrows."""
    found, seen = [], set()
    graph = {}
    for a, b in arrows:
        graph.setdefault(a, []).append(b)

    def walk(path):
        for nxt in sorted(graph.get(path[-1], [])):
            if nxt == path[0]:
                cycle = path + [nxt]
                key = frozenset(zip(cycle, cycle[1:]))
                if key not in seen:
                    seen.add(key)
                    steps = "; ".join(arrows[(a, b)] for a, b in zip(cycle, cycle[1:]))
                    first = arrows[(cycle[0], cycle[1])].split(": ")[0]  # file:line of its first arrow
                    found.append(f"{first}: a cycle between host rooms, {' -> '.join(cycle)} ({steps}): "
                                 "what both need belongs in a room below both")
            elif nxt not in path and nxt > path[0]:
                walk(path + [nxt])

    for start in sorted(graph):
        walk([start])
    return found


HEADER_PLACES = ("host/include/kvblob/host/", "host/internal/kvblob/host/")


def header_places(root):
    """A source of host/src/ whose first project include is not its header, in one of the three places."""
    problems = []
    for rel in tree.source_files(os.path.join(root, "host", "src"), (".cpp",)):
        rel = os.path.join("host", "src", rel)
        for n, target in project_includes(root, rel):  # the first one decides
            if not (target.startswith(HEADER_PLACES) or os.path.dirname(target) == os.path.dirname(rel)):
                problems.append(f"{rel}:{n}: its first include, {target}, is not a header beside it, in "
                                "host/include/kvblob/host/ or in host/internal/kvblob/host/: a source "
                                "starts with the header it implements")
            break
    return problems


def self_test():
    plants = {
        # Each a forbidden arrow, and the room it comes from.
        "plugins/memory/bad.cpp": '#include "kvblob/host/plugin.hpp"\n',
        "plugins/support/src/bad.cpp": '#include "kvblob/cli/quantities.hpp"\n',
        "conformance-runner/src/bad.cpp": '#include "kvblob/support/device_copy.hpp"\n',
        "host/src/guarding/bad.hpp": '#include "kvblob/host/driver.hpp"\n',
        "host/src/text/bad.cpp": '#include "kvblob/host/printable.hpp"\n#include "loading/plugin_file.hpp"\n',
        # A cycle between host rooms: each arrow alone allowed, the two together not.
        "host/src/guarding/cycle.hpp": '#include "loading/plugin_file.hpp"\n',
        # A source that starts with another room's header.
        "host/src/metrics/misplaced.cpp": '#include "guarding/driver_core.hpp"\n',
        "host/include/kvblob/host/bad.hpp": '#include "kvblob/host/json.hpp"\n',
    }
    allowed = {
        "host/src/loading/good.cpp": '#include "plugin_file.hpp"\n#include "guarding/driver_core.hpp"\n#include <vector>\n',
        "conformance-runner/src/good.cpp": '#include "kvblob/cli/quantities.hpp"\n#include "kvblob/host/plugin.hpp"\n',
        "host/src/guarding/good.cpp": '#include "kvblob/host/driver.hpp"\n',
        "plugins/tiered/good.cpp": '#include "kvblob/host/plugin.hpp"\n',
    }
    targets = ["host/include/kvblob/host/plugin.hpp", "host/include/kvblob/host/driver.hpp",
               "host/internal/kvblob/host/json.hpp", "tools/common/include/kvblob/cli/quantities.hpp",
               "plugins/support/include/kvblob/support/device_copy.hpp", "host/src/loading/plugin_file.hpp",
               "host/src/guarding/driver_core.hpp", "host/include/kvblob/host/printable.hpp"]
    files = {**plants, **allowed, **{t: "" for t in targets}}
    problems = tree.planted(files, check)
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
    return tree.main(__doc__, lambda root: (check(root), []), self_test,
                     lambda problems: f"{len(problems)} include(s) break the arrows of docs/architecture.md",
                     lambda notes: "every include follows the arrows of docs/architecture.md")


if __name__ == "__main__":
    sys.exit(main())
