// Lowercase hex of bytes, the one spelling keys and digests use. Block keys
// write 32 digits per key, thousands per request, so the 16-byte form is
// SIMD where the CPU has SSE2 (every x86-64) and the rest a 256-entry table:
// no per-digit branches, no snprintf.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace kvblob {

namespace hex_detail {

// The two digits of every byte value, built at compile time.
struct Pairs {
    char digits[256][2];
    constexpr Pairs() : digits{}
    {
        constexpr char hex[] = "0123456789abcdef";
        for (int b = 0; b < 256; ++b) {
            digits[b][0] = hex[b >> 4];
            digits[b][1] = hex[b & 0xF];
        }
    }
};
inline constexpr Pairs pairs;

}  // namespace hex_detail

// Writes 2 * size digits at out (not terminated).
inline void write_hex(const uint8_t *bytes, size_t size, char *out)
{
    for (size_t i = 0; i < size; ++i) std::memcpy(out + 2 * i, hex_detail::pairs.digits[bytes[i]], 2);
}

// Writes the 32 digits of 16 bytes at out.
inline void write_hex16(const uint8_t *bytes, char *out)
{
#if defined(__SSE2__)
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i *>(bytes));
    const __m128i low_nibble = _mm_set1_epi8(0x0F);
    const __m128i high = _mm_and_si128(_mm_srli_epi16(v, 4), low_nibble);
    const __m128i low = _mm_and_si128(v, low_nibble);
    // Each nibble to its digit: '0' + n, and 'a' - '0' - 10 more past 9.
    const auto digit = [](__m128i n) {
        const __m128i past_nine = _mm_and_si128(_mm_cmpgt_epi8(n, _mm_set1_epi8(9)), _mm_set1_epi8('a' - '0' - 10));
        return _mm_add_epi8(_mm_add_epi8(n, _mm_set1_epi8('0')), past_nine);
    };
    // The high nibble's digit first: interleave high, low byte by byte.
    _mm_storeu_si128(reinterpret_cast<__m128i *>(out), digit(_mm_unpacklo_epi8(high, low)));
    _mm_storeu_si128(reinterpret_cast<__m128i *>(out + 16), digit(_mm_unpackhi_epi8(high, low)));
#else
    write_hex(bytes, 16, out);
#endif
}

}  // namespace kvblob
