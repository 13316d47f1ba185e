// kvblob-bench --completion: how long an engine waits for an operation, from
// the call that submits it until the host's wait returns with its results
// final and its access ended. Each of the driver's modes (its `mode` option:
// the memory driver's blocking and background) is measured twice in one run:
// notified (the driver loaded at ABI 1.1, the host's wait sleeping until the
// driver announces) and polled (the same driver loaded at ABI 1.0, where the
// host's wait asks again and again, as it did before notification).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "kvblob/host/plugin.hpp"
#include "plan.hpp"

namespace kvblob::bench {

struct CompletionRow {
    std::string mode;  // the driver's mode option, or "-" when it has none
    std::string wait;  // "notified" or "polled"
    uint64_t size = 0;
    uint64_t ops = 0;
    double p50_us = 0, p99_us = 0, avg_us = 0;
    std::string skipped;  // why this row was not measured
};

// One row per (mode, wait, size): one-row gets of size bytes, one at a time,
// until the budget's time is spent.
std::vector<CompletionRow> measure_completion(const std::string &driver_spec, const LoadOptions &load,
                                              const Options &options, const std::vector<std::string> &modes,
                                              const std::vector<uint64_t> &sizes, const Budget &budget);

void print_completion(std::ostream &out, const std::string &driver, const std::vector<CompletionRow> &rows);
void write_completion_json(std::ostream &out, const std::string &driver, const std::vector<CompletionRow> &rows);

}  // namespace kvblob::bench
