#include "kvblob/support/crc32c.hpp"

#include <array>
#include <cstring>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
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
// Never inlined: inlined into the AVX-512 path below, GCC may compile its
// copies and loads with vector registers after that path's vzeroupper.
__attribute__((target("sse4.2"), noinline)) uint32_t crc_sse42(uint32_t crc, const uint8_t *p, size_t n)
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

__attribute__((target("sse4.2"), noinline)) uint32_t crc_copy_sse42(uint32_t crc, uint8_t *d, const uint8_t *s, size_t n)
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

// The rest of a checksum from n bytes on, copied to d as well with Copy:
// where every wider path ends.
template <bool Copy>
__attribute__((target("sse4.2"))) inline uint32_t crc_rest(uint32_t crc, uint8_t *d, const uint8_t *s, size_t n)
{
    if constexpr (Copy) return crc_copy_sse42(crc, d, s, n);
    return crc_sse42(crc, s, n);
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

// Three stripes at a time. With Copy, each block of three stripes is first
// copied (memcpy's wide loads and stores), then checksummed from the copy
// while it is still in the cache: a loop that moved eight bytes per crc32
// instruction through scalar loads and stores ran at half the speed.
template <bool Copy>
__attribute__((target("sse4.2"))) uint32_t crc_striped(uint32_t crc, uint8_t *d, const uint8_t *s, size_t n)
{
    const StripeShift &shift = stripe_shift();
    uint64_t c0 = crc;
    while (n >= 3 * stripe) {
        const uint8_t *from = s;
        if constexpr (Copy) {
            std::memcpy(d, s, 3 * stripe);
            from = d;  // checksummed from the copy, hot
        }
        uint64_t c1 = 0, c2 = 0;
        for (size_t i = 0; i < stripe; i += 8) {
            uint64_t a, b, c;
            std::memcpy(&a, from + i, 8);
            std::memcpy(&b, from + stripe + i, 8);
            std::memcpy(&c, from + 2 * stripe + i, 8);
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
    return crc_rest<Copy>(static_cast<uint32_t>(c0), d, s, n);
}

// Carry-less multiply folding (Intel, "Fast CRC Computation for Generic
// Polynomials Using PCLMULQDQ"), 256 bytes per step in four 512-bit
// registers, the bytes stored to the destination as they are loaded: one
// pass at close to the speed of a plain copy, where crc32 instructions
// alone stop at eight bytes a cycle.
//
// A 16-byte block B at bit distance F before a later block is congruent,
// modulo the polynomial, to H * x^(64+F) + L * x^F there (H: its first
// eight bytes, the high-degree half in the reflected order; L: the other
// eight). Each product is one carry-less multiply by a constant computed
// below, and the register of folded blocks keeps the checksum of everything
// folded so far: the raw CRC of those blocks, as a message, is the raw CRC
// of the bytes they stand for. The last 64 bytes of folded blocks and the
// tail are finished with crc32 instructions.
struct FoldConstants {
    uint64_t k_high, k_low;  // for H and for L
};

// x^e modulo the CRC32C polynomial, in the normal (unreflected) order.
uint32_t xpow_mod(uint32_t e)
{
    uint64_t r = 1;
    for (uint32_t i = 0; i < e; ++i) {
        r <<= 1;
        if (r >> 32) r ^= 0x11EDC6F41ull;
    }
    return static_cast<uint32_t>(r);
}

uint32_t reflect32(uint32_t v)
{
    uint32_t r = 0;
    for (int i = 0; i < 32; ++i)
        if (v & (1u << i)) r |= 1u << (31 - i);
    return r;
}

// The constants of a fold over F bits. A carry-less product of two
// reflected 64-bit values comes out multiplied by x once more than the
// product of what they stand for, hence the exponents one short.
FoldConstants fold_over(uint32_t bits)
{
    return {uint64_t{reflect32(xpow_mod(64 + bits - 1))} << 32, uint64_t{reflect32(xpow_mod(bits - 1))} << 32};
}

// The folded register, stored to lanes (its upper halves already cleared),
// reduced with crc32 instructions, then the bytes from at on. The lanes are
// read back one at a time through volatile: at -O3 GCC dropped the store
// and extracted them from the register after the vzeroupper (a register
// the vzeroupper leaves alone, zmm16), through ymm0, dirtying the upper
// halves again.
template <bool Copy>
__attribute__((target("sse4.2"))) inline uint32_t finish_fold(const uint64_t *lanes, size_t count, uint8_t *d,
                                                              const uint8_t *s, size_t at, size_t n)
{
    const volatile uint64_t *read = lanes;
    uint64_t c = 0;
    for (size_t i = 0; i < count; ++i) c = _mm_crc32_u64(c, read[i]);
    // d is null where nothing is copied: no offset applied to it then.
    return crc_rest<Copy>(static_cast<uint32_t>(c), Copy ? d + at : d, s + at, n - at);
}

// A folding path's two sets of constants, computed once: over the bytes
// its registers take in one step, and over one register's width (where the
// registers are folded into one, and the rest of the bytes into it).
struct FoldPair {
    FoldConstants step, width;
};

template <size_t StepBytes, size_t WidthBytes>
const FoldPair &fold_pair()
{
    static const FoldPair pair{fold_over(StepBytes * 8), fold_over(WidthBytes * 8)};
    return pair;
}

__attribute__((target("avx512f,vpclmulqdq"))) inline __m512i fold(__m512i acc, __m512i k, __m512i next)
{
    return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(acc, k, 0x00), _mm512_clmulepi64_epi128(acc, k, 0x11),
                                     next, 0x96);
}

// GCC 12's _mm512_broadcast_i32x4 passes an undefined vector as its unused
// merge source, which -Wmaybe-uninitialized reports at every use.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((target("avx512f"))) inline __m512i broadcast(const FoldConstants &c)
{
    return _mm512_broadcast_i32x4(_mm_set_epi64x(static_cast<long long>(c.k_low), static_cast<long long>(c.k_high)));
}
#pragma GCC diagnostic pop

// 64 bytes at s + at, stored to d + at as well with Copy.
template <bool Copy>
__attribute__((target("avx512f"))) inline __m512i load_block(uint8_t *d, const uint8_t *s, size_t at)
{
    const __m512i v = _mm512_loadu_si512(s + at);
    if constexpr (Copy) _mm512_storeu_si512(d + at, v);
    return v;
}

template <bool Copy>
__attribute__((target("avx512f,vpclmulqdq,sse4.2"))) uint32_t crc_fold512(uint32_t crc, uint8_t *d,
                                                                           const uint8_t *s, size_t n)
{
    if (n < 256) {
        return crc_rest<Copy>(crc, d, s, n);
    }
    // Before the first 512-bit instruction: a call made after it costs a
    // vzeroupper and the registers' reload.
    const FoldPair &tables = fold_pair<256, 64>();
    __m512i a0 = _mm512_xor_si512(load_block<Copy>(d, s, 0), _mm512_castsi128_si512(_mm_cvtsi32_si128(static_cast<int>(crc))));
    __m512i a1 = load_block<Copy>(d, s, 64), a2 = load_block<Copy>(d, s, 128), a3 = load_block<Copy>(d, s, 192);
    size_t at = 256;
    const __m512i k256 = broadcast(tables.step);
    for (; n - at >= 256; at += 256) {
        a0 = fold(a0, k256, load_block<Copy>(d, s, at));
        a1 = fold(a1, k256, load_block<Copy>(d, s, at + 64));
        a2 = fold(a2, k256, load_block<Copy>(d, s, at + 128));
        a3 = fold(a3, k256, load_block<Copy>(d, s, at + 192));
    }
    // The four registers into one, then 64 bytes at a time.
    const __m512i k64 = broadcast(tables.width);
    a1 = fold(a0, k64, a1);
    a2 = fold(a1, k64, a2);
    a3 = fold(a2, k64, a3);
    for (; n - at >= 64; at += 64) a3 = fold(a3, k64, load_block<Copy>(d, s, at));
    alignas(64) uint64_t folded[8];
    _mm512_store_si512(folded, a3);
    // The upper halves of the vector registers are clean again before any
    // other code runs. GCC leaves them dirty on the tail call below, and
    // every legacy SSE instruction after (the trailer's key digest, string
    // code) then paid a state transition: about 100 ns per 4 KiB row.
    _mm256_zeroupper();
    return finish_fold<Copy>(folded, std::size(folded), d, s, at, n);
}

// The same folding over 256-bit registers, for CPUs with VPCLMULQDQ but
// not AVX-512 (AMD Zen 3, Intel's hybrid cores): 128 bytes per step in
// four registers. Where the only other path was one chain of crc32
// instructions (rows under three stripes, 12 KiB, never reach the three
// streams), a 4 KiB row's copy and checksum took about 570 ns on a loaded
// Zen 3 core; this takes less than half of that, and about half at 64 KiB
// and 1 MiB as well (commit d2e4af3; docs/notes/2026-12-04-performance-experiments.md, "CRC32C on CPUs
// without VPCLMULQDQ").
__attribute__((target("avx2,vpclmulqdq"))) inline __m256i fold256(__m256i acc, __m256i k, __m256i next)
{
    return _mm256_xor_si256(_mm256_xor_si256(_mm256_clmulepi64_epi128(acc, k, 0x00),
                                             _mm256_clmulepi64_epi128(acc, k, 0x11)),
                            next);
}

__attribute__((target("avx2"))) inline __m256i broadcast256(const FoldConstants &c)
{
    return _mm256_broadcastsi128_si256(
        _mm_set_epi64x(static_cast<long long>(c.k_low), static_cast<long long>(c.k_high)));
}

// 32 bytes at s + at, stored to d + at as well with Copy.
template <bool Copy>
__attribute__((target("avx2"))) inline __m256i load_block256(uint8_t *d, const uint8_t *s, size_t at)
{
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(s + at));
    if constexpr (Copy) _mm256_storeu_si256(reinterpret_cast<__m256i *>(d + at), v);
    return v;
}

template <bool Copy>
__attribute__((target("avx2,vpclmulqdq,sse4.2"))) uint32_t crc_fold256(uint32_t crc, uint8_t *d,
                                                                        const uint8_t *s, size_t n)
{
    if (n < 128) {
        return crc_rest<Copy>(crc, d, s, n);
    }
    // Before the first 256-bit instruction, as in crc_fold512.
    const FoldPair &tables = fold_pair<128, 32>();
    __m256i a0 = _mm256_xor_si256(load_block256<Copy>(d, s, 0),
                                  _mm256_zextsi128_si256(_mm_cvtsi32_si128(static_cast<int>(crc))));
    __m256i a1 = load_block256<Copy>(d, s, 32), a2 = load_block256<Copy>(d, s, 64),
            a3 = load_block256<Copy>(d, s, 96);
    size_t at = 128;
    const __m256i k128 = broadcast256(tables.step);
    for (; n - at >= 128; at += 128) {
        a0 = fold256(a0, k128, load_block256<Copy>(d, s, at));
        a1 = fold256(a1, k128, load_block256<Copy>(d, s, at + 32));
        a2 = fold256(a2, k128, load_block256<Copy>(d, s, at + 64));
        a3 = fold256(a3, k128, load_block256<Copy>(d, s, at + 96));
    }
    const __m256i k32 = broadcast256(tables.width);
    a1 = fold256(a0, k32, a1);
    a2 = fold256(a1, k32, a2);
    a3 = fold256(a2, k32, a3);
    for (; n - at >= 32; at += 32) a3 = fold256(a3, k32, load_block256<Copy>(d, s, at));
    alignas(32) uint64_t folded[4];
    _mm256_store_si256(reinterpret_cast<__m256i *>(folded), a3);
    // Upper halves clean before any other code, for the reason crc_fold512
    // gives.
    _mm256_zeroupper();
    return finish_fold<Copy>(folded, std::size(folded), d, s, at, n);
}

// The same folding over 128-bit registers, for CPUs with PCLMULQDQ but not
// VPCLMULQDQ (AMD Zen 1 and 2, Intel before Ice Lake): 64 bytes per step
// in four registers. On such a CPU the crc32 instruction was the path, and
// on Zen 1 it runs at about 6 GB/s however many chains are in flight (one
// to six, timed alone); this runs at 9-10 GB/s there, a 4 KiB row's copy
// and checksum in about 440 ns instead of 820 (docs/notes/2026-12-04-performance-experiments.md, "CRC32C
// on CPUs without VPCLMULQDQ").
__attribute__((target("pclmul,sse4.2"))) inline __m128i fold128(__m128i acc, __m128i k, __m128i next)
{
    return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(acc, k, 0x00), _mm_clmulepi64_si128(acc, k, 0x11)),
                         next);
}

