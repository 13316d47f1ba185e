// CRC32C as the bundled drivers compute it: against the standard check
// value, and against a bit-at-a-time reference across lengths and
// alignments that cross the three-stripe blocks of the hardware path; and
// the choice among the paths, from injected timings (no figure of this
// machine's is asserted).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
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

TEST_CASE("crc32c: every path, plain and copying, matches a bitwise reference at every length from 0 to 4200 bytes and unaligned starts")
{
    using namespace kvblob::support;
    constexpr size_t longest = 4200;
    std::vector<uint8_t> src(longest + 64), dst(longest + 128);
    fill_pattern(src.data(), src.size(), 23);
    for (size_t from : {0ul, 1ul, 7ul, 13ul, 63ul}) {
        // The reference of every prefix in one pass: the running register,
        // inverted, is the checksum of the bytes so far.
        std::vector<uint32_t> expected(longest + 1);
        uint32_t state = ~0u;
        expected[0] = 0;
        for (size_t i = 0; i < longest; ++i) {
            state ^= src[from + i];
            for (int k = 0; k < 8; ++k) state = (state >> 1) ^ (0x82F63B78u & (0u - (state & 1u)));
            expected[i + 1] = ~state;
        }
        const size_t to = (from * 5 + 3) % 64;  // the destination unaligned too, differently
        for (const auto &path : crc32c_paths()) {
            size_t plain_wrong = 0, copy_wrong = 0, bytes_wrong = 0, first_wrong = longest + 1;
            for (size_t n = 0; n <= longest; ++n) {
                const bool plain_ok = path.plain(0, src.data() + from, n) == expected[n];
                const bool copy_ok = path.copy(0, dst.data() + to, src.data() + from, n) == expected[n];
                const bool bytes_ok = std::memcmp(dst.data() + to, src.data() + from, n) == 0;
                plain_wrong += !plain_ok;
                copy_wrong += !copy_ok;
                bytes_wrong += !bytes_ok;
                if (!(plain_ok && copy_ok && bytes_ok)) first_wrong = std::min(first_wrong, n);
            }
            // One check per path and start, not 4201: a failure names the
            // first length that went wrong.
            CAPTURE(path.name);
            CAPTURE(from);
            CAPTURE(first_wrong);
            CHECK(plain_wrong == 0);
            CHECK(copy_wrong == 0);
            CHECK(bytes_wrong == 0);
        }
    }
}

namespace {

// Timings for paths whose ns at every op and band are given by at(p, op, band).
template <class F>
kvblob::support::Crc32cTimings timings_from(size_t paths, F at)
{
    kvblob::support::Crc32cTimings t(paths);
    for (size_t p = 0; p < paths; ++p)
        for (size_t op = 0; op < 2; ++op)
            for (size_t band = 0; band < kvblob::support::crc32c_bands; ++band) t[p][op][band] = at(p, op, band);
    return t;
}

}  // namespace

TEST_CASE("crc32c: the choice takes the path with the least time per op and size band, from injected timings")
{
    using namespace kvblob::support;
    const double inf = std::numeric_limits<double>::infinity();
    SUBCASE("the fastest wins in each band and op independently")
    {
        // Path 2 is fastest plain everywhere; copying, path 1 below 8 KiB
        // and path 2 from there (the shape one Intel CPU's figures once
        // showed, which a fixed rule then applied to every CPU).
        const auto t = timings_from(3, [](size_t p, size_t op, size_t band) {
            if (op == crc32c_plain) return p == 2 ? 40.0 : 100.0 + static_cast<double>(p);
            if (band < 2) return p == 1 ? 92.0 : p == 2 ? 115.0 : 800.0;
            return p == 2 ? 300.0 : p == 1 ? 310.0 : 3000.0;
        });
        const Crc32cChoice c = choose_crc32c_paths(t);
        CHECK(c.how == "measured");
        for (size_t band = 0; band < crc32c_bands; ++band) {
            CAPTURE(band);
            CHECK(c.path[crc32c_plain][band] == 2);
            CHECK(c.path[crc32c_fused_copy][band] == (band < 2 ? 1u : 2u));
        }
        CHECK(c.timings == t);
    }
    SUBCASE("an equal figure goes to the earlier path, and an untimed or NaN path is never chosen")
    {
        const auto t = timings_from(3, [&](size_t p, size_t op, size_t band) {
            if (band == 0) return p == 0 ? inf : 50.0;  // 1 and 2 tie
            if (band == 1) return p == 1 ? std::nan("") : p == 0 ? 90.0 : 80.0;
            if (band == 2) return op == crc32c_plain ? (p == 0 ? 10.0 : inf) : (p == 2 ? 10.0 : inf);
            return 70.0;  // all tie
        });
        const Crc32cChoice c = choose_crc32c_paths(t);
        for (size_t op = 0; op < 2; ++op) {
            CAPTURE(op);
            CHECK(c.path[op][0] == 1);
            CHECK(c.path[op][1] == 2);
            CHECK(c.path[op][2] == (op == crc32c_plain ? 0u : 2u));
            CHECK(c.path[op][3] == 0);
        }
    }
    SUBCASE("a band no path was timed in takes the widest path")
    {
        const auto t = timings_from(4, [&](size_t, size_t, size_t band) { return band == 3 ? inf : 1.0; });
        const Crc32cChoice c = choose_crc32c_paths(t);
        CHECK(c.path[crc32c_plain][3] == 3);
        CHECK(c.path[crc32c_fused_copy][3] == 3);
        CHECK(c.path[crc32c_plain][0] == 0);
    }
}

