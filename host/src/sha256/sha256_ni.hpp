// SHA-256 on Intel's SHA extensions (SHA-NI: sha256rnds2 runs two rounds,
// sha256msg1/msg2 extend the message schedule four words at a time), as
// inline pieces: the byte compression and the block-key chain are built of
// the same block of rounds. The state lives as ABEF and CDGH, the order
// sha256rnds2 takes; message words as four vectors of four, W0 in lane 0.
#pragma once

#include "kvblob/host/sha256_compress.hpp"

#ifdef KVBLOB_SHA_NI
#include <immintrin.h>

#define KVBLOB_SHA_NI_TARGET __attribute__((target("sha,sse4.1"), always_inline)) inline

namespace kvblob::sha256_detail {

struct NiState {
    __m128i abef, cdgh;
};

// Each 32-bit lane's bytes reversed: big-endian words to this CPU's order
// and back.
KVBLOB_SHA_NI_TARGET __m128i ni_swap_words(__m128i v)
{
    return _mm_shuffle_epi8(v, _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL));
}

// Four message words from 16 bytes, each read big-endian.
KVBLOB_SHA_NI_TARGET __m128i ni_load_words(const uint8_t *bytes)
{
    return ni_swap_words(_mm_loadu_si128(reinterpret_cast<const __m128i *>(bytes)));
}

// Four words stored as 16 bytes, each big-endian.
KVBLOB_SHA_NI_TARGET void ni_store_words(__m128i words, uint8_t *bytes)
{
    _mm_storeu_si128(reinterpret_cast<__m128i *>(bytes), ni_swap_words(words));
}

// The state H0..H7 given as two vectors of words (H0 in lane 0 of dcba).
KVBLOB_SHA_NI_TARGET NiState ni_state(__m128i dcba, __m128i hgfe)
{
    const __m128i cdab = _mm_shuffle_epi32(dcba, 0xB1);
    const __m128i efgh = _mm_shuffle_epi32(hgfe, 0x1B);
    return {_mm_alignr_epi8(cdab, efgh, 8), _mm_blend_epi16(efgh, cdab, 0xF0)};
}

// The inverse: H0..H3 and H4..H7, H0 in lane 0. These are also the next
// message's words W0..W7 where a digest is hashed again.
KVBLOB_SHA_NI_TARGET void ni_words(NiState s, __m128i &dcba, __m128i &hgfe)
{
    const __m128i feba = _mm_shuffle_epi32(s.abef, 0x1B);
    const __m128i dchg = _mm_shuffle_epi32(s.cdgh, 0xB1);
    dcba = _mm_blend_epi16(feba, dchg, 0xF0);
    hgfe = _mm_alignr_epi8(dchg, feba, 8);
}

// s advanced over one 64-byte block whose words are w0..w3.
//
// Each group of four words feeds two sha256rnds2: the first reads W+K of
// two rounds from the low half of its message operand, the second needs the
// high half moved down. A shuffle would do that in a cycle, but on the port
// that sha256rnds2, sha256msg1/msg2 and the schedule's shuffles all need,
// which is what limits a chain of blocks; reading the half back from the
// stack takes a load port instead, at a few cycles more latency. So only
// the first late_groups groups, whose words come late on the serial path
// (a chain value the previous block just produced), are shuffled.
template <int late_groups>
KVBLOB_SHA_NI_TARGET void ni_block(NiState &s, __m128i w0, __m128i w1, __m128i w2, __m128i w3)
{
    const NiState was = s;
    __m128i w[4] = {w0, w1, w2, w3};  // the schedule's last sixteen words, four at a time
    __m128i wk[16];                   // each group's W+K, for the high halves
#pragma GCC unroll 16
    for (int group = 0; group < 16; ++group) {
        __m128i &now = w[group & 3];
        if (group >= 4) {
            const __m128i &back1 = w[(group - 1) & 3], &back2 = w[(group - 2) & 3], &back3 = w[(group - 3) & 3];
            const __m128i partial = _mm_add_epi32(_mm_sha256msg1_epu32(now, back3), _mm_alignr_epi8(back1, back2, 4));
            now = _mm_sha256msg2_epu32(partial, back1);
        }
        wk[group] = _mm_add_epi32(now, _mm_load_si128(reinterpret_cast<const __m128i *>(k + 4 * group)));
        s.cdgh = _mm_sha256rnds2_epu32(s.cdgh, s.abef, wk[group]);
        __m128i high;
        if (group < late_groups) {
            high = _mm_shuffle_epi32(wk[group], 0x0E);
        } else {
            // The store and the load stay (the compiler would turn them
            // back into a shuffle): the asm says it may change wk[group].
            asm("" : "+m"(wk[group]));
            high = _mm_loadl_epi64(reinterpret_cast<const __m128i *>(reinterpret_cast<const char *>(&wk[group]) + 8));
        }
        s.abef = _mm_sha256rnds2_epu32(s.abef, s.cdgh, high);
    }
    s.abef = _mm_add_epi32(s.abef, was.abef);
    s.cdgh = _mm_add_epi32(s.cdgh, was.cdgh);
}

// ni_block over 64 bytes of message.
KVBLOB_SHA_NI_TARGET void ni_block(NiState &s, const uint8_t *data)
{
    ni_block<0>(s, ni_load_words(data), ni_load_words(data + 16), ni_load_words(data + 32), ni_load_words(data + 48));
}

}  // namespace kvblob::sha256_detail

#endif