inline __m128i constants128(const FoldConstants &c)
{
    return _mm_set_epi64x(static_cast<long long>(c.k_low), static_cast<long long>(c.k_high));
}

// 16 bytes at s + at, stored to d + at as well with Copy.
template <bool Copy>
__attribute__((target("sse4.2"))) inline __m128i load_block128(uint8_t *d, const uint8_t *s, size_t at)
{
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + at));
    if constexpr (Copy) _mm_storeu_si128(reinterpret_cast<__m128i *>(d + at), v);
    return v;
}

template <bool Copy>
__attribute__((target("pclmul,sse4.2"))) uint32_t crc_fold128(uint32_t crc, uint8_t *d, const uint8_t *s,
                                                               size_t n)
{
    if (n < 64) {
        return crc_rest<Copy>(crc, d, s, n);
    }
    const FoldPair &tables = fold_pair<64, 16>();
    __m128i a0 = _mm_xor_si128(load_block128<Copy>(d, s, 0), _mm_cvtsi32_si128(static_cast<int>(crc)));
    __m128i a1 = load_block128<Copy>(d, s, 16), a2 = load_block128<Copy>(d, s, 32),
            a3 = load_block128<Copy>(d, s, 48);
    size_t at = 64;
    const __m128i k64 = constants128(tables.step);
    for (; n - at >= 64; at += 64) {
        a0 = fold128(a0, k64, load_block128<Copy>(d, s, at));
        a1 = fold128(a1, k64, load_block128<Copy>(d, s, at + 16));
        a2 = fold128(a2, k64, load_block128<Copy>(d, s, at + 32));
        a3 = fold128(a3, k64, load_block128<Copy>(d, s, at + 48));
    }
    const __m128i k16 = constants128(tables.width);
    a1 = fold128(a0, k16, a1);
    a2 = fold128(a1, k16, a2);
    a3 = fold128(a2, k16, a3);
    for (; n - at >= 16; at += 16) a3 = fold128(a3, k16, load_block128<Copy>(d, s, at));
    alignas(16) uint64_t folded[2];
    _mm_store_si128(reinterpret_cast<__m128i *>(folded), a3);
    return finish_fold<Copy>(folded, std::size(folded), d, s, at, n);
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

bool detect_folding128()
{
#if defined(__x86_64__)
    return __builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("pclmul");
#else
    return false;
#endif
}

bool detect_folding()
{
#if defined(__x86_64__)
    return __builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("vpclmulqdq");
#else
    return false;
#endif
}

bool detect_folding256()
{
#if defined(__x86_64__)
    return __builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("avx2") &&
           __builtin_cpu_supports("vpclmulqdq");
#else
    return false;
#endif
}

const bool hardware = detect_hardware();
const bool folding128 = detect_folding128();
const bool folding = detect_folding();
const bool folding256 = detect_folding256();

uint32_t plain_portable(uint32_t crc, const void *data, size_t n)
{
    return ~crc_portable(~crc, static_cast<const uint8_t *>(data), n);
}
uint32_t copy_portable(uint32_t crc, void *dst, const void *src, size_t n)
{
    std::memcpy(dst, src, n);
    return plain_portable(crc, dst, n);
}

#if defined(__x86_64__)
uint32_t plain_striped(uint32_t crc, const void *data, size_t n)
{
    return ~crc_striped<false>(~crc, nullptr, static_cast<const uint8_t *>(data), n);
}
uint32_t copy_striped(uint32_t crc, void *dst, const void *src, size_t n)
{
    return ~crc_striped<true>(~crc, static_cast<uint8_t *>(dst), static_cast<const uint8_t *>(src), n);
}
uint32_t plain_folded256(uint32_t crc, const void *data, size_t n)
{
    return ~crc_fold256<false>(~crc, nullptr, static_cast<const uint8_t *>(data), n);
}
uint32_t copy_folded256(uint32_t crc, void *dst, const void *src, size_t n)
{
    return ~crc_fold256<true>(~crc, static_cast<uint8_t *>(dst), static_cast<const uint8_t *>(src), n);
}
uint32_t plain_folded128(uint32_t crc, const void *data, size_t n)
{
    return ~crc_fold128<false>(~crc, nullptr, static_cast<const uint8_t *>(data), n);
}
uint32_t copy_folded128(uint32_t crc, void *dst, const void *src, size_t n)
{
    return ~crc_fold128<true>(~crc, static_cast<uint8_t *>(dst), static_cast<const uint8_t *>(src), n);
}
uint32_t plain_folded(uint32_t crc, const void *data, size_t n)
{
    return ~crc_fold512<false>(~crc, nullptr, static_cast<const uint8_t *>(data), n);
}
uint32_t copy_folded(uint32_t crc, void *dst, const void *src, size_t n)
{
    return ~crc_fold512<true>(~crc, static_cast<uint8_t *>(dst), static_cast<const uint8_t *>(src), n);
}
#endif

std::vector<Crc32cPath> detect_paths()
{
    std::vector<Crc32cPath> paths{{"portable", &plain_portable, &copy_portable}};
#if defined(__x86_64__)
    if (hardware) paths.push_back({"sse4.2-3way", &plain_striped, &copy_striped});
    if (folding128) paths.push_back({"sse4.2-pclmul", &plain_folded128, &copy_folded128});
    if (folding256) paths.push_back({"avx2-vpclmul", &plain_folded256, &copy_folded256});
    if (folding) paths.push_back({"avx512-vpclmul", &plain_folded, &copy_folded});
#endif
    return paths;
}

}  // namespace

