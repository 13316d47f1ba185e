#!/usr/bin/python3
"""Every program the tests and scripts call comes from what scripts/install-deps
installs, or from a minimal Debian 12 (debootstrap --variant=minbase: the
Essential and Priority required packages).

A newcomer's machine has nothing else, so a tool that the developers' machine
happens to have (git, file) fails there and nowhere else. This reads the
programs called by the repository's shell scripts (at command position), by
its Python scripts (subprocess argument lists), by the tests' CMake COMMANDs,
and the few that tools call behind our back (INDIRECT below); finds the
Debian package that owns each on this machine; and fails for any package
outside the dependency closure of install-deps' packages and the minimal base.

It also fails for a documented command that runs a bare `python3`: the
Python module is built for the interpreter CMake found (/usr/bin/python3 on
Debian), and the python3 first on a user's PATH may be another one.

Usage: deps_cover_tools.py REPO_ROOT
       deps_cover_tools.py --self-test   the script reader against scripts
                                          whose programs are known
"""
import os
import re
import shutil
import subprocess
import sys

# Programs that another program runs, which no script of ours names.
INDIRECT = {
    "file": "cpack -G DEB (CPackDeb) runs it on every file it packages",
    "dpkg-shlibdeps": "cpack -G DEB with CPACK_DEBIAN_PACKAGE_SHLIBDEPS",
    "objdump": "dpkg-shlibdeps reads each library's dependencies with it",
    "c++": "CMake's compiler for the out-of-tree builds",
}
SHELL_WORDS = {
    "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac", "in", "function",
    "return", "local", "export", "set", "unset", "shift", "exit", "cd", "echo", "printf", "read", "trap", "wait",
    "eval", "source", "true", "false", "test", "break", "continue", "declare", "mapfile", "readarray", "builtin",
    "command", "type", "hash", "kill", "pwd", "umask", "ulimit", "let", "getopts", "exec", "time", "select",
}
# Words after which the next word is the program that runs.
PREFIXES = {"exec", "nice", "timeout", "env", "sudo", "xargs", "command", "time", "setsid", "taskset", "stdbuf"}


