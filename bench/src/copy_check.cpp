// kvblob-bench-copy-check: the memcpy baseline against every copy method
// this machine offers, measured in one process by the same harness, for
// puts and gets. Exits 1 when the baseline falls more than 20% short of the
// fastest method at some point: a baseline that is not this machine's best
// copy would make the memory driver's ratios look better than they are.
//
// Each side's throughput here is its median batch's (a batch interrupted by
// other work on the machine is an outlier, on whichever side it falls).
//
// Usage: kvblob-bench-copy-check [SIZES [BATCH [SECONDS]]]
//        (defaults 4K,64K,256K,1M 32 0.05)
#include <algorithm>
#include <cstdio>
#include <string>

#include "baseline.hpp"
#include "copy_methods.hpp"
#include "kvblob/cli/quantities.hpp"

using namespace kvblob;
using namespace kvblob::bench;

int main(int argc, char **argv)
{
    std::vector<uint64_t> sizes;
    uint64_t batch = 32;
    Budget budget;
    budget.duration = Seconds(0.05);
    try {
        sizes = parse_sizes(argc > 1 ? argv[1] : "4K,64K,256K,1M", 1ull << 30);
        if (argc > 2) batch = cli::parse_count(argv[2], 1u << 16);
        if (argc > 3) budget.duration = Seconds(std::stod(argv[3]));
    } catch (const std::exception &e) {
        std::fprintf(stderr, "kvblob-bench-copy-check: %s\n", e.what());
        return 2;
    }
    // Each side measured in turns, three times, its best kept; a point that
    // falls short is measured again, up to five times, before it counts as
    // short: the machine may be busy with other work for part of the run,
    // and a busy moment can fall on either side.
    constexpr int rounds = 3, attempts = 5;
    bool short_of_best = false;
    std::printf("%-4s %6s %5s  %-14s %9s  %-34s %9s %6s\n", "op", "size", "batch", "fastest", "GB/s", "baseline",
                "GB/s", "share");
    const auto &methods = copy_methods();
    const auto median_gbps = [](const Point &p, const Measurement &m) {
        return m.complete.p50_us > 0 ? static_cast<double>(p.size * p.batch) / m.complete.p50_us / 1e3 : 0.0;
    };
    for (BenchOp op : {BenchOp::put, BenchOp::get})
        for (uint64_t size : sizes) {
            const Point p{op, size, batch, 1};
            std::vector<double> method_gbps;
            double baseline_gbps = 0, share = 0;
            std::string chosen;
            for (int attempt = 0; attempt < attempts && share < 0.8; ++attempt) {
                method_gbps.assign(methods.size(), 0);
                baseline_gbps = 0;
                for (int round = 0; round < rounds; ++round) {
                    const Baseline auto_choice = memcpy_baseline();
                    const Measurement m =
                        measure(1, budget, [&](unsigned lane) { return auto_choice.make_lane(p, lane); });
                    if (median_gbps(p, m) > baseline_gbps) baseline_gbps = median_gbps(p, m), chosen = m.method;
                    for (size_t i = 0; i < methods.size(); ++i) {
                        const Baseline forced = memcpy_baseline(&methods[i]);
                        const Measurement f =
                            measure(1, budget, [&](unsigned lane) { return forced.make_lane(p, lane); });
                        method_gbps[i] = std::max(method_gbps[i], median_gbps(p, f));
                    }
                }
                share = baseline_gbps / *std::max_element(method_gbps.begin(), method_gbps.end());
            }
            const size_t best = static_cast<size_t>(std::max_element(method_gbps.begin(), method_gbps.end()) -
                                                    method_gbps.begin());
            std::printf("%-4s %6s %5llu  %-14s %9.3f  %-34s %9.3f %6.2f%s\n", to_string(op), size_label(size).c_str(),
                        static_cast<unsigned long long>(batch), methods[best].name, method_gbps[best], chosen.c_str(),
                        baseline_gbps, share, share < 0.8 ? "  SHORT OF THE FASTEST" : "");
            short_of_best = short_of_best || share < 0.8;
        }
    std::printf("%s\n", short_of_best ? "the memcpy baseline is not this machine's fastest copy"
                                      : "the memcpy baseline is within 20% of this machine's fastest copy");
    return short_of_best ? 1 : 0;
}
