// SHA-256's compression (FIPS 180-4, 6.2.2), the project's one (tests/
// architecture/one_sha256.py keeps it so), under the incremental digest
// (sha256.hpp: plugin files, the battery's signed reports), the one-shot
// digest and the block-key chain: the constants, the portable compression,
// and which compression this machine runs (the SHA extensions where the CPU
// has them, chosen once by CPUID, at load: reading it is safe in a signal
// handler).
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define KVBLOB_SHA_NI 1
#endif

namespace kvblob::sha256_detail {

alignas(16) inline constexpr uint32_t k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

alignas(16) inline constexpr uint32_t initial[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                                    0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

inline uint32_t load_be(const uint8_t *p)
{
    return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

inline void store_be(uint32_t v, uint8_t *p)
{
    for (int b = 0; b < 4; ++b) p[b] = static_cast<uint8_t>(v >> (24 - 8 * b));
}

// Writes the padding after the rest bytes of a message (those past its
// whole blocks) at tail, which holds them and room for two blocks: the
// 0x80 byte, zeros, and the message's length in bits. Returns how many
// blocks tail then spans: one, or two when the rest leaves no room.
inline size_t write_padding(uint8_t *tail, size_t rest, uint64_t message_bytes)
{
    const size_t blocks = rest < 56 ? 1 : 2;
    tail[rest] = 0x80;
    for (size_t i = rest + 1; i < 64 * blocks - 8; ++i) tail[i] = 0;
    const uint64_t bits = message_bytes * 8;
    for (int i = 0; i < 8; ++i) tail[64 * blocks - 1 - i] = static_cast<uint8_t>(bits >> (8 * i));
    return blocks;
}

// state advanced over blocks whole 64-byte blocks at data.
void compress_portable(uint32_t state[8], const uint8_t *data, size_t blocks);
#ifdef KVBLOB_SHA_NI
void compress_sha_ni(uint32_t state[8], const uint8_t *data, size_t blocks);
#endif

// Whether this call should use the SHA extensions: the CPU has them and
// tests have not forced the portable compression (sha256_force_portable).
bool use_sha_ni();

}  // namespace kvblob::sha256_detail
