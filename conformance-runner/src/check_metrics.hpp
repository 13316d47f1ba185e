// What a check did to the driver, carried from the check's process to its
// report: --json gives each check a "metrics" object of the counters that
// moved, so a vendor sees what a failing check asked of the driver and what
// it answered. The battery speaks to the driver's table itself (Context),
// not through the host's guard, so it counts its own calls: operations by
// kind, refusals by status, rows by result as the driver gave them. The
// driver's log lines by level come from the host's metrics
// (kvblob/host/metrics.hpp), which counts them for every driver it opened.
// Counted over the check's body, not its cleanup.
#pragma once

#include <kvblob/kvblob.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kvblob/host/types.hpp"

namespace kvblob::conformance {

using CheckMetrics = std::vector<std::pair<std::string, uint64_t>>;

// In a check's process, before its body: counting starts from zero, and the
// drivers it closes are counted too.
void start_counting_check();
// Context's calls, as they happen (from any of the check's threads).
void count_submit(kvblob_op_t *op, OpKind kind, kvblob_status status);
void count_results(kvblob_op_t *op, const std::vector<kvblob_row_status_t> &rows);
// After its body: what moved, as the record it signs ("metrics NAME=N ...").
std::string check_metrics_record();

// The counters of the last such record among a child's records; names are
// [A-Za-z0-9_.-] and values digits, or the word is dropped (a record is the
// child's, but the runner writes JSON only of what it has checked).
CheckMetrics check_metrics_of(const std::vector<std::string> &records);
bool is_check_metrics_record(const std::string &record);
// {"put.submitted":3,...}, or null when there are none.
std::string check_metrics_json(const CheckMetrics &metrics);

}  // namespace kvblob::conformance
