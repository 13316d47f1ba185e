// SHA-256 of one message in memory, with no context to set up or tear
// down, where a library's per-call cost (OpenSSL's EVP: fetch, init,
// update, final) would take longer than the hashing: block keys' salt, and
// any short message. A request's chain of block keys has a kernel of its
// own (sha256_chain.hpp) on the same compression. The compression runs on
// the CPU's SHA extensions where it has them (x86-64 SHA-NI), in portable
// C++ elsewhere; both give the digest FIPS 180-4 defines
// (tests/host/test_sha256.cpp holds them to OpenSSL).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace kvblob {

// The digest of size bytes at data.
std::array<uint8_t, 32> sha256_oneshot(const void *data, size_t size);

// Which compression sha256_oneshot and sha256_chain use on this machine:
// "sha-ni" or "portable"; force_portable makes them use the portable one
// (tests).
const char *sha256_compression_name();
void sha256_force_portable(bool on);

}  // namespace kvblob
