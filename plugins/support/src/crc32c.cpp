#include "kvblob/support/crc32c.hpp"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace kvblob::support {

namespace {

constexpr uint32_t poly = 0x82F63B78u;  // reflected Castagnoli polynomial

struct Tables {
    std::array<std::array<uint32_t, 256>, 8> t{};
    constexpr Tables()
    {
        for (uint32_t i = 0; i < 256; ++i) {
            uint32_t c = i;
            for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (poly & (0u - (c & 1u)));
            t[0][i] = c;
        }
        for (int s = 1; s < 8; ++s)
            for (uint32_t i = 0; i < 256; ++i) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
    }
};
constexpr Tables tables;

uint32_t crc_portable(uint32_t crc, const uint8_t *p, size_t n)
{
    const auto &t = tables.t;
    while (n >= 8) {
        uint64_t v;
        std::memcpy(&v, p, 8);
        v ^= crc;
        crc = t[7][v & 0xFF] ^ t[6][(v >> 8) & 0xFF] ^ t[5][(v >> 16) & 0xFF] ^ t[4][(v >> 24) & 0xFF] ^
              t[3][(v >> 32) & 0xFF] ^ t[2][(v >> 40) & 0xFF] ^ t[1][(v >> 48) & 0xFF] ^ t[0][v >> 56];
        p += 8;
        n -= 8;
    }
    while (n--) crc = (crc >> 8) ^ t[0][(crc ^ *p++) & 0xFF];
    return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t crc_sse42(uint32_t crc, const uint8_t *p, size_t n)
{
    uint64_t c = crc;
    while (n >= 8) {
        uint64_t v;
        std::memcpy(&v, p, 8);
        c = _mm_crc32_u64(c, v);
        p += 8;
        n -= 8;
    }
    uint32_t c32 = static_cast<uint32_t>(c);
    while (n--) c32 = _mm_crc32_u8(c32, *p++);
    return c32;
}

__attribute__((target("sse4.2"))) uint32_t crc_copy_sse42(uint32_t crc, uint8_t *d, const uint8_t *s, size_t n)
{
    uint64_t c = crc;
    while (n >= 32) {
        uint64_t v[4];
        std::memcpy(v, s, 32);
        std::memcpy(d, v, 32);
        c = _mm_crc32_u64(c, v[0]);
        c = _mm_crc32_u64(c, v[1]);
        c = _mm_crc32_u64(c, v[2]);
        c = _mm_crc32_u64(c, v[3]);
        s += 32;
        d += 32;
        n -= 32;
    }
    std::memcpy(d, s, n);
    return crc_sse42(static_cast<uint32_t>(c), s, n);
}

// One crc32 instruction has a latency of three cycles and a throughput of
// one per cycle, so a single chain of them runs at a third of the speed the
// unit can. Long buffers are cut into blocks of three stripes, each stripe
// checksummed in its own chain, and the three results joined: the raw CRC
// register is linear, so crc(A||B) = shift(crc(A), |B|) ^ crc0(B), where
// shift advances a state over |B| zero bytes.
constexpr size_t stripe = 4096;

// shift() over one stripe, as four byte-indexed tables (the 32 columns of
// the GF(2) matrix, grouped by byte).
struct StripeShift {
    std::array<std::array<uint32_t, 256>, 4> t{};
    StripeShift()
    {
        static const uint8_t zeros[stripe] = {};
        uint32_t column[32];
        for (int bit = 0; bit < 32; ++bit) column[bit] = crc_sse42(1u << bit, zeros, stripe);
        for (int k = 0; k < 4; ++k)
            for (uint32_t b = 0; b < 256; ++b) {
                uint32_t v = 0;
                for (int bit = 0; bit < 8; ++bit)
                    if (b & (1u << bit)) v ^= column[8 * k + bit];
                t[k][b] = v;
            }
    }
    uint32_t operator()(uint32_t c) const
    {
        return t[0][c & 0xFF] ^ t[1][(c >> 8) & 0xFF] ^ t[2][(c >> 16) & 0xFF] ^ t[3][c >> 24];
    }
};

const StripeShift &stripe_shift()
{
    static const StripeShift shift;
    return shift;
}

// Three stripes at a time; with Copy, the bytes are copied in the same pass.
template <bool Copy>
__attribute__((target("sse4.2"))) uint32_t crc_striped(uint32_t crc, uint8_t *d, const uint8_t *s, size_t n)
{
    const StripeShift &shift = stripe_shift();
    uint64_t c0 = crc;
    while (n >= 3 * stripe) {
        uint64_t c1 = 0, c2 = 0;
        for (size_t i = 0; i < stripe; i += 8) {
            uint64_t a, b, c;
            std::memcpy(&a, s + i, 8);
            std::memcpy(&b, s + stripe + i, 8);
            std::memcpy(&c, s + 2 * stripe + i, 8);
            if constexpr (Copy) {
                std::memcpy(d + i, &a, 8);
                std::memcpy(d + stripe + i, &b, 8);
                std::memcpy(d + 2 * stripe + i, &c, 8);
            }
            c0 = _mm_crc32_u64(c0, a);
            c1 = _mm_crc32_u64(c1, b);
            c2 = _mm_crc32_u64(c2, c);
        }
        c0 = shift(static_cast<uint32_t>(c0)) ^ static_cast<uint32_t>(c1);
        c0 = shift(static_cast<uint32_t>(c0)) ^ static_cast<uint32_t>(c2);
        s += 3 * stripe;
        if constexpr (Copy) d += 3 * stripe;
        n -= 3 * stripe;
    }
    if constexpr (Copy) return crc_copy_sse42(static_cast<uint32_t>(c0), d, s, n);
    return crc_sse42(static_cast<uint32_t>(c0), s, n);
}
#endif

bool detect_hardware()
{
#if defined(__x86_64__)
    return __builtin_cpu_supports("sse4.2");
#else
    return false;
#endif
}

const bool hardware = detect_hardware();

}  // namespace

bool crc32c_hardware() { return hardware; }

uint32_t crc32c(uint32_t crc, const void *data, size_t n)
{
    auto p = static_cast<const uint8_t *>(data);
    crc = ~crc;
#if defined(__x86_64__)
    if (hardware) return ~crc_striped<false>(crc, nullptr, p, n);
#endif
    return ~crc_portable(crc, p, n);
}

uint32_t crc32c_copy(uint32_t crc, void *dst, const void *src, size_t n)
{
#if defined(__x86_64__)
    if (hardware)
        return ~crc_striped<true>(~crc, static_cast<uint8_t *>(dst), static_cast<const uint8_t *>(src), n);
#endif
    std::memcpy(dst, src, n);
    return crc32c(crc, dst, n);
}

}  // namespace kvblob::support
