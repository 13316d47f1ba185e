// What kvblob-bench prints: a table for people, JSON and CSV for machines,
// and an SVG plot of throughput against row size.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "measure.hpp"

namespace kvblob::bench {

struct Result {
    Point point;
    Measurement driver;
    std::optional<Measurement> baseline;
    std::string skipped;  // why the point was not measured, when it was not
    // driver / baseline: GB/s, or rows/s for probes (which move no bytes).
    std::optional<double> ratio() const;
    // Nanoseconds the driver took per row, per thread.
    double ns_per_row() const;
};

struct RunInfo {
    std::string driver_name, driver_version, driver_path, baseline_name, no_baseline_reason;
    std::vector<std::string> options;
    double duration_s = 0;
    unsigned rounds = 1;  // --rounds: alternated slices a point, driver and baseline
    uint64_t byte_budget = 0;
    std::string statistic = "mean";  // how throughput is reported (measure.hpp)
    unsigned load = 0;  // --load: busy threads beside every lane
    std::string wait = "host";  // --wait: how the driver lane waits for each operation
    std::string tier;           // --tier: which tier of the tiered driver the points measure
};

void print_table(std::ostream &out, const RunInfo &info, const std::vector<Result> &results);
void write_json(std::ostream &out, const RunInfo &info, const std::vector<Result> &results);
void write_csv(std::ostream &out, const RunInfo &info, const std::vector<Result> &results);
// Throughput (GB/s, log scale) against row size (log scale), one line per
// operation for the driver and one for its baseline.
void write_svg(std::ostream &out, const RunInfo &info, const std::vector<Result> &results);

}  // namespace kvblob::bench
