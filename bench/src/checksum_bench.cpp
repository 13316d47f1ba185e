#include "checksum_bench.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iterator>
#include <vector>

#include "kvblob/support/crc32c.hpp"
#include "measure.hpp"

namespace kvblob::bench {

namespace {

struct ChecksumPoint {
    const char *path, *op;
    uint64_t size;
    double seconds, baseline_seconds;  // per call
};

// Calls per timed sample: enough that one sample spans tens of
// microseconds, so the clock's own cost is not in a small size's figure.
uint64_t calls_per_sample(uint64_t size)
{
    return std::max<uint64_t>(1, (uint64_t{256} << 10) / std::max<uint64_t>(size, 1));
}

double per_call(uint64_t calls, Seconds duration, const std::function<void()> &call)
{
    return median_call_seconds(
               [&] {
                   for (uint64_t i = 0; i < calls; ++i) call();
               },
               duration) /
           static_cast<double>(calls);
}

const char *band_name(size_t band)
{
    static const char *const names[] = {"under 2K", "2K-8K", "8K-32K", "32K up"};
    static_assert(std::size(names) == support::crc32c_bands);
    return names[band];
}

// Which path each size band takes and why: the calibration's own figures
// for the chosen path and the runner-up (crc32c_choice: timed at first use).
void print_choice(std::ostream &out)
{
    const auto &paths = support::crc32c_paths();
    const support::Crc32cChoice &c = support::crc32c_choice();
    char line[256];
    if (c.how == "measured")
        std::snprintf(line, sizeof line, "choice: measured at first use, %u rounds in %.2f ms (least ns per call)\n",
                      c.rounds, c.seconds * 1e3);
    else
        std::snprintf(line, sizeof line, "choice: %s\n", c.how.c_str());
    out << line;
    if (!c.warning.empty()) out << "choice: " << c.warning << "\n";
    std::snprintf(line, sizeof line, "%-9s %-5s %7s %-15s %9s   %-15s %9s\n", "band", "op", "timed", "takes", "ns",
                  "next fastest", "ns");
    out << line;
    for (size_t op = 0; op < 2; ++op)
        for (size_t band = 0; band < support::crc32c_bands; ++band) {
            const size_t chosen = c.path[op][band];
            const char *op_name = op == support::crc32c_plain ? "plain" : "copy";
            if (c.timings.size() != paths.size()) {
                std::snprintf(line, sizeof line, "%-9s %-5s %7zu %s\n", band_name(band), op_name,
                              support::crc32c_calibration_sizes[band], paths[chosen].name);
                out << line;
                continue;
            }
            size_t next = paths.size();
            for (size_t p = 0; p < paths.size(); ++p)
                if (p != chosen && (next == paths.size() || c.timings[p][op][band] < c.timings[next][op][band])) next = p;
            std::snprintf(line, sizeof line, "%-9s %-5s %7zu %-15s %9.1f   %-15s %9.1f\n", band_name(band), op_name,
                          support::crc32c_calibration_sizes[band], paths[chosen].name, c.timings[chosen][op][band],
                          next < paths.size() ? paths[next].name : "-",
                          next < paths.size() ? c.timings[next][op][band] : 0.0);
            out << line;
        }
}

}  // namespace

int run_checksum_bench(const ChecksumSettings &s, bool json, std::ostream &out)
{
    uint64_t largest = 0;
    for (uint64_t size : s.sizes) largest = std::max(largest, size);
    // Both buffers stay in place for the whole run: every path and the
    // baseline meet the same bytes, as hot as the last call left them.
    std::vector<uint8_t> src(largest), dst(largest);
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 131 + 7);
    volatile uint32_t sink = 0;

