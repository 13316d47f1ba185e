#!/usr/bin/env python3
"""No function of the project's own code is longer than 100 lines.

Every .c, .h, .cpp, .hpp and .cc file outside tests/ (and outside build
folders, which are not the project's sources) is read with its comments,
strings and character literals blanked, and each brace block whose opening
is a function's head (a parameter list, then optionally const, noexcept,
override, a return type after ->, a constructor's member initializers) is
measured from its head's first line to its closing brace. A lambda or a
local class counts inside the function that holds it.

    function_lengths.py SOURCE_DIR   check the tree; exit 1 naming each
                                     function over the limit (file:line, lines)
    function_lengths.py --self-test  measure planted functions in a scratch
                                     tree and check what is reported
"""
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import tree  # noqa: E402 (after the line above)

LIMIT = 100
# A block opened after one of these words is a statement or a type, not a function.
NOT_FUNCTIONS = re.compile(r"^\s*(?:(?:else\s+)?if|for|while|switch|catch|do|else|try|return|namespace|"
                           r"class|struct|union|enum|extern|template\s*<.*>\s*(?:class|struct))\b")


def blank_comments_and_strings(text):
    """The text with comments, strings and character literals turned to spaces, lines kept."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == 'R' and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = ")" + m.group(1) + '"'
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            # A digit separator (1'000) is not a character literal.
            if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def is_function_head(head):
    head = re.sub(r"#[^\n]*", " ", head)  # preprocessor lines are not the head
    flat = " ".join(head.split())
    if not flat or NOT_FUNCTIONS.match(flat) or "(" not in flat:
        return False
    if flat.endswith("=") or re.search(r"=\s*$", flat):
        return False
    # The parameter list is followed only by qualifiers, a trailing return
    # type, or a constructor's initializer list.
    depth, close = 0, -1
    for k, ch in enumerate(flat):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0 and close < 0:
                close = k
    if close < 0:
        return False
    before = flat[:flat.index("(")].strip()
    if not before or re.search(r"(?:^|[^\w:~>])(?:if|for|while|switch|catch|return|sizeof|decltype)$", before):
        return False
    if before.endswith(("=", ",", "(", "[", "return", "&&", "||", "?", ":")) and not before.endswith("::"):
        return False
    return True


def functions(text):
    """(first line, last line) of each outermost function in text."""
    code = blank_comments_and_strings(text)
    found = []
    stack = []  # per open brace: (is_function, head start line)
    head_start = 0  # index where the text before the next brace begins
    inside = 0  # how many function blocks are open
    for i, ch in enumerate(code):
        if ch == "{":
            head = code[head_start:i]
            is_fn = inside == 0 and is_function_head(head)
            first = code.count("\n", 0, head_start + len(head) - len(head.lstrip())) + 1
            stack.append((is_fn, first))
            if is_fn:
                inside += 1
            head_start = i + 1
        elif ch == "}":
            if stack:
                is_fn, first = stack.pop()
                if is_fn:
                    inside -= 1
                    found.append((first, code.count("\n", 0, i) + 1))
            head_start = i + 1
        elif ch == ";":
            head_start = i + 1
        elif ch == ":" and code.startswith(("public:", "private:", "protected:"), max(0, i - 9)):
            head_start = i + 1
    return found


def check(root):
    """(file, first line, lines) of each function over the limit."""
    long_ones = []
    for rel in tree.source_files(root, skip_top=("tests",)):
        for first, last in functions(tree.read(root, rel)):
            if last - first + 1 > LIMIT:
                long_ones.append((rel, first, last - first + 1))
    return sorted(long_ones)


def report(root):
    """(problems, notes): each function over the limit; no notes."""
    return [f"{rel}:{line}: a function of {lines} lines, over {LIMIT}: split it by its stages"
            for rel, line, lines in check(root)], []


def self_test():
    body = "\n".join(f"    x += {i};" for i in range(LIMIT))
    plants = {
        # name: (text, the lengths that must be reported)
        "src/long.cpp": (f"int f(int x)\n{{\n{body}\n    return x;\n}}\n", {"src/long.cpp"}),
        "src/method.cpp": (f"void A::b() const noexcept\n{{\n    if (y) {{\n{body}\n    }}\n}}\n", {"src/method.cpp"}),
        "src/ctor.hpp": (f"struct S {{\n    S(int a) : a_(a)\n    {{\n{body}\n    }}\n    int a_;\n}};\n", {"src/ctor.hpp"}),
        "src/short.cpp": ("int g()\n{\n    return 1;\n}\n" + f"struct T {{\n{body}\n}};\n", set()),
        "src/table.cpp": ("const int t[] = {\n" + ",\n".join(str(i) for i in range(2 * LIMIT)) + "\n};\n", set()),
        "src/strings.cpp": ("int h()\n{\n    const char *s = \"}}}\";\n    return '}';\n}\n", set()),
        "tests/long.cpp": (f"int f(int x)\n{{\n{body}\n    return x;\n}}\n", set()),
    }
    reported = {rel for rel, _, _ in tree.planted({rel: text for rel, (text, _) in plants.items()}, check)}
    wanted = set().union(*(w for _, w in plants.values()))
    if reported != wanted:
        print("self-test FAILED: reported", sorted(reported), "wanted", sorted(wanted))
        return 1
    print(f"self-test passed: {len(wanted)} planted long functions reported, {len(plants) - len(wanted)} others not")
    return 0


def main():
    return tree.main(__doc__, report, self_test,
                     lambda problems: f"{len(problems)} function(s) over {LIMIT} lines outside tests/",
                     lambda notes: f"no function over {LIMIT} lines outside tests/")


if __name__ == "__main__":
    sys.exit(main())
