// The plot: a plain SVG document, no library, readable in any browser and
// embeddable in Markdown. Both axes are logarithmic (row sizes span 4 KiB
// to 16 MiB and more; throughputs span orders of magnitude).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "report.hpp"

namespace kvblob::bench {

namespace {

constexpr double width = 760, height = 460, left = 70, right = 200, top = 40, bottom = 60;
const char *const colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};

std::string num(double v)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", v);
    return buf;
}

struct Series {
    std::string label;
    std::vector<std::pair<double, double>> points;  // size, GB/s
};

}  // namespace

void write_svg(std::ostream &out, const RunInfo &info, const std::vector<Result> &results)
{
    // One pair of series (driver, baseline) per operation, batch and thread
    // count; probes move no bytes and are left out.
    std::map<std::string, std::pair<Series, Series>> series;
    for (const auto &r : results) {
        if (!r.skipped.empty() || r.point.op == BenchOp::probe || r.driver.gbps <= 0) continue;
        const std::string tag = std::string(to_string(r.point.op)) + " x" + std::to_string(r.point.batch) +
                                (r.point.threads > 1 ? " " + std::to_string(r.point.threads) + "t" : "");
        auto &[drv, base] = series[tag];
        drv.label = info.driver_name + " " + tag;
        drv.points.emplace_back(static_cast<double>(r.point.size), r.driver.gbps);
        if (r.baseline && r.baseline->gbps > 0) {
            base.label = info.baseline_name + " " + tag;
            base.points.emplace_back(static_cast<double>(r.point.size), r.baseline->gbps);
        }
    }
    double xmin = 1e300, xmax = 0, ymin = 1e300, ymax = 0;
    for (auto &[tag, pair] : series)
        for (auto *s : {&pair.first, &pair.second})
            for (auto [x, y] : s->points) {
                xmin = std::min(xmin, x), xmax = std::max(xmax, x);
                ymin = std::min(ymin, y), ymax = std::max(ymax, y);
            }
    if (xmax == 0) xmin = 4096, xmax = 1 << 20, ymin = 0.1, ymax = 10;
    const double lx0 = std::floor(std::log2(xmin)), lx1 = std::max(lx0 + 1, std::ceil(std::log2(xmax)));
    const double ly0 = std::floor(std::log10(ymin)), ly1 = std::max(ly0 + 1, std::ceil(std::log10(ymax)));
    const double pw = width - left - right, ph = height - top - bottom;
    auto X = [&](double x) { return left + (std::log2(x) - lx0) / (lx1 - lx0) * pw; };
    auto Y = [&](double y) { return top + ph - (std::log10(y) - ly0) / (ly1 - ly0) * ph; };

    out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
        << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
        << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
        << "<text x=\"" << left << "\" y=\"24\" font-size=\"15\">kvblob-bench: " << info.driver_name
        << " against " << (info.baseline_name.empty() ? "no baseline" : info.baseline_name)
        << " (throughput by row size)</text>\n";
    // Grid and ticks: every power of two on x, every decade on y.
    for (double lx = lx0; lx <= lx1; ++lx) {
        const double x = left + (lx - lx0) / (lx1 - lx0) * pw;
        out << "<line x1=\"" << num(x) << "\" y1=\"" << top << "\" x2=\"" << num(x) << "\" y2=\"" << top + ph
            << "\" stroke=\"#ddd\"/>\n<text x=\"" << num(x) << "\" y=\"" << top + ph + 18
            << "\" text-anchor=\"middle\">" << size_label(static_cast<uint64_t>(std::exp2(lx))) << "</text>\n";
    }
    for (double ly = ly0; ly <= ly1; ++ly) {
        const double y = top + ph - (ly - ly0) / (ly1 - ly0) * ph;
        out << "<line x1=\"" << left << "\" y1=\"" << num(y) << "\" x2=\"" << left + pw << "\" y2=\"" << num(y)
            << "\" stroke=\"#ddd\"/>\n<text x=\"" << left - 8 << "\" y=\"" << num(y + 4)
            << "\" text-anchor=\"end\">" << std::pow(10.0, ly) << "</text>\n";
    }
    out << "<text x=\"" << left + pw / 2 << "\" y=\"" << height - 18 << "\" text-anchor=\"middle\">row size</text>\n"
        << "<text transform=\"translate(18," << top + ph / 2 << ") rotate(-90)\" text-anchor=\"middle\">GB/s</text>\n";
    size_t index = 0;
    double legend_y = top + 10;
    for (auto &[tag, pair] : series) {
        const char *color = colors[index++ % (sizeof colors / sizeof colors[0])];
        for (auto *s : {&pair.first, &pair.second}) {
            if (s->points.empty()) continue;
            const bool dashed = s == &pair.second;
            std::sort(s->points.begin(), s->points.end());
            out << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"2\""
                << (dashed ? " stroke-dasharray=\"6,4\"" : "") << " points=\"";
            for (auto [x, y] : s->points) out << num(X(x)) << "," << num(Y(y)) << " ";
            out << "\"/>\n";
            for (auto [x, y] : s->points)
                out << "<circle cx=\"" << num(X(x)) << "\" cy=\"" << num(Y(y)) << "\" r=\"3\" fill=\"" << color
                    << "\"/>\n";
            out << "<line x1=\"" << left + pw + 12 << "\" y1=\"" << legend_y << "\" x2=\"" << left + pw + 36
                << "\" y2=\"" << legend_y << "\" stroke=\"" << color << "\" stroke-width=\"2\""
                << (dashed ? " stroke-dasharray=\"6,4\"" : "") << "/>\n<text x=\"" << left + pw + 42 << "\" y=\""
                << legend_y + 4 << "\">" << s->label << "</text>\n";
            legend_y += 18;
        }
    }
    out << "</svg>\n";
}

}  // namespace kvblob::bench
