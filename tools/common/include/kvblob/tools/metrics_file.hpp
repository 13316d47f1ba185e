// --metrics-out FILE, as the tools and the example engine take it: the
// metrics of a run, written at its end in Prometheus' text format (what
// /metrics would have served), for CI to keep or promtool to check.
#pragma once

#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "kvblob/host/metrics.hpp"

namespace kvblob::tools {

inline void write_metrics_file(const std::string &path, const std::vector<MetricsSnapshot> &snapshots)
{
    std::ofstream out(path);
    out << prometheus_text(snapshots);
    if (!out.flush()) throw std::runtime_error("cannot write the metrics to " + path);
}

}  // namespace kvblob::tools
