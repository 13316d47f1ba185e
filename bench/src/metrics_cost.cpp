#include "metrics_cost.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <optional>

#include "driver_lane.hpp"
#include "measure.hpp"

namespace kvblob::bench {

namespace {

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct Side {
    Plugin plugin;
    Driver driver;
};

Side open_side(const MetricsCostSettings &s, bool counting)
{
    LoadOptions load = s.load;
    load.count_metrics = counting;
    Plugin plugin = Plugin::load(s.driver_spec, load);
    Driver driver = plugin.open(s.options, {}, {}, counting ? "bench-metrics-on" : "");
    return Side{std::move(plugin), std::move(driver)};
}

// Nanoseconds per row of the point's median operation, on driver.
double ns_per_row(Driver &driver, const Point &p, const Budget &budget, const std::string &run_id, bool null_driver)
{
    DriverLaneSettings settings;
    settings.run_id = run_id;
    settings.null_driver = null_driver;
    Measurement m = measure(p.threads, budget, [&](unsigned lane) { return make_driver_lane(driver, p, lane, settings); });
    if (m.errors) throw std::runtime_error("rows did not come back as expected: " + m.first_error);
    return m.median_rows_per_s > 0 ? 1e9 / m.median_rows_per_s : 0;
}

struct CostRow {
    Point point;
    double off = 0, on = 0, per_row = 0;  // medians, ns
};

}  // namespace

int run_metrics_cost(const MetricsCostSettings &s, bool json, std::ostream &out)
{
    std::optional<Side> off, on;
    try {
        off.emplace(open_side(s, false));
        on.emplace(open_side(s, true));
    } catch (const std::exception &e) {
        std::cerr << "kvblob-bench: " << e.what() << "\n";
        return 3;
    }
    const bool null_driver = off->plugin.name() == "null";
    const std::string run_id = std::to_string(::getpid()) + "-" + std::to_string(::time(nullptr));
    std::vector<CostRow> rows;
    for (size_t i = 0; i < s.points.size(); ++i) {
        const Point &p = s.points[i];
        std::vector<double> offs, ons, differences;
        std::cerr << "[" << i + 1 << "/" << s.points.size() << "] " << to_string(p.op) << " " << size_label(p.size)
                  << " x" << p.batch << ": " << std::flush;
        try {
            for (unsigned r = 0; r < s.rounds; ++r) {
                // Alternated, so neither side always runs first in a round.
                const std::string id = run_id + "/" + std::to_string(i) + "/" + std::to_string(r);
                double a = 0, b = 0;
                if (r % 2 == 0) {
                    a = ns_per_row(off->driver, p, s.budget, id + "off", null_driver);
                    b = ns_per_row(on->driver, p, s.budget, id + "on", null_driver);
                } else {
                    b = ns_per_row(on->driver, p, s.budget, id + "on", null_driver);
                    a = ns_per_row(off->driver, p, s.budget, id + "off", null_driver);
                }
                offs.push_back(a), ons.push_back(b), differences.push_back(b - a);
                std::cerr << "." << std::flush;
            }
        } catch (const std::exception &e) {
            std::cerr << " " << e.what() << "\n";
            return 1;
        }
        rows.push_back({p, median(offs), median(ons), median(differences)});
        std::cerr << " " << rows.back().per_row << " ns a row\n";
    }
    if (json) {
        out << "{\"driver\":\"" << off->plugin.name() << "\",\"rounds\":" << s.rounds << ",\"points\":[";
        for (size_t i = 0; i < rows.size(); ++i) {
            const auto &r = rows[i];
            out << (i ? "," : "") << "{\"op\":\"" << to_string(r.point.op) << "\",\"size\":" << r.point.size
                << ",\"batch\":" << r.point.batch << ",\"off_ns_per_row\":" << r.off << ",\"on_ns_per_row\":" << r.on
                << ",\"cost_ns_per_row\":" << r.per_row
                << ",\"cost_ns_per_op\":" << r.per_row * static_cast<double>(r.point.batch) << "}";
        }
        out << "]}\n";
        return 0;
    }
    out << "kvblob-bench --metrics off,on: driver " << off->plugin.name() << ", " << s.rounds
        << " alternated rounds a point; ns per row of the median operation, the cost the median of the rounds' "
           "differences\n";
    char line[160];
    std::snprintf(line, sizeof line, "%-6s %6s %6s %10s %10s %12s %12s\n", "op", "size", "batch", "off ns/row",
                  "on ns/row", "cost ns/row", "cost ns/op");
    out << line;
    for (const auto &r : rows) {
        std::snprintf(line, sizeof line, "%-6s %6s %6llu %10.1f %10.1f %12.1f %12.1f\n", to_string(r.point.op),
                      size_label(r.point.size).c_str(), static_cast<unsigned long long>(r.point.batch), r.off, r.on,
                      r.per_row, r.per_row * static_cast<double>(r.point.batch));
        out << line;
    }
    return 0;
}

}  // namespace kvblob::bench
