// Which CRC32C path runs at which size, chosen by timing each on this CPU
// (kvblob/support/crc32c.hpp). The rules this replaces were each measured
// on one machine and wrong on another: "the 256-bit folding below 64 KiB
// when copying" cost an AMD EPYC with AVX-512 about 70 ns per 4 KiB row
// (76 ns against 144), and "every AMD CPU runs crc32 like Zen 1" was
// measured on Zen 1 alone.
#include "kvblob/support/crc32c.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>

namespace kvblob::support {

namespace {

using Clock = std::chrono::steady_clock;

constexpr double untimed = std::numeric_limits<double>::infinity();

// The whole calibration, warm-up round included, stays within this.
constexpr double budget_seconds = 0.002;

// Calls per timed sample at a size: a sample of at least 16 KiB, so the
// clock's own cost (about 20 ns) is not in a small size's figure.
size_t calls_at(size_t size) { return std::max<size_t>(1, 16384 / size); }

// The source and the destination of the calls, each a batch of 32 rows of
// 4 KiB: together larger than a core's first level cache and within its
// second on the CPUs with these paths (512 KiB and more).
constexpr size_t ring_bytes = 128 * 1024;
static_assert(ring_bytes % crc32c_calibration_sizes.back() == 0);

// Bytes that do not compress to a pattern any path could favour, eight at
// a time (n is a multiple of eight).
void fill(uint8_t *p, size_t n)
{
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i + 8 <= n; i += 8) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        std::memcpy(p + i, &x, 8);
    }
}

}  // namespace

bool find_crc32c_path(const std::vector<Crc32cPath> &paths, const std::string &name, size_t &index)
{
    for (size_t i = 0; i < paths.size(); ++i)
        if (name == paths[i].name) {
            index = i;
            return true;
        }
    return false;
}

Crc32cChoice choose_crc32c_paths(const Crc32cTimings &timings)
{
    Crc32cChoice c;
    c.how = "measured";
    c.timings = timings;
    for (size_t op = 0; op < 2; ++op)
        for (size_t band = 0; band < crc32c_bands; ++band) {
            size_t best = timings.empty() ? 0 : timings.size() - 1;
            double best_ns = untimed;
            for (size_t p = 0; p < timings.size(); ++p) {
                const double ns = timings[p][op][band];
                if (ns < best_ns) {  // false for NaN: a figure that is no time is never chosen
                    best = p;
                    best_ns = ns;
                }
            }
            c.path[op][band] = best;
        }
    return c;
}

Crc32cTimings time_crc32c_paths(const std::vector<Crc32cPath> &paths, double budget, unsigned &rounds)
{
    const auto started = Clock::now();
    // 64-byte aligned, as the stores' buffers and most engines' rows are.
    auto release = [](uint8_t *p) { std::free(p); };
    std::unique_ptr<uint8_t, decltype(release)> src(static_cast<uint8_t *>(std::aligned_alloc(64, ring_bytes)), release),
        dst(static_cast<uint8_t *>(std::aligned_alloc(64, ring_bytes)), release);
    Crc32cTimings best(paths.size());
    for (auto &path : best)
        for (auto &op : path) op.fill(untimed);
    rounds = 0;
    if (!src || !dst) return best;
    fill(src.get(), ring_bytes);
    std::memset(dst.get(), 0, ring_bytes);  // its pages mapped before any timing
    volatile uint32_t sink = 0;  // the calls' results are used: none is optimised away

    // Each call takes the next slot of the rings: a row's bytes and its
    // destination are in the cache but not in its first level, as a batch's
    // rows are. Timed on one slot again and again, the 512-bit folding
    // copied 4 KiB in 74 ns against the 256-bit one's 100 on one Intel
    // CPU; over rings of 128 KiB, as a batch of 32 such rows, 100 against
    // 76, and in the memory driver the 256-bit one's puts were the faster.
    size_t slot = 0;
    // One round: every path, op and size once, the paths alternated within
    // each size so that a pause of this thread (another process's turn on
    // the core) costs one figure of one round, not one path's every figure.
    auto round = [&](bool counted) {
        for (size_t band = 0; band < crc32c_bands; ++band) {
            const size_t size = crc32c_calibration_sizes[band], calls = calls_at(size), slots = ring_bytes / size;
            for (size_t op = 0; op < 2; ++op)
                for (size_t p = 0; p < paths.size(); ++p) {
                    // The table (paths' first) is timed at the smallest size
                    // alone where another path runs: 25 times the slowest
                    // other path's time at 4 KiB and more on every CPU with
                    // one (2.1 us against 80 ns for a 4 KiB copy), it would
                    // take most of the budget and never be chosen.
                    if (p == 0 && paths.size() > 1 && band > 0) continue;
                    uint32_t crc = 0;
                    const auto t0 = Clock::now();
                    for (size_t i = 0; i < calls; ++i) {
                        const size_t at = (slot++ % slots) * size;
                        if (op == crc32c_plain)
                            crc ^= paths[p].plain(crc, src.get() + at, size);
                        else
                            crc ^= paths[p].copy(crc, dst.get() + at, src.get() + at, size);
                    }
                    const double ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count() /
                                      static_cast<double>(calls);
                    sink = sink ^ crc;
                    if (counted) best[p][op][band] = std::min(best[p][op][band], ns);
                }
        }
    };
    round(false);
    constexpr unsigned most_rounds = 32;
    for (auto last = Clock::now(); rounds < most_rounds;) {
        round(true);
        ++rounds;
        const auto now = Clock::now();
        // Another round only if one as long as this one still fits.
        if (std::chrono::duration<double>(now - started + (now - last)).count() > budget) break;
        last = now;
    }
    return best;
}

Crc32cChoice make_crc32c_choice(const std::vector<Crc32cPath> &paths, const char *pinned,
                                const std::function<Crc32cChoice()> &measure)
{
    std::string warning;
    if (pinned && *pinned) {
        size_t index = 0;
        if (find_crc32c_path(paths, pinned, index)) {
            Crc32cChoice c;
            for (auto &op : c.path) op.fill(index);
            c.how = std::string("pinned by KVBLOB_CRC32C_PATH=") + pinned;
            return c;
        }
        std::string names;
        for (const auto &p : paths) names += std::string(names.empty() ? "" : ", ") + p.name;
        warning = std::string("KVBLOB_CRC32C_PATH=") + pinned + " names no CRC32C path this CPU runs (" + names +
                  "); choosing by measurement instead";
    }
    Crc32cChoice c;
    if (paths.size() == 1) {
        c.how = "one path";
    } else {
        c = measure();
    }
    c.warning = warning;
    return c;
}

const Crc32cChoice &crc32c_choice()
{
    static const Crc32cChoice choice = [] {
        const auto &paths = crc32c_paths();
        Crc32cChoice c = make_crc32c_choice(paths, std::getenv("KVBLOB_CRC32C_PATH"), [&] {
            const auto t0 = Clock::now();
            unsigned rounds = 0;
            Crc32cTimings timings = time_crc32c_paths(paths, budget_seconds, rounds);
            Crc32cChoice measured = choose_crc32c_paths(timings);
            measured.rounds = rounds;
            measured.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
            return measured;
        });
        // No host to log through here (the checksum is a library function):
        // the one line goes to stderr, where a pinned reproduction is run.
        if (!c.warning.empty()) std::fprintf(stderr, "kvblob: %s\n", c.warning.c_str());
        return c;
    }();
    return choice;
}

}  // namespace kvblob::support
