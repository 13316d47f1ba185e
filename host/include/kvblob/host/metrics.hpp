// What the host counts for every driver it opened: operations, refusals by
// rule, rows by result, bytes, latencies, registered and pinned memory, the
// driver's log lines and its breaks of the contract. The host sees every
// call through one boundary, so it counts them alike for every driver.
//
// Counting is always on and costs a few atomic additions per operation (no
// lock on the row path; kvblob-bench --metrics measures it). Reading is a
// snapshot of plain numbers that never waits for a driver: a scrape during a
// driver's slowest call, or while it closes, answers at once.
//
// docs/metrics.md lists every metric prometheus_text() writes.
#pragma once

#include <kvblob/kvblob.h>

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "kvblob/host/types.hpp"

namespace kvblob {

// Upper bounds of the latency histograms' buckets, in nanoseconds, from 1 µs
// to 10 s (an in-memory get of a few rows to a remote store's timeout); a
// last bucket (+Inf) takes the rest.
inline constexpr std::array<uint64_t, 22> latency_bucket_bounds_ns = {
    1'000,       2'500,       5'000,       10'000,        25'000,        50'000,        100'000,        250'000,
    500'000,     1'000'000,   2'500'000,   5'000'000,     10'000'000,    25'000'000,    50'000'000,     100'000'000,
    250'000'000, 500'000'000, 1'000'000'000, 2'500'000'000, 5'000'000'000, 10'000'000'000};

struct HistogramSnapshot {
    // Observations per bucket (not cumulative); the last is above every bound.
    std::array<uint64_t, latency_bucket_bounds_ns.size() + 1> buckets{};
    uint64_t count = 0;  // the sum of buckets
    uint64_t sum_ns = 0;
};

// One operation kind's counters (put, get, probe or remove).
struct KindMetrics {
    // Every submit: admitted, or refused by the host or the driver.
    uint64_t submitted = 0;
    // Refused operations, by the rule the refusal names: the host's own
    // (R-ADM-..., R-CAP-1) or one a driver cited; "driver" when the driver
    // refused without citing one.
    std::map<std::string, uint64_t> refused;
    // Rows of final operations by result, indexed by kvblob_row_result
    // (index 0, PENDING, stays 0): counted once, as the host reports them.
    std::array<uint64_t, KVBLOB_ROW_RESULT_LAST + 1> rows{};
    // Bytes of READY rows: what a put stored or a get filled.
    uint64_t ready_bytes = 0;
    // From submit until the host first saw the operation final.
    HistogramSnapshot until_final;
    // From final until the host saw the driver's access end (R-ACC-1).
    HistogramSnapshot access_end_after_final;
};

// How the metrics name a log level (log_lines' index): the `level` label.
inline constexpr std::array<const char *, KVBLOB_LOG_MISBEHAVING + 1> metrics_level_names = {
    "debug", "info", "warn", "error", "misbehaving"};

struct MetricsSnapshot {
    std::string driver;  // the plugin's name
    std::string label;   // the instance label the engine chose ("" when none)
    std::array<KindMetrics, 4> kinds{};  // indexed by OpKind
    uint64_t ops_in_flight = 0;  // admitted and not yet released
    uint64_t regions = 0;
    uint64_t region_bytes = 0;
    // Registered bytes that stay pinned for the life of the process, because
    // an operation naming them could not prove its access ended (R-REG-2).
    uint64_t pinned_bytes = 0;
    // The driver's own log lines, indexed by kvblob_log_level.
    std::array<uint64_t, KVBLOB_LOG_MISBEHAVING + 1> log_lines{};
    // Answers the host corrected or refused at run time, by the rule broken.
    std::map<std::string, uint64_t> contract_breaks;
    // The driver's declared access-end bound (R-ACC-2); 0 when it declares none.
    uint64_t access_end_bound_ns = 0;
    // Operations whose access ended later after final than that bound.
    uint64_t access_end_over_bound = 0;

    const KindMetrics &of(OpKind kind) const { return kinds[static_cast<size_t>(kind)]; }
};

// A snapshot of every driver this process has open (opened and not yet
// closed; a driver kept open for good because it could not be closed stays
// listed), in the order they were opened.
std::vector<MetricsSnapshot> metrics_of_open_drivers();

// For a tool that runs drivers to the end one after another and wants to
// know what each did (the conformance battery, per check): once asked to
// keep them, the last snapshot of every driver that closes is kept until
// taken. Off by default, so an engine that opens and closes drivers for
// ever keeps nothing.
void keep_metrics_of_closed_drivers(bool keep);
std::vector<MetricsSnapshot> take_metrics_of_closed_drivers();

// The Prometheus text exposition format 0.0.4 of snapshots: one family per
// metric, each with its HELP and TYPE, one series per driver and label (the
// label="..." of every series; Prometheus keeps "instance" for its target).
// Label values are escaped; every page is whole, whatever the names hold.
std::string prometheus_text(const std::vector<MetricsSnapshot> &snapshots);

// snapshots added into one, whatever their drivers and labels (those of
// the first), for a total over several opens.
MetricsSnapshot metrics_total(const std::vector<MetricsSnapshot> &snapshots);

// Why label cannot be an instance label ("" when it can): at most
// max_metrics_label bytes of UTF-8, with no control character but newline
// and tab (a dashboard shows it; the exposition escapes the newline).
inline constexpr size_t max_metrics_label = 256;
std::string metrics_label_problem(std::string_view label);

// One metric family as the exposition writes it: for the operator's page
// (docs/metrics.md) and the test that holds that page to the code.
struct MetricFamily {
    const char *name;
    const char *type;    // counter, gauge or histogram
    const char *labels;  // beside driver and label, comma-separated
    const char *help;
};
const std::vector<MetricFamily> &metric_families();

}  // namespace kvblob
