#!/usr/bin/env python3
"""The fuzz build preset (CMakePresets.json) builds every target
tests/fuzz/CMakeLists.txt declares: a target left out is never built, and
its ctest fails as "Not Run" in scripts/test-sanitized, on CI only.

Usage: preset_builds_every_target.py SOURCE_DIR
"""
import json
import os
import re
import sys

source = sys.argv[1]
declared = {"fuzz_" + n for n in re.findall(r"^kvblob_fuzz_target\((\w+)",
                                             open(os.path.join(source, "tests/fuzz/CMakeLists.txt")).read(), re.M)}
presets = json.load(open(os.path.join(source, "CMakePresets.json")))
built = set()
for p in presets.get("buildPresets", []):
    if p.get("name") == "fuzz":
        built = set(p.get("targets", []))
if not declared:
    sys.exit("FAIL: no kvblob_fuzz_target found in tests/fuzz/CMakeLists.txt")
missing, extra = sorted(declared - built), sorted(built - declared)
if missing or extra:
    sys.exit(f"FAIL: the fuzz build preset leaves out {missing} and names unknown {extra}")
print(f"the fuzz preset builds all {len(declared)} fuzz targets")