    // The choice first, as a driver's open makes it: on a CPU this run has
    // not yet warmed.
    support::crc32c_choice();
    const auto &paths = support::crc32c_paths();
    std::vector<ChecksumPoint> points;
    for (size_t k = 0; k < s.sizes.size(); ++k) {
        const uint64_t size = s.sizes[k];
        // Progress on stderr, as for a driver's points.
        std::fprintf(stderr, "[%zu/%zu] checksums of %llu bytes\n", k + 1, s.sizes.size(),
                     static_cast<unsigned long long>(size));
        const uint64_t calls = calls_per_sample(size);
        const double memcpy_seconds = per_call(calls, s.duration, [&] {
            std::memcpy(dst.data(), src.data(), size);
            sink = sink ^ dst[size ? size - 1 : 0];
        });
        for (const auto &path : paths) {
            // A figure for a path that gives another checksum would be a
            // figure for nothing.
            const uint32_t expected = paths.front().plain(0, src.data(), size);
            if (path.plain(0, src.data(), size) != expected || path.copy(0, dst.data(), src.data(), size) != expected ||
                std::memcmp(dst.data(), src.data(), size) != 0) {
                std::fprintf(stderr, "kvblob-bench: crc32c path %s disagrees with the portable one at %llu bytes\n",
                             path.name, static_cast<unsigned long long>(size));
                return 1;
            }
            points.push_back({path.name, "plain", size,
                              per_call(calls, s.duration, [&] { sink = sink ^ path.plain(0, src.data(), size); }),
                              memcpy_seconds});
            points.push_back({path.name, "copy", size,
                              per_call(calls, s.duration,
                                       [&] { sink = sink ^ path.copy(0, dst.data(), src.data(), size); }),
                              memcpy_seconds});
        }
    }

    char line[256];
    if (json) {
        out << "{\"checksums\":{\"algorithm\":\"crc32c\",\"points\":[";
        for (size_t i = 0; i < points.size(); ++i) {
            const ChecksumPoint &p = points[i];
            std::snprintf(line, sizeof line,
                          "%s{\"path\":\"%s\",\"op\":\"%s\",\"size\":%llu,\"ns\":%.1f,\"gbps\":%.3f,"
                          "\"baseline\":\"memcpy\",\"baseline_gbps\":%.3f,\"ratio_to_baseline\":%.3f}",
                          i ? "," : "", p.path, p.op, static_cast<unsigned long long>(p.size), p.seconds * 1e9,
                          static_cast<double>(p.size) / p.seconds / 1e9,
                          static_cast<double>(p.size) / p.baseline_seconds / 1e9, p.baseline_seconds / p.seconds);
            out << line;
        }
        out << "],\"choice\":{\"how\":\"" << support::crc32c_choice().how << "\",\"bands\":[";
        for (size_t band = 0; band < support::crc32c_bands; ++band) {
            const auto &c = support::crc32c_choice();
            std::snprintf(line, sizeof line, "%s{\"timed_size\":%zu,\"plain\":\"%s\",\"copy\":\"%s\"}", band ? "," : "",
                          support::crc32c_calibration_sizes[band], paths[c.path[support::crc32c_plain][band]].name,
                          paths[c.path[support::crc32c_fused_copy][band]].name);
            out << line;
        }
        out << "]}}}\n";
        return 0;
    }
    out << "checksums: CRC32C over bytes in cache, each path this CPU runs, alone (plain) and fused with a copy "
           "(copy), against memcpy of the same bytes; median of calls over "
        << s.duration.count()
        << " s each. crc32c and crc32c_copy take, per size band, the path the calibration at first use timed "
           "fastest (plugins/support/src/crc32c_choice.cpp): the choice follows the table\n";
    std::snprintf(line, sizeof line, "%-15s %-5s %9s %11s %8s %12s %6s\n", "path", "op", "size", "ns/call", "GB/s",
                  "memcpy GB/s", "ratio");
    out << line;
    for (const ChecksumPoint &p : points) {
        std::snprintf(line, sizeof line, "%-15s %-5s %9llu %11.1f %8.2f %12.2f %6.2f\n", p.path, p.op,
                      static_cast<unsigned long long>(p.size), p.seconds * 1e9,
                      static_cast<double>(p.size) / p.seconds / 1e9,
                      static_cast<double>(p.size) / p.baseline_seconds / 1e9, p.baseline_seconds / p.seconds);
        out << line;
    }
    print_choice(out);
    return 0;
}

}  // namespace kvblob::bench
