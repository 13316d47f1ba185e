#include "metrics.hpp"

#include <string>
#include <vector>

#include "gil.hpp"

namespace kvblob::python {

namespace {


py::dict histogram_dict(const HistogramSnapshot &h)
{
    py::dict d;
    py::list bounds, buckets;
    for (uint64_t b : latency_bucket_bounds_ns) bounds.append(static_cast<double>(b) / 1e9);
    for (uint64_t n : h.buckets) buckets.append(n);
    d["bounds_seconds"] = bounds;  // the last bucket, one more than bounds, is above them all
    d["buckets"] = buckets;
    d["count"] = h.count;
    d["sum_seconds"] = static_cast<double>(h.sum_ns) / 1e9;
    return d;
}

py::dict by_rule(const std::map<std::string, uint64_t> &counts)
{
    py::dict d;
    for (const auto &[rule, n] : counts) d[py::str(rule)] = n;
    return d;
}

}  // namespace

py::dict metrics_dict(const MetricsSnapshot &s)
{
    py::dict out, kinds, logs;
    out["driver"] = s.driver;
    out["label"] = s.label;
    for (size_t k = 0; k < s.kinds.size(); ++k) {
        const KindMetrics &m = s.kinds[k];
        py::dict kind, rows;
        kind["submitted"] = m.submitted;
        kind["refused"] = by_rule(m.refused);
        for (kvblob_row_result r = KVBLOB_ROW_READY; r <= KVBLOB_ROW_RESULT_LAST; ++r)
            rows[kvblob_row_result_name(r)] = m.rows[static_cast<size_t>(r)];
        kind["rows"] = rows;
        kind["ready_bytes"] = m.ready_bytes;
        kind["until_final"] = histogram_dict(m.until_final);
        kind["access_end_after_final"] = histogram_dict(m.access_end_after_final);
        kinds[to_string(static_cast<OpKind>(k))] = kind;
    }
    out["kinds"] = kinds;
    out["ops_in_flight"] = s.ops_in_flight;
    out["regions"] = s.regions;
    out["region_bytes"] = s.region_bytes;
    out["pinned_bytes"] = s.pinned_bytes;
    for (size_t l = 0; l < s.log_lines.size(); ++l) logs[metrics_level_names[l]] = s.log_lines[l];
    out["log_lines"] = logs;
    out["contract_breaks"] = by_rule(s.contract_breaks);
    out["access_end_bound_seconds"] = static_cast<double>(s.access_end_bound_ns) / 1e9;
    out["access_end_over_bound"] = s.access_end_over_bound;
    return out;
}

void bind_metrics(py::module_ &m)
{
    m.def(
        "metrics_of_open_drivers",
        [] {
            const std::vector<MetricsSnapshot> all = without_gil([] { return metrics_of_open_drivers(); });
            py::list out;
            for (const auto &s : all) out.append(metrics_dict(s));
            return out;
        },
        "A dict of counters for every driver this process has open (Driver.metrics() for one)");
    m.def(
        "prometheus_text",
        [] {
            py::gil_scoped_release nogil;
            return prometheus_text(metrics_of_open_drivers());
        },
        "The Prometheus text exposition (format 0.0.4) of every open driver's metrics");
}

}  // namespace kvblob::python