# A here-document's start (not a here-string, <<<), and its end word.
HEREDOC = re.compile(r"(?<!<)<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
# A shell at command position: its here-document holds commands.
SHELL_READS = re.compile(r"(^|[\s|;&(])(sh|bash|dash)(\s|$)")


# Text before a string that a Python interpreter runs: python3 -c '...'.
PYTHON_C = re.compile(r"python[0-9.]*\"?\s+(-\S+\s+)*-c\s*$")


def outside_quotes(line, state):
    """The line's code, and the string still open at its end, given the one
    open at its start (state: None, or (quote, whether it is data)).
    Single-quoted text on one line is data, replaced by ''; double-quoted
    text is kept (it may run commands, "$(...)"); a string that spans lines
    is data when a Python interpreter runs it (python3 -c '...'), its lines
    dropped, and code otherwise (sh -c "...", a step's commands). Comments
    are dropped."""
    quote, data = state if state else (None, False)
    continued = state is not None  # in a string opened on an earlier line
    out, i, opened_at = [], 0, 0
    while i < len(line):
        c = line[i]
        if quote is None:
            if c in "'\"":
                quote, data, opened_at = c, False, i
                if c == '"':
                    out.append(c)
            elif c == "\\":
                out.append(line[i:i + 2])
                i += 1
            elif c == "#" and (i == 0 or line[i - 1].isspace()):
                break  # a comment, to the end of the line
            else:
                out.append(c)
        elif c == "\\" and quote == '"':
            if not data:
                out.append(line[i:i + 2])
            i += 1
        elif c == quote:
            out.append("''" if quote == "'" or data else c)
            quote, data, continued = None, False, False
        elif not data and (quote == '"' or continued):
            out.append(c)  # double-quoted text, or a single-quoted string run as code
        i += 1
    if quote is None:
        return "".join(out), None
    if not continued:
        data = bool(PYTHON_C.search(line[:opened_at]))
    return "".join(out), (quote, data)


def shell_commands(text):
    """The program names at command position in a shell script. A string
    that spans lines and a here-document are data (a Python program, a
    file's text) unless a shell reads the here-document: a word at the
    start of one of their lines is no program the script runs (`import` in
    a Python program is not ImageMagick's)."""
    found = set()
    in_body = None  # the end word of the here-document being skipped
    quote = None  # a string that spans lines: (its quote, whether it is data)
    for line in text.splitlines():
        if in_body is not None:
            if line.strip() == in_body:
                in_body = None
            continue
        if quote is None:
            heredoc = HEREDOC.search(line)
            if heredoc and not SHELL_READS.search(line[:heredoc.start()]):
                in_body = heredoc.group(2)
        line, quote = outside_quotes(line, quote)
        for part in re.split(r"\|\||&&|[|;`]|\$\(|\(|\)|\{|\}|\bthen\b|\bdo\b|\belse\b|!", line):
            words = part.split()
            while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
                words.pop(0)  # VAR=value before the program
            i = 0
            while i < len(words):
                w = words[i].strip("\"")
                if w in PREFIXES:
                    i += 1
                    while i < len(words) and (words[i].startswith("-") or re.match(r"^[0-9.]+[smh]?$", words[i])):
                        i += 1  # the prefix's own options and durations
                    continue
                if re.match(r"^[a-z][a-z0-9+_.-]*$", w) and w not in SHELL_WORDS:
                    found.add(w)
                break
    return found


def python_commands(text):
    found = set()
    for m in re.finditer(r"(?:subprocess\.\w+|Popen|check_output)\(\s*\[?\s*[\"']([a-z][a-z0-9+_.-]*)[\"']", text):
        found.add(m.group(1))
    return found


def cmake_commands(text):
    return {m.group(1) for m in re.finditer(r"\bCOMMAND\s+([a-z][a-z0-9+_.-]*)\b", text)}


def owners(paths):
    """The Debian package that ships each path (by any of its merged-/usr names)."""
    names = {}
    for path in paths:
        real = os.path.realpath(path)
        for p in {path, real}:
            twin = p[4:] if p.startswith(("/usr/bin/", "/usr/sbin/")) else "/usr" + p
            for n in (p, twin):
                names.setdefault(n, set()).add(path)
    out = subprocess.run(["dpkg-query", "-S"] + sorted(names), capture_output=True, text=True).stdout
    found = {}
    for line in out.splitlines():  # "pkg[, pkg2]: /path"
        packages, _, p = line.partition(": ")
        for path in names.get(p, ()):
            found.setdefault(path, packages.split(",")[0].split(":")[0].strip())
    return found


def closure(packages):
    """PACKAGES and everything they depend on, as installed (dpkg's own
    records, so no apt lists are needed)."""
    out = subprocess.run(["dpkg-query", "-W", "-f=${Package}\t${Status}\t${Provides}\t${Pre-Depends}, ${Depends}\n"],
                         capture_output=True, text=True).stdout
    depends, provided_by = {}, {}
    for line in out.splitlines():
        name, status, provides, deps = (line.split("\t") + ["", "", ""])[:4]
        if not status.endswith(" installed"):
            continue
        # "a (>= 1) | b:any, c" -> every alternative's name; the installed ones count.
        depends[name] = re.findall(r"([a-z0-9][a-z0-9+.-]*)(?::\w+)?\s*(?:\([^)]*\))?", deps)
        for virtual in re.findall(r"([a-z0-9][a-z0-9+.-]*)(?:\s*\([^)]*\))?", provides):
            provided_by.setdefault(virtual, []).append(name)
    seen, todo = set(), list(packages)
    while todo:
        p = todo.pop()
        for real in [p] + provided_by.get(p, []):
            if real in depends and real not in seen:
                seen.add(real)
                todo.extend(depends[real])
    return seen


def in_minimal_base(package):
    out = subprocess.run(["dpkg-query", "-W", "-f=${Priority} ${Essential}", package], capture_output=True, text=True)
    priority, _, essential = out.stdout.partition(" ")
    return priority == "required" or essential == "yes"


# Scripts and the programs they run, or must not be taken to run.
SELF_TEST = [
    ("x=$(python3 -c '\nimport socket\nprint(1)\n')\n", set(), {"import"}),
    ('out=$("$python" -c "\nimport kvblob\n")\n', set(), {"import"}),
    ("cat >f <<'PY'\nimport kvblob\nPY\nwc -l f\n", {"cat", "wc"}, {"import"}),
    ("bash <<'EOF'\nls /\nEOF\n", {"bash", "ls"}, set()),
    ('step a "cp x y\n    cmake -S . -B b\n    ls" && show\n', {"cmake"}, set()),
    ('d="$(mktemp -d)"  # a comment: sed\n', {"mktemp"}, {"sed"}),
    ("echo 'grep is data here'\n", set(), {"grep"}),
]


def self_test():
    for script, runs, not_runs in SELF_TEST:
        found = shell_commands(script)
        if not runs <= found or found & not_runs:
            print(f"self-test FAILED on {script!r}: found {sorted(found)}")
            return 1
    print(f"self-test passed: {len(SELF_TEST)} scripts read as bash runs them")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = sys.argv[1]
    files = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True, check=True).stdout.split()
    called = dict(INDIRECT)  # program -> where (or why) it is called
    self_installed = {}  # program -> the packages the script calling it installs itself
    for f in files:
        path = os.path.join(root, f)
        if not os.path.isfile(path):
            continue
        with open(path, errors="replace") as fh:
            text = fh.read()
        first = text.split("\n", 1)[0]
        if f.endswith(".sh") or (first.startswith("#!") and "bash" in first) or f == ".ci/run":
            names = shell_commands(text)
        elif f.endswith(".py"):
            names = python_commands(text)
        elif f.endswith("CMakeLists.txt") and f.startswith("tests/"):
            names = cmake_commands(text)
        else:
            continue
        own = set()
        for m in re.finditer(r"apt-get install[^\n]*", text):
            own.update(w for w in m.group(0).split() if re.match(r"^[a-z0-9][a-z0-9+.-]+$", w))
        for n in names:
            called.setdefault(n, f)
            self_installed.setdefault(n, set()).update(own)

    install_deps = os.path.join(root, "scripts", "install-deps")
    packages = subprocess.run([install_deps, "--print"], capture_output=True, text=True, check=True).stdout.split()
    covered = closure(packages)
    problems, rows = [], []
    paths = {}
    for name in sorted(called):
        path = shutil.which(name, path="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
        # None: not a program (a function, a variable's text, one of our own
        # built tools); /usr/local: not from Debian, nothing install-deps provides.
        if path is not None and not path.startswith("/usr/local/"):
            paths[name] = path
    owned = owners(paths.values())
    for name, path in paths.items():
        package = owned.get(path)
        if package is None:
            problems.append(f"{name} ({path}, called in {called[name]}) belongs to no Debian package")
        elif package in covered:
            rows.append(f"{name:<18} {package:<24} installed by scripts/install-deps")
        elif in_minimal_base(package):
            rows.append(f"{name:<18} {package:<24} in a minimal Debian 12")
        elif package in self_installed.get(name, ()):
            rows.append(f"{name:<18} {package:<24} installed by the script that calls it")
        else:
            problems.append(f"{name} (package {package}, called in {called[name]}) is neither installed by "
                            "scripts/install-deps nor part of a minimal Debian 12")
    print("\n".join(rows))

    # Documented commands name the interpreter the build uses.
    for f in files:
        if not (f.endswith(".md") or f.startswith("examples/") or f.startswith("bench/")):
            continue
        path = os.path.join(root, f)
        if not os.path.isfile(path):
            continue
        with open(path, errors="replace") as fh:
            for no, line in enumerate(fh, 1):
                if re.search(r"(^|[\s$`(])python3 (-c|-m|\S+\.py)", line) or line.startswith("#!/usr/bin/env python3"):
                    problems.append(f"{f}:{no}: runs a bare python3 (name /usr/bin/python3, the interpreter "
                                    f"the build's module is for): {line.strip()}")

    for p in problems:
        print("FAIL:", p)
    print(f"{len(called)} programs called, {len(rows)} from Debian checked, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
