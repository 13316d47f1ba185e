#!/usr/bin/env python3
"""The project computes SHA-256 one way, in one room.

The one implementation is the compression of
host/internal/kvblob/host/sha256_compress.hpp (its constants live there
alone) behind the digests of host/src/sha256/. A second one shows itself by
SHA-256's constants (the first round constant, the initial hash value) or
by a call into a library's SHA-256 (OpenSSL's EVP, SHA256(), HMAC()).
OpenSSL is the reference the tests compare against, so tests/ may call it;
nothing else may, and nothing but the one home may hold the constants.

    one_sha256.py SOURCE_DIR    check the tree; exit 1 naming each second
                                implementation (file:line, what)
    one_sha256.py --self-test   plant second implementations in a scratch
                                tree and check that each is reported
"""
import os
import re
import sys
import tempfile

HOME = "host/internal/kvblob/host/sha256_compress.hpp"
CONSTANTS = re.compile(r"0x428a2f98|0x6a09e667", re.IGNORECASE)
LIBRARY = re.compile(r"#\s*include\s*<openssl/|\bEVP_(?:Digest|MD_fetch|sha256)\b|\bSHA256(?:_Init)?\(|\bHMAC\(")
SOURCE_EXT = (".c", ".h", ".cpp", ".hpp", ".cc", ".py")
SKIP_TOP = {".git", "Testing"}


def check(root):
    problems = []
    for folder, dirs, files in os.walk(root):
        rel_folder = os.path.relpath(folder, root)
        top = rel_folder.split(os.sep)[0]
        if rel_folder != "." and (top in SKIP_TOP or top.startswith("build") or top.startswith(".")):
            dirs[:] = []
            continue
        for f in sorted(files):
            if not f.endswith(SOURCE_EXT):
                continue
            rel = os.path.normpath(os.path.join(rel_folder, f))
            if rel == "tests/architecture/one_sha256.py":
                continue  # names the patterns it looks for
            with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as text:
                for n, line in enumerate(text, 1):
                    if CONSTANTS.search(line) and rel != HOME:
                        problems.append(f"{rel}:{n}: SHA-256's constants outside {HOME}: a second "
                                        "implementation; use kvblob/host/sha256.hpp")
                    if LIBRARY.search(line) and not rel.startswith("tests/"):
                        problems.append(f"{rel}:{n}: a library's SHA-256 outside tests/: use "
                                        "kvblob/host/sha256.hpp (OpenSSL is the tests' reference only)")
    return problems


def self_test():
    plants = {
        "tools/own_sha.cpp": "static const unsigned k0 = 0x428A2F98;\n",
        "bench/src/evp.cpp": "#include <openssl/evp.h>\n",
        "conformance-runner/src/hmac.cpp": "auto d = HMAC(EVP_sha256(), k, 32, m, n, out, &len);\n",
        "tests/fixtures/own_sha.cpp": "uint32_t h0 = 0x6a09e667;\n",
    }
    allowed = {
        HOME: "inline constexpr uint32_t k[64] = {0x428a2f98};\n",
        "tests/support/reference.hpp": "#include <openssl/evp.h>\nEVP_Digest(p, n, out, &len, EVP_sha256(), nullptr);\n",
        "host/src/sha256/sha256.cpp": "void Sha256::update(const void *data, size_t size) noexcept;\n",
    }
    with tempfile.TemporaryDirectory() as root:
        for rel, text in list(plants.items()) + list(allowed.items()):
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w") as f:
                f.write(text)
        problems = check(root)
    reported = {p.split(":")[0] for p in problems}
    if reported != set(plants):
        print("self-test FAILED: reported", sorted(reported), "planted", sorted(plants))
        return 1
    print(f"self-test passed: {len(plants)} planted implementations reported, {len(allowed)} allowed files not")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    problems = check(sys.argv[1])
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} place(s) compute SHA-256 a second way")
        return 1
    print(f"one SHA-256: its constants in {HOME} alone, a library's SHA-256 in tests/ alone")
    return 0


if __name__ == "__main__":
    sys.exit(main())
