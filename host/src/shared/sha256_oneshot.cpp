#include "kvblob/host/sha256_oneshot.hpp"

#include <atomic>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define KVBLOB_SHA_NI 1
#endif

namespace kvblob {

namespace {

constexpr uint32_t k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

constexpr uint32_t initial[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

constexpr uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

uint32_t load_be(const uint8_t *p)
{
    return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

// FIPS 180-4, 6.2.2, one 64-byte block at a time.
void compress_portable(uint32_t state[8], const uint8_t *data, size_t blocks)
{
    for (; blocks--; data += 64) {
        uint32_t w[64];
        for (int t = 0; t < 16; ++t) w[t] = load_be(data + 4 * t);
        for (int t = 16; t < 64; ++t) {
            const uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
            const uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
            w[t] = w[t - 16] + s0 + w[t - 7] + s1;
        }
        uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
        uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
        for (int t = 0; t < 64; ++t) {
            const uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[t] + w[t];
            const uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
            h = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
        }
        state[0] += a, state[1] += b, state[2] += c, state[3] += d;
        state[4] += e, state[5] += f, state[6] += g, state[7] += h;
    }
}

#ifdef KVBLOB_SHA_NI
// The same with the SHA extensions (Intel's SHA-NI: sha256rnds2 runs two
// rounds, sha256msg1/msg2 extend the message schedule four words at a time).
// The state lives as ABEF and CDGH, the order sha256rnds2 takes.
__attribute__((target("sha,sse4.1"))) void compress_sha_ni(uint32_t state[8], const uint8_t *data, size_t blocks)
{
    const __m128i byte_swap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
    __m128i dcba = _mm_loadu_si128(reinterpret_cast<const __m128i *>(state));
    __m128i hgfe = _mm_loadu_si128(reinterpret_cast<const __m128i *>(state + 4));
    const __m128i cdab = _mm_shuffle_epi32(dcba, 0xB1);
    const __m128i efgh = _mm_shuffle_epi32(hgfe, 0x1B);
    __m128i abef = _mm_alignr_epi8(cdab, efgh, 8);
    __m128i cdgh = _mm_blend_epi16(efgh, cdab, 0xF0);
    for (; blocks--; data += 64) {
        const __m128i abef_was = abef, cdgh_was = cdgh;
        __m128i w[4];  // the schedule's last sixteen words, four at a time
#pragma GCC unroll 16
        for (int group = 0; group < 16; ++group) {
            __m128i &now = w[group & 3];
            if (group < 4) {
                now = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i *>(data + 16 * group)), byte_swap);
            } else {
                const __m128i &back1 = w[(group - 1) & 3], &back2 = w[(group - 2) & 3], &back3 = w[(group - 3) & 3];
                now = _mm_sha256msg2_epu32(
                    _mm_add_epi32(_mm_sha256msg1_epu32(now, back3), _mm_alignr_epi8(back1, back2, 4)), back1);
            }
            __m128i msg = _mm_add_epi32(now, _mm_loadu_si128(reinterpret_cast<const __m128i *>(k + 4 * group)));
            cdgh = _mm_sha256rnds2_epu32(cdgh, abef, msg);
            msg = _mm_shuffle_epi32(msg, 0x0E);
            abef = _mm_sha256rnds2_epu32(abef, cdgh, msg);
        }
        abef = _mm_add_epi32(abef, abef_was);
        cdgh = _mm_add_epi32(cdgh, cdgh_was);
    }
    const __m128i feba = _mm_shuffle_epi32(abef, 0x1B);
    const __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);
    dcba = _mm_blend_epi16(feba, dchg, 0xF0);
    hgfe = _mm_alignr_epi8(dchg, feba, 8);
    _mm_storeu_si128(reinterpret_cast<__m128i *>(state), dcba);
    _mm_storeu_si128(reinterpret_cast<__m128i *>(state + 4), hgfe);
}

bool cpu_has_sha_ni()
{
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    const bool sha = b & (1u << 29);
    if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
    const bool ssse3 = c & (1u << 9), sse41 = c & (1u << 19);
    return sha && ssse3 && sse41;
}
#endif

using Compress = void (*)(uint32_t *, const uint8_t *, size_t);

Compress best_compression()
{
#ifdef KVBLOB_SHA_NI
    if (cpu_has_sha_ni()) return compress_sha_ni;
#endif
    return compress_portable;
}

const Compress best = best_compression();
std::atomic<bool> portable_forced{false};

}  // namespace

std::array<uint8_t, 32> sha256_oneshot(const void *data, size_t size)
{
    const Compress compress = portable_forced.load(std::memory_order_relaxed) ? compress_portable : best;
    uint32_t state[8];
    std::memcpy(state, initial, sizeof state);
    const auto *bytes = static_cast<const uint8_t *>(data);
    const size_t whole = size / 64;
    compress(state, bytes, whole);
    // The rest, the 0x80 byte, zeros and the length in bits: one block, or
    // two when the rest leaves no room for the length.
    uint8_t last[128] = {};
    const size_t rest = size - 64 * whole;
    if (rest) std::memcpy(last, bytes + 64 * whole, rest);
    last[rest] = 0x80;
    const size_t tail_blocks = rest < 56 ? 1 : 2;
    const uint64_t bits = uint64_t(size) * 8;
    for (int i = 0; i < 8; ++i) last[64 * tail_blocks - 1 - i] = static_cast<uint8_t>(bits >> (8 * i));
    compress(state, last, tail_blocks);
    std::array<uint8_t, 32> out;
    for (int i = 0; i < 8; ++i)
        for (int b = 0; b < 4; ++b) out[4 * i + b] = static_cast<uint8_t>(state[i] >> (24 - 8 * b));
    return out;
}

const char *sha256_compression_name()
{
    return !portable_forced.load() && best != compress_portable ? "sha-ni" : "portable";
}

void sha256_force_portable(bool on) { portable_forced.store(on); }

}  // namespace kvblob
