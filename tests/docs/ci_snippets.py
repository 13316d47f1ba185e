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
GitHub snippet's Conformance step, with and without an expectations file,
on the checks that file names and one other (the GitLab script ran the
same battery whole). Each run must leave a JUnit report.

Then the rest of the guide, literally, on what that run installed and built
(so a guide line that stops being true fails here): the programs the
runner-only build installs are the ones section 5 names, each with its
manual page, and nothing of what it does not build; every command of
the sh blocks of sections 1, 2 and 4 runs in the vendor's build folder as
written (a command that runs the whole battery gets --filter appended: the
GitLab script above already ran the whole battery on this driver), with
section 4's expectations file as written; section 3's sample summary has the
runner's format and adds up to the number of checks --list gives.

Usage: ci_snippets.py SOURCE_DIR [--run [--scratch DIR]]   (exit 77: cannot run here)
With --scratch, the run happens in DIR (emptied first, removed after), so a
compiler cache (ccache, when installed, through CMake's
CMAKE_<LANG>_COMPILER_LAUNCHER environment variables) sees the same paths
from run to run.
"""
import glob
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


def guide_section(number):
    text = open(os.path.join(source, "docs/vendor-guide.md")).read()
    start = text.index(f"## {number}. ")
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


def follow_the_guide(vendor, prefix, env):
    """Sections 1 to 5 of the guide, as written, on the installed runner and
    the template built as mystore (see the module's text)."""
    build = os.path.join(vendor, "build")
    # Section 5: what the runner-only build installs.
    m = re.search(r"`-DKVBLOB_RUNNER_ONLY=ON` builds (.*?) only", guide_section(5), re.S)
    named = set(re.findall(r"`(kvblob-[a-z-]+)`", m.group(1))) if m else set()
    installed = set(os.listdir(os.path.join(prefix, "bin"))) if os.path.isdir(os.path.join(prefix, "bin")) else set()
    if not named or named != installed:
        fail(f"section 5 says the runner-only build installs {sorted(named)}; it installed {sorted(installed)}")
    # It installs nothing of what it did not build (the example engine's
    # config, the drivers' copyright), and a manual page for each program
    # (help2man is among what install-deps --runner-only installs).
    # The drivers' folder is lib/kvblob, or lib/<multiarch>/kvblob on Debian.
    for absent in ("share/kvblob/examples", "share/doc/kvblob-drivers", "lib/kvblob", "lib/*/kvblob"):
        if glob.glob(os.path.join(prefix, absent)):
            fail(f"the runner-only install holds {absent}, which belongs to what it does not build")
    for program in sorted(installed):
        if not os.path.exists(os.path.join(prefix, "share/man/man1", program + ".1.gz")):
            fail(f"the runner-only install has no manual page for {program}")

    def run_line(line, what):
        r = subprocess.run(["bash", "-c", line], cwd=build, env=env, capture_output=True, text=True)
        print(f"--- {what}: {line}\nexit {r.returncode}\n{r.stdout[-1500:]}{r.stderr[-1500:]}")
        return r

    def commands(number):
        for block in re.findall(r"```sh\n(.*?)```", guide_section(number), re.S):
            for line in block.split("\n"):
                line = re.sub(r"\s+#.*$", "", line).strip()
                if line:
                    yield line

    # Sections 1 and 2: kvblob-info and the battery, each as written.
    summary, checks = None, None
    for number in (1, 2):
        for line in commands(number):
            whole_battery = line.startswith("kvblob-conformance --driver") and "--filter" not in line
            r = run_line(line + (" --filter data.round-trip.one-row" if whole_battery else ""), f"section {number}")
            if r.returncode != 0:
                fail(f"section {number}: `{line}` exits {r.returncode}")
            if "--list" in line:
                rows = [l for l in r.stdout.split("\n") if l]
                if not rows or not all(re.match(r"\S+  \[R-[A-Z]+-\d+( R-[A-Z]+-\d+)*\]  (MUST|SHOULD)  ", l) for l in rows):
                    fail("section 2: --list does not show each check's rules and level")
                if not any("  needs hook " in l for l in rows) or not any("  needs multi_span" in l for l in rows):
                    fail("section 2: --list does not show what the checks need")
                checks = len(rows)
            summary = re.search(r"^\d+ passed, .*$", r.stdout, re.M) or summary
    # Section 3: the sample summary has the runner's format and the real count.
    sample = re.search(r"^(\d+) passed, .*$", guide_section(3), re.M)
    if not sample or not summary:
        fail("section 3 shows no sample summary line, or the runs above printed none")
    else:
        shape = lambda text: re.sub(r"\d+", "N", text)
        if shape(sample.group(0)) != shape(summary.group(0)):
            fail(f"section 3's sample `{sample.group(0)}` is not the runner's summary `{summary.group(0)}`")
        counted = sum(int(n) for n in re.findall(r"(\d+) ", sample.group(0)))
        if counted != checks:
            fail(f"section 3's sample counts {counted} checks; --list gives {checks}")
    # Section 4: the expectations file as written, and its command.
    section = guide_section(4)
    example = re.search(r"```\n(# glob.*?)```", section, re.S)
    if not example:
        fail("section 4 shows no expectations file")
        return
    path = os.path.join(build, "conformance-expectations.txt")
    open(path, "w").write(example.group(1))
    for line in commands(4):
        globs = [l.split()[0] for l in example.group(1).split("\n") if l.strip() and not l.startswith("#")]
        r = run_line(line + "".join(f" --filter '{g}'" for g in globs), "section 4")
        # The template passes data.wrong-size.fault: the file's FAIL line is
        # stale, which the guide says is XPASS, naming the line, and fails the run.
        if r.returncode != 1 or not re.search(
                r"^\[XPASS\] data\.wrong-size\.fault: passed, but conformance-expectations\.txt:2 expects FAIL .*\n"
                r"    rerun: ", r.stdout, re.M):
            fail("section 4: a stale FAIL line is not an XPASS naming conformance-expectations.txt:2 with its rerun")
        if not re.search(r"^\[XFAIL\] scenario\.\S+: expected NOT_SUPPORTED by conformance-expectations\.txt:3 ",
                         r.stdout, re.M):
            fail("section 4: the NOT_SUPPORTED line does not make the scenario checks XFAIL")
    os.remove(path)


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

    follow_the_guide(vendor, prefix, env)

    # The GitHub step's battery is the GitLab script's, which ran it whole
    # above: here it runs the checks its expectations file names and one
    # other, enough to show the step's exit status, its reports, and its
    # expectations file read or left out.
    step = re.sub(r"(kvblob-conformance --driver .*?--junit conformance\.xml)",
                  r"\1 --filter 'scenario.*' --filter data.round-trip.one-row", github.get("Conformance", ""),
                  flags=re.S)
    if "--filter" not in step:
        fail("the GitHub Conformance step has no kvblob-conformance line that ends with its JUnit report")
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
        jsonl = os.path.join(vendor, "conformance.jsonl")
        report = open(jsonl).read() if os.path.exists(jsonl) else ""
        if expectations and "XFAIL" not in report:
            fail(f"{what}: the expectations file was not used")
        if not expectations and "XFAIL" in report:
            fail(f"{what}: an expectations file was used where none was written")
finally:
    shutil.rmtree(scratch, ignore_errors=True)
print("FAILED" if failures else "the CI snippets run as written")
sys.exit(1 if failures else 0)
