// CRC32C as the bundled drivers compute it: against the standard check
// value, and against a bit-at-a-time reference across lengths and
// alignments that cross the three-stripe blocks of the hardware path.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "kvblob/host/batch.hpp"
#include "kvblob/tools/fill_pattern.hpp"
#include "kvblob/support/crc32c.hpp"

// batch.hpp's helpers, in namespace kvblob like all of the public API.
using kvblob::fill_pattern;

namespace {

uint32_t reference_crc32c(const uint8_t *p, size_t n)
{
    uint32_t crc = ~0u;
    for (size_t i = 0; i < n; ++i) {
        crc ^= p[i];
        for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
    }
    return ~crc;
}

}  // namespace

TEST_CASE("crc32c: the check value of \"123456789\" is 0xE3069283")
{
    const char *text = "123456789";
    CHECK(kvblob::support::crc32c(0, text, 9) == 0xE3069283u);
}

TEST_CASE("crc32c: plain and fused-copy checksums match a bitwise reference at every block boundary")
{
    using namespace kvblob::support;
    std::vector<uint8_t> src(64 * 1024 + 64), dst(src.size());
    fill_pattern(src.data(), src.size(), 5);
    for (size_t n : {0ul, 1ul, 7ul, 8ul, 31ul, 63ul, 64ul, 65ul, 127ul, 128ul, 129ul, 255ul, 256ul, 4096ul, 12287ul, 12288ul, 12289ul, 24576ul + 13, 65535ul, 65536ul}) {
        for (size_t offset : {0ul, 3ul}) {
            CAPTURE(n);
            CAPTURE(offset);
            const uint32_t expected = reference_crc32c(src.data() + offset, n);
            CHECK(crc32c(0, src.data() + offset, n) == expected);
            std::fill(dst.begin(), dst.end(), 0);
            CHECK(crc32c_copy(0, dst.data(), src.data() + offset, n) == expected);
            CHECK(std::memcmp(dst.data(), src.data() + offset, n) == 0);
            // Continuing a checksum across two calls gives the one-call answer.
            const size_t half = n / 2;
            CHECK(crc32c(crc32c(0, src.data() + offset, half), src.data() + offset + half, n - half) == expected);
        }
    }
}

TEST_CASE("crc32c: every implementation this CPU runs gives the portable one's checksum, at random sizes and alignments")
{
    using namespace kvblob::support;
    const auto &paths = crc32c_paths();
    REQUIRE(!paths.empty());
    CHECK(std::string(paths.front().name) == "portable");
    std::vector<uint8_t> src(300 * 1024), dst(src.size() + 64);
    fill_pattern(src.data(), src.size(), 11);
    uint64_t state = 0x9E3779B97F4A7C15ull;  // a fixed sequence: a failure reruns as it failed
    auto next = [&] {
        state ^= state << 13, state ^= state >> 7, state ^= state << 17;
        return state;
    };
    for (int trial = 0; trial < 400; ++trial) {
        // Mostly small and mid sizes, where the paths switch over; some up
        // to the whole buffer.
        const size_t limit = trial % 4 == 0 ? src.size() - 64 : trial % 4 == 1 ? 20000 : 1100;
        const size_t n = next() % limit;
        const size_t from = next() % 64, to = next() % 64;
        const uint32_t seed = trial % 3 == 0 ? 0 : static_cast<uint32_t>(next());
        CAPTURE(n);
        CAPTURE(from);
        CAPTURE(to);
        const uint32_t expected = paths.front().plain(seed, src.data() + from, n);
        for (const auto &path : paths) {
            CAPTURE(path.name);
            CHECK(path.plain(seed, src.data() + from, n) == expected);
            std::fill(dst.begin(), dst.end(), 0xA5);
            CHECK(path.copy(seed, dst.data() + to, src.data() + from, n) == expected);
            CHECK(std::memcmp(dst.data() + to, src.data() + from, n) == 0);
            // Not a byte before or after the destination is written.
            CHECK(std::count(dst.begin(), dst.begin() + to, 0xA5) == static_cast<long>(to));
            CHECK(std::count(dst.begin() + to + n, dst.end(), 0xA5) == static_cast<long>(dst.size() - to - n));
        }
        CHECK(crc32c(seed, src.data() + from, n) == expected);
    }
    // The reference check value through each path.
    for (const auto &path : paths) CHECK(path.plain(0, "123456789", 9) == 0xE3069283u);
}

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>

namespace {

// XINUSE (xgetbv with ECX=1): which register states are not in their
// initial state. Bit 2 is the upper halves of ymm0-15, bit 6 the upper
// halves of zmm0-15.
constexpr uint64_t dirty_upper = (1u << 2) | (1u << 6);

bool xinuse_readable()
{
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid_count(0xD, 1, &a, &b, &c, &d)) return false;
    return (a >> 2) & 1u;
}

__attribute__((target("xsave"))) uint64_t xinuse() { return _xgetbv(1); }

}  // namespace

TEST_CASE("crc32c: every path leaves the vector registers' upper halves clean, so the SSE code after it pays no state transition")
{
    // A path that returned with them dirty made every legacy SSE
    // instruction after it (the trailer's key digest, string code) pay a
    // transition: about 100 ns more per 4 KiB row stored.
    if (!xinuse_readable()) {
        MESSAGE("skipped: this CPU does not report which register states are in use (XGETBV with ECX=1)");
        return;
    }
    using namespace kvblob::support;
    std::vector<uint8_t> src(64 * 1024), dst(src.size());
    fill_pattern(src.data(), src.size(), 5);
    for (const auto &path : crc32c_paths()) {
        CAPTURE(path.name);
        for (size_t n : {size_t{100}, size_t{4096}, size_t{4096 + 40}, src.size()}) {
            CAPTURE(n);
            REQUIRE((xinuse() & dirty_upper) == 0);  // clean before, or the check below proves nothing
            const uint32_t plain = path.plain(0, src.data(), n);
            const uint64_t after_plain = xinuse();
            const uint32_t copied = path.copy(0, dst.data(), src.data(), n);
            const uint64_t after_copy = xinuse();
            CHECK(plain == copied);
            CHECK((after_plain & dirty_upper) == 0);
            CHECK((after_copy & dirty_upper) == 0);
        }
    }
}
#endif
