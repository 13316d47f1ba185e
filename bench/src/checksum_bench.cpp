#include "checksum_bench.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
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
        out << "]}}\n";
        return 0;
    }
    out << "checksums: CRC32C over bytes in cache, each path this CPU runs, alone (plain) and fused with a copy "
           "(copy), against memcpy of the same bytes; median of calls over "
        << s.duration.count() << " s each; crc32c picks among them by CPU and size (plugins/support/src/crc32c.cpp)\n";
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
    return 0;
}

}  // namespace kvblob::bench
