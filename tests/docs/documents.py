"""The documents the docs checks read: README.md and every docs/**/*.md."""
import os


def documents(source, skip=()):
    """Each document as a path relative to source; folders under docs/ named in skip are left out."""
    yield "README.md"
    for root, dirs, files in os.walk(os.path.join(source, "docs")):
        dirs.sort()
        if os.path.relpath(root, source).startswith(tuple(skip)) and skip:
            continue
        for f in sorted(files):
            if f.endswith(".md"):
                yield os.path.relpath(os.path.join(root, f), source)
