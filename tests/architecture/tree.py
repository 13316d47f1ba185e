"""What the checks of tests/architecture share: the project's own files, a
scratch tree of planted files for their self-tests, and their command line.
"""
import os
import sys
import tempfile

SOURCE_EXT = (".c", ".h", ".cpp", ".hpp", ".cc")


def source_files(root, endings=SOURCE_EXT, skip_top=()):
    """Each file of the tree with one of endings, as a path relative to root, in a stable order.

    Build folders (build*), hidden folders, Testing/ and the top folders in
    skip_top are not the project's sources and are left out.
    """
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        rel_folder = os.path.relpath(folder, root)
        top = rel_folder.split(os.sep)[0]
        if rel_folder != "." and (top in skip_top or top == "Testing" or top.startswith(("build", "."))):
            dirs[:] = []
            continue
        for f in sorted(files):
            if f.endswith(endings):
                yield os.path.normpath(os.path.join(rel_folder, f))


def read(root, rel):
    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as text:
        return text.read()


def planted(files, check):
    """check(root) run on a scratch tree holding files ({relative path: text})."""
    with tempfile.TemporaryDirectory() as root:
        for rel, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w") as f:
                f.write(text)
        return check(root)


def main(doc, check, self_test, failed, passed):
    """The command line of a check: SOURCE_DIR, or --self-test.

    check(root) gives (problems, notes): each problem and note is printed,
    then failed(problems) and exit 1 where there are problems, passed(notes)
    and exit 0 where there are none.
    """
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 2:
        print(doc)
        return 2
    problems, notes = check(sys.argv[1])
    for line in problems + notes:
        print(line)
    if problems:
        print(failed(problems))
        return 1
    print(passed(notes))
    return 0
