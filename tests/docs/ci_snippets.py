#!/usr/bin/env python3
"""The CI snippets of docs/vendor-guide.md ("5. In CI"), checked and run as
written.

Checks: every snippet installs kvblob's build dependencies with
scripts/install-deps --runner-only (an apt-get line may only add what the
clone itself needs), configures with -DKVBLOB_RUNNER_ONLY=ON, an option the
top-level CMakeLists.txt defines, and passes --expectations only when the file
exists.

Run: the GitLab snippet's commands, in order, in a scratch vendor project (the
installed driver template, renamed mystore in its one place), with
KVBLOB_REPO set to this checkout (git clones its HEAD commit). Two shims keep
the machine as it is: apt-get (already compared above) only records its
arguments, and DESTDIR sends the install into the scratch folder. Then the
GitHub snippet's Conformance step, with and without an expectations file.
Each run must leave a JUnit report.

Usage: ci_snippets.py SOURCE_DIR [--run [--scratch DIR]]   (exit 77: cannot run here)
With --scratch, the run happens in DIR (emptied first, removed after), so a
compiler cache (ccache, when installed, through CMake's
CMAKE_<LANG>_COMPILER_LAUNCHER environment variables) sees the same paths
from run to run.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

source = os.path.abspath(sys.argv[1])
run = "--run" in sys.argv[2:]
scratch_arg = sys.argv[sys.argv.index("--scratch") + 1] if "--scratch" in sys.argv else None
failures = []


def fail(what):
    failures.append(what)
    print("FAIL: " + what)


def ci_section():
    text = open(os.path.join(source, "docs/vendor-guide.md")).read()
    start = text.index("## 5. In CI")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else len(text)]


def yaml_blocks(section):
    return re.findall(r"```yaml\n(.*?)```", section, re.S)


def github_steps(block):
    """{step name: shell text} of the run: keys, in order."""
    steps, lines, i, name = {}, block.split("\n"), 0, None
    while i < len(lines):
        line = lines[i]
        m = re.match(r"\s*- name: (.*)", line)
        if m:
            name = m.group(1).strip()
        m = re.match(r"(\s*)run: (.*)", line)
        if m:
            indent, rest = len(m.group(1)), m.group(2)
            if rest.strip() == "|":
                body = []
                i += 1
                while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent):
                    body.append(lines[i].strip())
                    i += 1
                steps[name] = "\n".join(body).strip() + "\n"
                continue
            steps[name] = rest + "\n"
        i += 1
    return steps


def gitlab_script(block):
    """The script: items, continuation lines joined."""
    items, in_script = [], False
    for line in block.split("\n"):
        if re.match(r"\s*script:", line):
            in_script = True
            continue
        if not in_script:
            continue
        m = re.match(r"    - (.*)", line)
        if m:
            items.append(m.group(1))
        elif line.startswith("        ") and items:
            items[-1] += " " + line.strip()
        elif line.strip():
            break
    return items


def check_commands(where, commands):
    text = "\n".join(commands)
    for m in re.finditer(r"apt-get install -y ([^\n&;]*)", text):
        extra = set(m.group(1).split()) - {"git", "ca-certificates"}
        if extra:
            fail(f"{where}: apt-get installs {sorted(extra)}; build dependencies come from scripts/install-deps")
    if "kvblob/scripts/install-deps --runner-only" not in text:
        fail(f"{where}: does not install the build dependencies with kvblob/scripts/install-deps --runner-only")
    if "-DKVBLOB_RUNNER_ONLY=ON" not in text:
        fail(f"{where}: does not configure kvblob with -DKVBLOB_RUNNER_ONLY=ON")
    for m in re.finditer(r"kvblob-conformance[^\n]*", text):
        if "--expectations conformance-expectations.txt" in m.group(0):
            fail(f"{where}: passes --expectations unconditionally: {m.group(0)}")
    if "--junit conformance.xml" not in text:
        fail(f"{where}: writes no JUnit report")


blocks = yaml_blocks(ci_section())
if len(blocks) != 2:
    fail(f"expected 2 yaml snippets (GitHub Actions, GitLab CI), found {len(blocks)}")
    sys.exit(1)
github, gitlab = github_steps(blocks[0]), gitlab_script(blocks[1])
check_commands("GitHub Actions", list(github.values()))
check_commands("GitLab CI", gitlab)
if not re.search(r"option\(KVBLOB_RUNNER_ONLY ", open(os.path.join(source, "CMakeLists.txt")).read()):
    fail("CMakeLists.txt defines no KVBLOB_RUNNER_ONLY option")
runner_packages = subprocess.run([os.path.join(source, "scripts/install-deps"), "--runner-only", "--print"],
                                 capture_output=True, text=True, check=True).stdout.split()
for p in runner_packages:
    if subprocess.run(["dpkg-query", "-W", p], capture_output=True).returncode != 0:
        fail(f"install-deps --runner-only names {p}, which is not installed here: the run below would not test it")
if failures or not run:
    sys.exit(1 if failures else 0)

if subprocess.run(["git", "-C", source, "rev-parse", "HEAD"], capture_output=True).returncode != 0:
    print("SKIP: the source tree is not a git checkout; the snippets clone one")
    sys.exit(77)

if scratch_arg:
    scratch = os.path.abspath(scratch_arg)
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
else:
    scratch = tempfile.mkdtemp(prefix="kvblob-ci-")
try:
    shims = os.path.join(scratch, "shims")
    os.makedirs(shims)
    with open(os.path.join(shims, "apt-get"), "w") as f:
        f.write('#!/bin/sh\necho "apt-get $*" >> "%s/apt-get.log"\n' % scratch)
    with open(os.path.join(shims, "sudo"), "w") as f:
        f.write('#!/bin/sh\nexec "$@"\n')
    for s in ("apt-get", "sudo"):
        os.chmod(os.path.join(shims, s), 0o755)
    prefix = os.path.join(scratch, "root/usr/local")
    vendor = os.path.join(scratch, "vendor")
    # The vendor's project: the template, renamed in its one place.
    shutil.copytree(os.path.join(source, "examples/minimal_driver"), vendor)
    cmakelists = os.path.join(vendor, "CMakeLists.txt")
    text = open(cmakelists).read()
    if "set(DRIVER_NAME minimal)" not in text:
        fail("the template names its driver somewhere other than set(DRIVER_NAME minimal)")
        sys.exit(1)
    open(cmakelists, "w").write(text.replace("set(DRIVER_NAME minimal)", "set(DRIVER_NAME mystore)"))
    env = dict(os.environ, KVBLOB_REPO=source, DESTDIR=os.path.join(scratch, "root"),
               CMAKE_PREFIX_PATH=prefix, PATH=f"{shims}:{prefix}/bin:" + os.environ["PATH"])
    if shutil.which("ccache"):
        env.update(CMAKE_C_COMPILER_LAUNCHER="ccache", CMAKE_CXX_COMPILER_LAUNCHER="ccache")

    def sh(script, what):
        r = subprocess.run(["bash", "-e", "-c", script], cwd=vendor, env=env, capture_output=True, text=True)
        print(f"--- {what}: exit {r.returncode}\n{r.stdout[-3000:]}{r.stderr[-3000:]}")
        return r.returncode

    rc = sh("\n".join(gitlab), "GitLab CI script")
    if rc != 0:
        fail(f"the GitLab CI script exits {rc}")
    junit = os.path.join(vendor, "conformance.xml")
    if not os.path.exists(junit) or "<testsuite" not in open(junit).read():
        fail("the GitLab CI script leaves no JUnit report")
    apt_log = os.path.join(scratch, "apt-get.log")
    print("apt-get was asked: " + (open(apt_log).read().strip() if os.path.exists(apt_log) else "nothing"))

    step = github.get("Conformance", "")
    for expectations in (None, "scenario.* NOT_SUPPORTED no staging hooks in this driver\n"):
        for f in ("conformance.xml", "conformance.jsonl", "conformance-expectations.txt"):
            if os.path.exists(os.path.join(vendor, f)):
                os.remove(os.path.join(vendor, f))
        if expectations:
            open(os.path.join(vendor, "conformance-expectations.txt"), "w").write(expectations)
        what = "GitHub Conformance step, " + ("with" if expectations else "without") + " an expectations file"
        rc = sh(step, what)
        if rc != 0:
            fail(f"{what}: exit {rc}")
        if not os.path.exists(junit):
            fail(f"{what}: no JUnit report")
        if expectations and "XFAIL" not in open(os.path.join(vendor, "conformance.jsonl")).read():
            fail(f"{what}: the expectations file was not used")
finally:
    shutil.rmtree(scratch, ignore_errors=True)
print("FAILED" if failures else "the CI snippets run as written")
sys.exit(1 if failures else 0)
