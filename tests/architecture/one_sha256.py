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
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import tree  # noqa: E402 (after the line above)

HOME = "host/internal/kvblob/host/sha256_compress.hpp"
CONSTANTS = re.compile(r"0x428a2f98|0x6a09e667", re.IGNORECASE)
LIBRARY = re.compile(r"#\s*include\s*<openssl/|\bEVP_(?:Digest|MD_fetch|sha256)\b|\bSHA256(?:_Init)?\(|\bHMAC\(")


def check(root):
    problems = []
    for rel in tree.source_files(root, tree.SOURCE_EXT + (".py",)):
        if rel == "tests/architecture/one_sha256.py":
            continue  # names the patterns it looks for
        for n, line in enumerate(tree.read(root, rel).splitlines(), 1):
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
    problems = tree.planted({**plants, **allowed}, check)
    reported = {p.split(":")[0] for p in problems}
    if reported != set(plants):
        print("self-test FAILED: reported", sorted(reported), "planted", sorted(plants))
        return 1
    print(f"self-test passed: {len(plants)} planted implementations reported, {len(allowed)} allowed files not")
    return 0


def main():
    return tree.main(__doc__, lambda root: (check(root), []), self_test,
                     lambda problems: f"{len(problems)} place(s) compute SHA-256 a second way",
                     lambda notes: f"one SHA-256: its constants in {HOME} alone, a library's SHA-256 in tests/ alone")


if __name__ == "__main__":
    sys.exit(main())