TEST_CASE("crc32c: the band of a size is the calibration size nearest it, and each calibration size is in its own band")
{
    using namespace kvblob::support;
    for (size_t band = 0; band < crc32c_bands; ++band) CHECK(crc32c_band(crc32c_calibration_sizes[band]) == band);
    CHECK(crc32c_band(0) == 0);
    CHECK(crc32c_band(2047) == 0);
    CHECK(crc32c_band(2048) == 1);
    CHECK(crc32c_band(8191) == 1);
    CHECK(crc32c_band(8192) == 2);
    CHECK(crc32c_band(32767) == 2);
    CHECK(crc32c_band(32768) == 3);
    CHECK(crc32c_band(size_t{1} << 40) == 3);
}

TEST_CASE("crc32c: KVBLOB_CRC32C_PATH pins a path this CPU runs, and any other value warns and measures")
{
    using namespace kvblob::support;
    const auto &paths = crc32c_paths();
    int measured = 0;
    auto measure = [&] {
        ++measured;
        Crc32cChoice c;
        c.how = "measured";
        for (auto &op : c.path) op.fill(paths.size() - 1);
        return c;
    };
    SUBCASE("unset or empty: measured, no warning")
    {
        for (const char *value : {static_cast<const char *>(nullptr), ""}) {
            const Crc32cChoice c = make_crc32c_choice(paths, value, measure);
            CHECK(c.warning.empty());
            CHECK(c.how == (paths.size() > 1 ? "measured" : "one path"));
        }
        CHECK(measured == (paths.size() > 1 ? 2 : 0));
    }
    SUBCASE("each path's name pins it, for every op and band, without measuring")
    {
        for (size_t i = 0; i < paths.size(); ++i) {
            CAPTURE(paths[i].name);
            const Crc32cChoice c = make_crc32c_choice(paths, paths[i].name, measure);
            CHECK(c.how == std::string("pinned by KVBLOB_CRC32C_PATH=") + paths[i].name);
            CHECK(c.warning.empty());
            for (const auto &op : c.path)
                for (size_t index : op) CHECK(index == i);
        }
        CHECK(measured == 0);
    }
    SUBCASE("a name no path has: a warning that names the value and the paths, then the measured choice")
    {
        const Crc32cChoice c = make_crc32c_choice(paths, "avx1024-quantum", measure);
        CHECK(c.warning.find("KVBLOB_CRC32C_PATH=avx1024-quantum names no CRC32C path") != std::string::npos);
        CHECK(c.warning.find("portable") != std::string::npos);
        CHECK(c.how == (paths.size() > 1 ? "measured" : "one path"));
    }
}

TEST_CASE("crc32c: this process's choice names paths this CPU runs, and where measured each is the fastest by its own figures")
{
    using namespace kvblob::support;
    const auto &paths = crc32c_paths();
    const Crc32cChoice &c = crc32c_choice();
    CAPTURE(c.how);
    for (const auto &op : c.path)
        for (size_t index : op) CHECK(index < paths.size());
    if (c.how != "measured") return;  // pinned by the environment, or one path
    REQUIRE(c.timings.size() == paths.size());
    CHECK(c.rounds >= 1);
    for (size_t op = 0; op < 2; ++op)
        for (size_t band = 0; band < crc32c_bands; ++band) {
            CAPTURE(op);
            CAPTURE(band);
            const double chosen = c.timings[c.path[op][band]][op][band];
            for (const auto &path : c.timings) CHECK(chosen <= path[op][band]);
        }
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
