#include "report.hpp"

#include <cstdio>
#include <sstream>

#include "kvblob/host/json.hpp"

namespace kvblob::bench {

namespace {

std::string fixed(double v, int digits)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

std::string stats_json(const Stats &s)
{
    return "{\"avg\":" + fixed(s.avg_us, 3) + ",\"p50\":" + fixed(s.p50_us, 3) + ",\"p99\":" + fixed(s.p99_us, 3) + "}";
}

std::string measurement_json(const Measurement &m)
{
    return "{\"rows\":" + std::to_string(m.rows) + ",\"bytes\":" + std::to_string(m.bytes) +
           ",\"ops\":" + std::to_string(m.ops) + ",\"errors\":" + std::to_string(m.errors) +
           ",\"seconds\":" + fixed(m.seconds, 4) + ",\"gbps\":" + fixed(m.gbps, 4) +
           ",\"rows_per_s\":" + fixed(m.rows_per_s, 1) + ",\"submit_us\":" + stats_json(m.submit) +
           ",\"complete_us\":" + stats_json(m.complete) +
           (m.first_error.empty() ? "" : ",\"first_error\":" + json_quote(m.first_error)) +
           (m.method.empty() ? "" : ",\"method\":" + json_quote(m.method)) + "}";
}

}  // namespace

std::optional<double> Result::ratio() const
{
    if (!baseline || !skipped.empty()) return std::nullopt;
    if (point.op == BenchOp::probe)
        return baseline->rows_per_s > 0 ? std::optional(driver.rows_per_s / baseline->rows_per_s) : std::nullopt;
    return baseline->gbps > 0 ? std::optional(driver.gbps / baseline->gbps) : std::nullopt;
}

double Result::ns_per_row() const
{
    return driver.rows_per_s > 0 ? 1e9 * point.threads / driver.rows_per_s : 0;
}

void print_table(std::ostream &out, const RunInfo &info, const std::vector<Result> &results)
{
    out << "driver " << info.driver_name << " " << info.driver_version << " (" << info.driver_path << ")";
    for (const auto &o : info.options) out << " " << o;
    out << "\nbaseline " << (info.baseline_name.empty() ? "none: " + info.no_baseline_reason : info.baseline_name)
        << "; " << fixed(info.duration_s, 2) << " s per point"
        << (info.rounds > 1 ? " and side, in " + std::to_string(info.rounds) + " alternated slices" : "")
        << "; throughput from the " << info.statistic
        << (info.statistic == "median" ? " operation" : " over the operations")
        << "; every lane's rows in page-aligned memory; the driver lane waits "
        << (info.wait == "watch" ? "watching, never asleep" : "through Operation::wait");
    if (info.load) out << "; under load: " << info.load << " busy thread(s) beside every lane";
    if (!info.tier.empty()) out << "; gets and probes find their rows in the " << info.tier << " tier";
    out << "\n\n";
    char line[512];
    std::snprintf(line, sizeof line, "%-5s %6s %5s %3s %9s %11s %9s %19s %19s %9s %7s  %s\n", "op", "size", "batch",
                  "thr", "GB/s", "rows/s", "ns/row", "submit us p50/p99", "done us p50/p99", "base GB/s", "ratio",
                  "baseline method");
    out << line;
    for (const auto &r : results) {
        if (!r.skipped.empty()) {
            std::snprintf(line, sizeof line, "%-5s %6s %5llu %3u  skipped: %s\n", to_string(r.point.op),
                          size_label(r.point.size).c_str(), static_cast<unsigned long long>(r.point.batch),
                          r.point.threads, r.skipped.c_str());
            out << line;
            continue;
        }
        const auto ratio = r.ratio();
        std::snprintf(line, sizeof line, "%-5s %6s %5llu %3u %9.3f %11.0f %9.1f %9.2f/%-9.2f %9.2f/%-9.2f %9s %7s  %s%s\n",
                      to_string(r.point.op), size_label(r.point.size).c_str(),
                      static_cast<unsigned long long>(r.point.batch), r.point.threads, r.driver.gbps,
                      r.driver.rows_per_s, r.ns_per_row(), r.driver.submit.p50_us, r.driver.submit.p99_us,
                      r.driver.complete.p50_us, r.driver.complete.p99_us,
                      r.baseline ? fixed(r.point.op == BenchOp::probe ? 0 : r.baseline->gbps, 3).c_str() : "-",
                      ratio ? fixed(*ratio, 2).c_str() : "-",
                      r.baseline && !r.baseline->method.empty() ? r.baseline->method.c_str() : "-",
                      r.driver.errors ? ("  ERRORS: " + r.driver.first_error).c_str() : "");
        out << line;
    }
}

void write_json(std::ostream &out, const RunInfo &info, const std::vector<Result> &results)
{
    out << "{\"tool\":\"kvblob-bench\",\"driver\":{\"name\":" << json_quote(info.driver_name)
        << ",\"version\":" << json_quote(info.driver_version) << ",\"path\":" << json_quote(info.driver_path)
        << ",\"options\":" << json_string_array(info.options) << "},\"baseline\":"
        << (info.baseline_name.empty() ? "null" : json_quote(info.baseline_name));
    if (info.baseline_name.empty()) out << ",\"no_baseline_reason\":" << json_quote(info.no_baseline_reason);
    out << ",\"statistic\":" << json_quote(info.statistic) << ",\"load_threads\":" << info.load << ",\"wait\":" << json_quote(info.wait);
    if (!info.tier.empty()) out << ",\"tier\":" << json_quote(info.tier);
    out << ",\"duration_s\":" << fixed(info.duration_s, 3) << ",\"rounds\":" << info.rounds
        << ",\"byte_budget\":" << info.byte_budget
        << ",\"points\":[";
    for (size_t i = 0; i < results.size(); ++i) {
        const auto &r = results[i];
        out << (i ? "," : "") << "\n{\"op\":\"" << to_string(r.point.op) << "\",\"size\":" << r.point.size
            << ",\"batch\":" << r.point.batch << ",\"threads\":" << r.point.threads;
        if (!r.skipped.empty()) {
            out << ",\"skipped\":" << json_quote(r.skipped) << "}";
            continue;
        }
        const auto ratio = r.ratio();
        out << ",\"driver\":" << measurement_json(r.driver) << ",\"ns_per_row\":" << fixed(r.ns_per_row(), 2)
            << ",\"baseline\":" << (r.baseline ? measurement_json(*r.baseline) : "null")
            << ",\"ratio_to_baseline\":" << (ratio ? fixed(*ratio, 4) : "null") << "}";
    }
    out << "\n]}\n";
}

void write_csv(std::ostream &out, const RunInfo &info, const std::vector<Result> &results)
{
    out << "driver,op,size,batch,threads,gbps,rows_per_s,ns_per_row,submit_p50_us,submit_p99_us,complete_p50_us,"
           "complete_p99_us,errors,baseline,baseline_gbps,baseline_rows_per_s,ratio_to_baseline,skipped,"
           "baseline_method\n";
    for (const auto &r : results) {
        const auto ratio = r.ratio();
        const bool ran = r.skipped.empty();
        out << info.driver_name << "," << to_string(r.point.op) << "," << r.point.size << "," << r.point.batch << ","
            << r.point.threads << "," << (ran ? fixed(r.driver.gbps, 4) : "") << ","
            << (ran ? fixed(r.driver.rows_per_s, 1) : "") << "," << (ran ? fixed(r.ns_per_row(), 2) : "") << ","
            << (ran ? fixed(r.driver.submit.p50_us, 3) : "") << "," << (ran ? fixed(r.driver.submit.p99_us, 3) : "")
            << "," << (ran ? fixed(r.driver.complete.p50_us, 3) : "") << ","
            << (ran ? fixed(r.driver.complete.p99_us, 3) : "") << "," << r.driver.errors << ","
            << (r.baseline ? info.baseline_name : "") << "," << (r.baseline ? fixed(r.baseline->gbps, 4) : "") << ","
            << (r.baseline ? fixed(r.baseline->rows_per_s, 1) : "") << "," << (ratio ? fixed(*ratio, 4) : "") << ","
            << "\"" << r.skipped << "\",\"" << (r.baseline ? r.baseline->method : "") << "\"\n";
    }
}

}  // namespace kvblob::bench
