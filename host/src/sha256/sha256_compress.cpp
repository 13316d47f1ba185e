#include "kvblob/host/sha256_compress.hpp"

#include <atomic>

#include "kvblob/host/sha256_oneshot.hpp"
#include "sha256_ni.hpp"

#ifdef KVBLOB_SHA_NI
#include <cpuid.h>
#endif

namespace kvblob {

namespace sha256_detail {

namespace {

constexpr uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

#ifdef KVBLOB_SHA_NI
bool cpu_has_sha_ni()
{
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    const bool sha = b & (1u << 29);
    if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
    const bool ssse3 = c & (1u << 9), sse41 = c & (1u << 19);
    return sha && ssse3 && sse41;
}
const bool has_sha_ni = cpu_has_sha_ni();
#else
const bool has_sha_ni = false;
#endif

std::atomic<bool> portable_forced{false};

}  // namespace

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
__attribute__((target("sha,sse4.1"))) void compress_sha_ni(uint32_t state[8], const uint8_t *data, size_t blocks)
{
    __m128i dcba = _mm_loadu_si128(reinterpret_cast<const __m128i *>(state));
    __m128i hgfe = _mm_loadu_si128(reinterpret_cast<const __m128i *>(state + 4));
    NiState s = ni_state(dcba, hgfe);
    for (; blocks--; data += 64) ni_block(s, data);
    ni_words(s, dcba, hgfe);
    _mm_storeu_si128(reinterpret_cast<__m128i *>(state), dcba);
    _mm_storeu_si128(reinterpret_cast<__m128i *>(state + 4), hgfe);
}
#endif

bool use_sha_ni() { return has_sha_ni && !portable_forced.load(std::memory_order_relaxed); }

}  // namespace sha256_detail

const char *sha256_compression_name() { return sha256_detail::use_sha_ni() ? "sha-ni" : "portable"; }

void sha256_force_portable(bool on) { sha256_detail::portable_forced.store(on); }

}  // namespace kvblob
