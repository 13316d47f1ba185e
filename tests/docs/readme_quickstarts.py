#!/usr/bin/env python3
"""The README's front page, held true: its two commands and its quick starts.

Checks, without running anything heavy:
- README.md is at most 200 lines;
- its first fenced block (the one scripts/fresh-debian-check runs) holds two
  commands, and the second is .ci/run's command, byte for byte;
- each block of the "Quick starts" section is at most 15 lines.

Then (with --run) runs the quick starts as written, in order, in one scratch
folder, on a copy of kvblob installed from BUILD_DIR into a scratch prefix
(the README has the reader install into /usr/local; here the compiler, the
linker, the dynamic loader, Python and CMake are pointed at the scratch
prefix through their environment variables, and the commands are not
changed). The scratch folder holds a link to each top-level entry of the
source tree, as the repository root would. The engine's C++ block is
written to the file its comment names (`// NAME.cpp: `) and its Python block to the file
the text before it names; each sh block runs with bash -e, and the Python
file with the command the text gives. What each must print:
- the engine: `READY` (C++) and `READY True` (Python);
- the vendor: kvblob-info's identity of the template, and the battery's
  verdict `CONFORMANT`;
- the operator: the example engine's `verified:` line on the file driver,
  its metrics' READY get rows under the config's label,
  and the C++ engine's success on the same config.

Usage: readme_quickstarts.py SOURCE_DIR [BUILD_DIR --run [--scratch DIR]]
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

source = os.path.abspath(sys.argv[1])
run = "--run" in sys.argv
build = os.path.abspath(sys.argv[2]) if run else None
scratch_arg = sys.argv[sys.argv.index("--scratch") + 1] if "--scratch" in sys.argv else None
failures = []


def fail(what):
    failures.append(what)
    print("FAIL: " + what)


readme = open(os.path.join(source, "README.md")).read()
lines = readme.count("\n")
if lines > 200:
    fail(f"README.md has {lines} lines; at most 200")

# The two commands: the first fenced block, its lines that are not comments.
first = re.search(r"^```[a-z]*\n(.*?)^```", readme, re.S | re.M)
commands = [l for l in first.group(1).split("\n") if l.strip() and not l.startswith("#")] if first else []
if len(commands) != 2:
    fail(f"README.md's first fenced block holds {len(commands)} commands, not 2")
else:
    ci = [l for l in open(os.path.join(source, ".ci/run")).read().split("\n") if l.strip()][-1]
    if ci != commands[1]:
        fail(f".ci/run runs `{ci}`; README.md's command 2 is `{commands[1]}`")


def section(text, heading):
    start = text.index(heading)
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else len(text)]


quick = section(readme, "\n## Quick starts")
starts = re.split(r"\n(?=### )", quick)[1:]
if len(starts) != 3:
    fail(f"the Quick starts section has {len(starts)} quick starts, not 3")
for start in starts:
    for lang, body in re.findall(r"```([a-z]*)\n(.*?)```", start, re.S):
        if body.count("\n") > 15:
            fail(f"a {lang} block of `{start.splitlines()[0]}` has {body.count(chr(10))} lines; at most 15")

if failures or not run:
    print("FAILED" if failures else "the README's shape is as promised")
    sys.exit(1 if failures else 0)

scratch = os.path.abspath(scratch_arg) if scratch_arg else tempfile.mkdtemp(prefix="kvblob-readme-")
shutil.rmtree(scratch, ignore_errors=True)
os.makedirs(scratch)
try:
    prefix = os.path.join(scratch, "prefix")
    r = subprocess.run(["cmake", "--install", build, "--prefix", prefix], capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stdout[-3000:], r.stderr[-3000:])
        fail("cmake --install into the scratch prefix failed")
        sys.exit(1)
    libdir = os.path.dirname(glob.glob(os.path.join(prefix, "lib*", "**", "libkvblob_host.so"), recursive=True)[0])
    python = glob.glob(os.path.join(prefix, "lib", "python3*", "dist-packages"))
    work = os.path.join(scratch, "work")
    os.makedirs(work)
    for entry in os.listdir(source):
        if not entry.startswith(".") and not entry.startswith("build"):
            os.symlink(os.path.join(source, entry), os.path.join(work, entry))
    env = dict(os.environ,
               PATH=f"{prefix}/bin:" + os.environ["PATH"],
               CPATH=os.path.join(prefix, "include"),
               LIBRARY_PATH=libdir, LD_LIBRARY_PATH=libdir,
               PYTHONPATH=":".join(python),
               CMAKE_PREFIX_PATH=prefix)
    env.pop("KVBLOB_DRIVER_PATH", None)

    def sh(script, what):
        r = subprocess.run(["bash", "-e", "-c", script], cwd=work, env=env, capture_output=True, text=True)
        print(f"--- {what}: exit {r.returncode}\n{r.stdout[-3000:]}{r.stderr[-3000:]}")
        if r.returncode != 0:
            fail(f"{what} exits {r.returncode}")
        return r.stdout

    engine, vendor, operator = starts
    # The engine: the C++ file, the commands that build and run it, the Python file and its command.
    out = ""
    python_file = None
    for m in re.finditer(r"```([a-z]*)\n(.*?)```", engine, re.S):
        lang, body = m.group(1), m.group(2)
        if lang == "cpp":
            name = re.search(r"// (\w+\.cpp): ", body).group(1)
            open(os.path.join(work, name), "w").write(body)
        elif lang == "sh":
            out += sh(body, "the engine quick start's commands")
        elif lang == "python":
            before = engine[:m.start()].rstrip().rsplit("\n\n", 1)[-1]
            python_file = re.search(r"`(\w+\.py)`", before).group(1)
            command = re.search(r"run with `(/usr/bin/python3 [^`]+)`", before).group(1)
            open(os.path.join(work, python_file), "w").write(body)
            py_out = sh(command, "the engine quick start in Python")
            if py_out.strip() != "READY True":
                fail(f"the Python engine printed {py_out.strip()!r}, not 'READY True'")
    if out.strip() != "READY":
        fail(f"the C++ engine's commands printed {out.strip()!r}, not 'READY'")
    if python_file is None:
        fail("the engine quick start has no Python block")

    blocks = re.findall(r"```sh\n(.*?)```", vendor, re.S)
    out = sh("\n".join(blocks), "the vendor quick start")
    if "driver:    minimal" not in out:
        fail("the vendor quick start's kvblob-info does not show the template's identity")
    if not re.search(r"^CONFORMANT$", out, re.M):
        fail("the vendor quick start's battery does not end CONFORMANT")
    if not os.path.exists(os.path.join(work, "conformance.xml")):
        fail("the vendor quick start leaves no conformance.xml")

    blocks = re.findall(r"```sh\n(.*?)```", operator, re.S)
    out = sh("\n".join(blocks), "the operator quick start")
    if not re.search(r"^kvblob-engine: driver file ", out, re.M) or "verified:" not in out:
        fail("the operator quick start's engine did not run the file driver and verify its blocks")
    if not glob.glob(os.path.join(work, "store", "**", "*"), recursive=True):
        fail("the operator quick start's file store is empty")
    # The grep of the metrics' READY get rows printed its line, with a count.
    if not re.search(r'^kvblob_rows_total\{driver="file",label="node-a",kind="get",result="READY"\} [1-9][0-9]*$',
                     out, re.M):
        fail("the operator quick start's metrics hold no READY get rows for its label")
finally:
    shutil.rmtree(scratch, ignore_errors=True)
print("FAILED" if failures else "the README's quick starts run as written")
sys.exit(1 if failures else 0)
