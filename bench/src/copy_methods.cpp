#include "copy_methods.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace kvblob::bench {

namespace {

using Clock = std::chrono::steady_clock;

void copy_glibc(uint8_t *dst, const uint8_t *src, size_t n) { std::memcpy(dst, src, n); }

#if defined(__x86_64__)
void copy_rep_movsb(uint8_t *dst, const uint8_t *src, size_t n)
{
    asm volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
}

__attribute__((target("sse2"))) void copy_sse2(uint8_t *d, const uint8_t *s, size_t n)
{
    for (; n >= 64; n -= 64, s += 64, d += 64) {
        const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s));
        const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + 16));
        const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + 32));
        const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + 48));
        _mm_storeu_si128(reinterpret_cast<__m128i *>(d), a);
        _mm_storeu_si128(reinterpret_cast<__m128i *>(d + 16), b);
        _mm_storeu_si128(reinterpret_cast<__m128i *>(d + 32), c);
        _mm_storeu_si128(reinterpret_cast<__m128i *>(d + 48), e);
    }
    std::memcpy(d, s, n);
}

// Loads and stores of W bytes, four at a time; with Stream, the stores
// bypass the cache (after a head that aligns the destination), which wins
// where the destination would not fit in it anyway.
template <bool Stream>
__attribute__((target("avx2"))) void copy_avx2(uint8_t *d, const uint8_t *s, size_t n)
{
    if (Stream && n >= 256) {
        const size_t head = (32 - (reinterpret_cast<uintptr_t>(d) & 31)) & 31;
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(d), _mm256_loadu_si256(reinterpret_cast<const __m256i *>(s)));
        d += head, s += head, n -= head;
    }
    for (; n >= 128; n -= 128, s += 128, d += 128) {
        const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(s));
        const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(s + 32));
        const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(s + 64));
        const __m256i e = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(s + 96));
        if constexpr (Stream) {
            _mm256_stream_si256(reinterpret_cast<__m256i *>(d), a);
            _mm256_stream_si256(reinterpret_cast<__m256i *>(d + 32), b);
            _mm256_stream_si256(reinterpret_cast<__m256i *>(d + 64), c);
            _mm256_stream_si256(reinterpret_cast<__m256i *>(d + 96), e);
        } else {
            _mm256_storeu_si256(reinterpret_cast<__m256i *>(d), a);
            _mm256_storeu_si256(reinterpret_cast<__m256i *>(d + 32), b);
            _mm256_storeu_si256(reinterpret_cast<__m256i *>(d + 64), c);
            _mm256_storeu_si256(reinterpret_cast<__m256i *>(d + 96), e);
        }
    }
    if constexpr (Stream) _mm_sfence();
    for (; n >= 32; n -= 32, s += 32, d += 32)
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(d), _mm256_loadu_si256(reinterpret_cast<const __m256i *>(s)));
    std::memcpy(d, s, n);
}

template <bool Stream>
__attribute__((target("avx512f"))) void copy_avx512(uint8_t *d, const uint8_t *s, size_t n)
{
    if (Stream && n >= 512) {
        const size_t head = (64 - (reinterpret_cast<uintptr_t>(d) & 63)) & 63;
        _mm512_storeu_si512(d, _mm512_loadu_si512(s));
        d += head, s += head, n -= head;
    }
    for (; n >= 256; n -= 256, s += 256, d += 256) {
        const __m512i a = _mm512_loadu_si512(s);
        const __m512i b = _mm512_loadu_si512(s + 64);
        const __m512i c = _mm512_loadu_si512(s + 128);
        const __m512i e = _mm512_loadu_si512(s + 192);
        if constexpr (Stream) {
            _mm512_stream_si512(reinterpret_cast<__m512i *>(d), a);
            _mm512_stream_si512(reinterpret_cast<__m512i *>(d + 64), b);
            _mm512_stream_si512(reinterpret_cast<__m512i *>(d + 128), c);
            _mm512_stream_si512(reinterpret_cast<__m512i *>(d + 192), e);
        } else {
            _mm512_storeu_si512(d, a);
            _mm512_storeu_si512(d + 64, b);
            _mm512_storeu_si512(d + 128, c);
            _mm512_storeu_si512(d + 192, e);
        }
    }
    if constexpr (Stream) _mm_sfence();
    for (; n >= 64; n -= 64, s += 64, d += 64) _mm512_storeu_si512(d, _mm512_loadu_si512(s));
    std::memcpy(d, s, n);
}
#endif

std::vector<CopyMethod> detect()
{
    std::vector<CopyMethod> m{{"glibc-memcpy", &copy_glibc}};
#if defined(__x86_64__)
    m.push_back({"rep-movsb", &copy_rep_movsb});
    m.push_back({"sse2", &copy_sse2});
    if (__builtin_cpu_supports("avx2")) {
        m.push_back({"avx2", &copy_avx2<false>});
        m.push_back({"avx2-nt", &copy_avx2<true>});
    }
    if (__builtin_cpu_supports("avx512f")) {
        m.push_back({"avx512", &copy_avx512<false>});
        m.push_back({"avx512-nt", &copy_avx512<true>});
    }
#endif
    return m;
}

// One method's throughput on job: whole batches, at least three and for at
// least min_time, the fastest of them kept. The fastest, not the mean: on a
// machine shared with other work, a batch that was interrupted says nothing
// about the method.
double time_one(const CopyMethod &method, const CopyJob &job)
{
    constexpr auto min_time = std::chrono::microseconds(200);
    auto best = Clock::duration::max();
    const auto start = Clock::now();
    for (int batches = 0; batches < 3 || Clock::now() - start < min_time; ++batches) {
        const auto t0 = Clock::now();
        copy_rows(method, job);
        best = std::min(best, Clock::now() - t0);
    }
    const double seconds = std::max(std::chrono::duration<double>(best).count(), 1e-9);
    return static_cast<double>(job.size * job.rows) / seconds / 1e9;
}

}  // namespace

const std::vector<CopyMethod> &copy_methods()
{
    static const std::vector<CopyMethod> methods = detect();
    return methods;
}

const CopyMethod *copy_method(const std::string &name)
{
    for (const auto &m : copy_methods())
        if (name == m.name) return &m;
    return nullptr;
}

void copy_rows(const CopyMethod &method, const CopyJob &job)
{
    for (uint64_t r = 0; r < job.rows; ++r) method.copy(job.dst + r * job.size, job.src + r * job.size, job.size);
}

std::vector<CopyTiming> time_copy_methods(const CopyJob &job, unsigned rounds)
{
    const auto &methods = copy_methods();
    std::vector<CopyTiming> best;
    for (const auto &m : methods) {
        copy_rows(m, job);  // first touches, and the caches as a lane leaves them
        best.push_back({&m, 0});
    }
    for (unsigned round = 0; round < std::max(rounds, 1u); ++round)
        for (auto &t : best) t.gbps = std::max(t.gbps, time_one(*t.method, job));
    return best;
}

const CopyMethod &fastest_copy(const CopyJob &job)
{
    const auto timings = time_copy_methods(job);
    return *std::max_element(timings.begin(), timings.end(), [](const CopyTiming &a, const CopyTiming &b) {
                return a.gbps < b.gbps;
            })->method;
}

unsigned page_offset(const void *p) { return static_cast<unsigned>(reinterpret_cast<uintptr_t>(p) & 4095); }

std::string alignment_of(const void *dst, const void *src)
{
    return "to/from page offset " + std::to_string(page_offset(dst)) + "/" + std::to_string(page_offset(src));
}

}  // namespace kvblob::bench
