// kvblob-bench --metrics off,on: what the host's metrics cost. The same
// driver is loaded twice, once with counting off (LoadOptions::count_metrics)
// and once on, and each point is measured on both in alternated rounds in
// one run, so both see the same machine; the cost is the median of the
// rounds' differences, per row and per operation.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "kvblob/host/plugin.hpp"
#include "plan.hpp"

namespace kvblob::bench {

struct MetricsCostSettings {
    std::string driver_spec;
    LoadOptions load;
    Options options;
    std::vector<Point> points;
    Budget budget;      // per round and side
    unsigned rounds = 5;
};

// Prints the table (or JSON); exit code as kvblob-bench's.
int run_metrics_cost(const MetricsCostSettings &settings, bool json, std::ostream &out);

}  // namespace kvblob::bench
