#!/usr/bin/env python3
"""The documents' links, section references and fenced commands, checked
without running anything.

- Every relative link in README.md and docs/**/*.md names a file or folder
  that exists, and its #anchor, if any, is a heading of that file (GitHub's
  anchors: lower case, punctuation dropped, spaces as hyphens, -1, -2 for
  repeats).
- Every reference to a section of a document, in the documents and in the
  source tree's comments (`docs/X.md, "Heading"`, `docs/X.md's "Heading"`,
  `docs/X.md ("Heading")`, comments wrapped over lines included), names a
  heading that exists in that document: the heading, or its start, with or
  without its section number ("In CI" for "## 5. In CI").
- Every fenced block of shell commands (sh, bash, shell) in README.md and
  docs/ (but the dated notes in docs/notes/) says, on the line before it,
  where it runs: `<!-- runs in: FILE -->`. FILE exists, and either reads
  that document (names it) to run its blocks, or holds each command of the
  block as written (each step of a command joined by &&). Examples of output are `console` or `text` blocks, or
  blocks without a language; they need no marker, but a block without a
  language that starts with a command is refused (make it sh or console).

Usage: doc_links.py SOURCE_DIR
"""
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from documents import documents as all_documents  # noqa: E402

source = os.path.abspath(sys.argv[1])
failures = []


def fail(what):
    failures.append(what)
    print("FAIL: " + what)


def documents():
    return all_documents(source)


def fences(text):
    """(language, body, line of the opening fence) of each fenced block, the
    fences paired in order."""
    out, lang, body, start = [], None, [], 0
    for n, line in enumerate(text.split("\n"), 1):
        if line.startswith("```"):
            if lang is None:
                lang, body, start = line[3:].strip(), [], n
            else:
                out.append((lang, "\n".join(body) + "\n", start))
                lang = None
        elif lang is not None:
            body.append(line)
    return out


def strip_code(text):
    """The text without its fenced blocks (a link inside one is code)."""
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def headings(path):
    text = strip_code(open(os.path.join(source, path)).read())
    return [m.group(2).strip() for m in re.finditer(r"^(#{1,6}) (.*)$", text, re.M)]


def anchors(path):
    seen, out = {}, set()
    for h in headings(path):
        h = re.sub(r"`", "", h)
        h = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", h)
        slug = re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        out.add(slug if n == 0 else f"{slug}-{n}")
        seen[slug] = n + 1
    return out


# Links.
for doc in documents():
    text = strip_code(open(os.path.join(source, doc)).read())
    text = re.sub(r"`[^`\n]*`", "", text)  # a link inside inline code is code
    for m in re.finditer(r"\]\(([^)\s]+)\)", text):
        target = m.group(1)
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        resolved = os.path.normpath(os.path.join(os.path.dirname(doc), path)) if path else doc
        full = os.path.join(source, resolved)
        if not os.path.exists(full):
            fail(f"{doc}: the link ({target}) names {resolved}, which does not exist")
            continue
        if anchor:
            if not resolved.endswith(".md") or anchor not in anchors(resolved):
                fail(f"{doc}: the link ({target}): {resolved} has no heading with the anchor #{anchor}")

# Section references, in the documents and in the source tree's comments.
reference = re.compile(r"(docs/[\w/.-]+\.md)`?(?:'s\s+|,\s+\(?|\s+\()\"([A-Z0-9][^\"]{1,80})\"")
comment_prefix = re.compile(r"\n[ \t]*(?://+|#+|\*+|/\*+)?[ \t]*")


def section_ok(doc, name):
    name = " ".join(name.split())
    for h in headings(doc):
        h = " ".join(h.split())
        for candidate in (h, re.sub(r"^\d+\. ", "", h)):
            if candidate == name or candidate.startswith(name):
                return True
    return False


scanned = list(documents())
for top in ("abi", "host", "plugins", "conformance-runner", "tools", "bench", "examples", "tests", "scripts", "cmake"):
    for root, _, files in os.walk(os.path.join(source, top)):
        for f in files:
            if re.search(r"\.(h|hpp|c|cpp|py|sh|cmake|txt|md)$", f) or "." not in f:
                scanned.append(os.path.relpath(os.path.join(root, f), source))
scanned.append("CMakeLists.txt")
references = 0
for path in scanned:
    if path.startswith("docs/notes/") or path == "tests/docs/doc_links.py":
        continue  # dated notes quote the documents as they were
    try:
        text = open(os.path.join(source, path), errors="replace").read()
    except (IsADirectoryError, FileNotFoundError):
        continue
    if "docs/" not in text:
        continue
    joined = comment_prefix.sub(" ", text)
    for m in reference.finditer(joined):
        doc, name = m.group(1), m.group(2)
        if not os.path.exists(os.path.join(source, doc)):
            fail(f"{path}: refers to {doc}, which does not exist")
            continue
        references += 1
        if not section_ok(doc, name):
            fail(f"{path}: refers to {doc}, \"{name}\": no such heading there")
if references == 0:
    fail("found no reference to a document's section: the pattern no longer matches how the tree writes them")

# Fenced commands.
blocks = 0
for doc in documents():
    if doc.startswith("docs/notes/"):
        continue
    text = open(os.path.join(source, doc)).read()
    for m in re.finditer(r"^```(sh|bash|shell)\n(.*?)^```", text, re.S | re.M):
        blocks += 1
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = re.fullmatch(r"<!-- runs in: ([^\s,]+)[^>]* -->", before.strip())
        line = text[:m.start()].count("\n") + 1
        if not marker:
            fail(f"{doc}:{line}: a {m.group(1)} block says nowhere where it runs (<!-- runs in: FILE --> before it)")
            continue
        runner = os.path.join(source, marker.group(1))
        if not os.path.isfile(runner):
            fail(f"{doc}:{line}: runs in {marker.group(1)}, which does not exist")
            continue
        runner_text = open(runner).read()
        if (doc in runner_text or (doc == "README.md" and "README" in runner_text)
                or marker.group(1) == "tests/docs/doc_commands.py"):  # runs every block marked for it
            continue
        for command in m.group(2).split("\n"):
            command = re.sub(r"\s+#.*$", "", command).strip()
            if command.startswith("#"):
                continue
            for step in filter(None, (s.strip() for s in command.split(" && "))):
                if step not in runner_text:
                    fail(f"{doc}:{line}: `{step}` is not in {marker.group(1)}, where the block says it runs")
    # A command hidden in a block without a language would escape the above.
    for lang, body, line in fences(text):
        first = body.split("\n")[0]
        if lang in ("", "text") and re.match(r"(build/bin/|kvblob-[a-z]+ |scripts/|cmake |ctest |\$ )", first):
            fail(f"{doc}:{line}: `{first[:60]}` is a command in a block without a language: "
                 f"make it sh (with where it runs) or console (an example of output)")
if blocks == 0:
    fail("found no fenced command in the documents")

print("FAILED" if failures else f"every link, section reference and fenced command of the documents holds "
      f"({references} section references, {blocks} command blocks)")
sys.exit(1 if failures else 0)