bool crc32c_hardware() { return hardware; }

const std::vector<Crc32cPath> &crc32c_paths()
{
    static const std::vector<Crc32cPath> paths = detect_paths();
    return paths;
}

namespace {

// The chosen path per band as function pointers: a checksum's whole cost of
// the choice is the band's compare and an indirect call.
struct Dispatch {
    std::array<uint32_t (*)(uint32_t, const void *, size_t), crc32c_bands> plain{};
    std::array<uint32_t (*)(uint32_t, void *, const void *, size_t), crc32c_bands> copy{};
};

const Dispatch &dispatch()
{
    static const Dispatch d = [] {
        const auto &paths = crc32c_paths();
        const Crc32cChoice &choice = crc32c_choice();
        Dispatch out;
        for (size_t band = 0; band < crc32c_bands; ++band) {
            out.plain[band] = paths.at(choice.path[crc32c_plain][band]).plain;
            out.copy[band] = paths.at(choice.path[crc32c_fused_copy][band]).copy;
        }
        return out;
    }();
    return d;
}

}  // namespace

uint32_t crc32c(uint32_t crc, const void *data, size_t n) { return dispatch().plain[crc32c_band(n)](crc, data, n); }

uint32_t crc32c_copy(uint32_t crc, void *dst, const void *src, size_t n)
{
    return dispatch().copy[crc32c_band(n)](crc, dst, src, n);
}

}  // namespace kvblob::support
