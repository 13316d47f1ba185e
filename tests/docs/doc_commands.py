#!/usr/bin/env python3
"""The documents' commands, run as written.

Runs every fenced sh block of README.md and docs/ (but the dated notes)
whose line before says `<!-- runs in: tests/docs/doc_commands.py -->`, with
bash -e, and requires exit 0 (or N, where the marker says `, exits N`).
Every ```console block whose line before says
`<!-- checked by: tests/docs/doc_commands.py -->` is an example of output
held true: each `$ COMMAND` in it runs, and what it prints (stdout and
stderr together) must be the lines that follow it in the block, exactly.

Each runs in a scratch folder that looks like the repository root: a link
to each top-level entry of the source tree, and `build` a link to BUILD_DIR;
BUILD_DIR/bin is first on PATH, as an installed kvblob's tools would be.

Usage: doc_commands.py SOURCE_DIR BUILD_DIR [--scratch DIR]
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from documents import documents as all_documents  # noqa: E402

source = os.path.abspath(sys.argv[1])
build = os.path.abspath(sys.argv[2])
scratch_arg = sys.argv[sys.argv.index("--scratch") + 1] if "--scratch" in sys.argv else None
failures = []
me = "tests/docs/doc_commands.py"


def fail(what):
    failures.append(what)
    print("FAIL: " + what)


def documents():
    return all_documents(source, skip=("docs/notes",))


scratch = os.path.abspath(scratch_arg) if scratch_arg else tempfile.mkdtemp(prefix="kvblob-doc-commands-")
shutil.rmtree(scratch, ignore_errors=True)
os.makedirs(scratch)
env = dict(os.environ, PATH=os.path.join(build, "bin") + ":" + os.environ["PATH"])
env.pop("KVBLOB_DRIVER_PATH", None)
ran = 0
try:
    for entry in os.listdir(source):
        if not entry.startswith(".") and not entry.startswith("build"):
            os.symlink(os.path.join(source, entry), os.path.join(scratch, entry))
    os.symlink(build, os.path.join(scratch, "build"))

    for doc in documents():
        text = open(os.path.join(source, doc)).read()
        for m in re.finditer(r"^<!-- (runs in|checked by): " + re.escape(me) + r"([^>]*) -->\n```(\w*)\n(.*?)^```",
                             text, re.S | re.M):
            kind, rest, lang, body = m.groups()
            line = text[:m.start()].count("\n") + 2
            where = f"{doc}:{line}"
            if kind == "runs in":
                if lang != "sh":
                    fail(f"{where}: a {lang} block marked to run; only sh blocks run")
                    continue
                exits = re.search(r"exits (\d+)", rest)
                want = int(exits.group(1)) if exits else 0
                r = subprocess.run(["bash", "-e", "-c", body], cwd=scratch, env=env, capture_output=True, text=True)
                ran += 1
                print(f"--- {where}: exit {r.returncode}\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
                if r.returncode != want:
                    fail(f"{where}: the block exits {r.returncode}, not {want}")
            else:
                if lang != "console":
                    fail(f"{where}: a {lang} block marked as checked output; only console blocks are")
                    continue
                for cm in re.finditer(r"^\$ (.*)\n((?:(?!\$ ).*\n)*)", body, re.M):
                    command, expected = cm.group(1), cm.group(2)
                    r = subprocess.run(["bash", "-c", command + " 2>&1"], cwd=scratch, env=env,
                                       capture_output=True, text=True)
                    ran += 1
                    print(f"--- {where}: $ {command}\n{r.stdout}")
                    if r.stdout != expected:
                        fail(f"{where}: `{command}` prints\n{r.stdout}which is not what the document shows:\n{expected}")
finally:
    shutil.rmtree(scratch, ignore_errors=True)
if ran == 0:
    fail("no document has a command marked for this runner")
print("FAILED" if failures else f"the documents' commands run as written ({ran} blocks and examples)")
sys.exit(1 if failures else 0)
