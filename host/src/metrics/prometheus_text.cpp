// The Prometheus text exposition format 0.0.4 of metrics snapshots, and the
// table of families it writes (docs/metrics.md is checked against it).
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <functional>
#include <string>

#include "kvblob/host/metrics.hpp"

namespace kvblob {

const std::vector<MetricFamily> &metric_families()
{
    static const std::vector<MetricFamily> families = {
        {"kvblob_drivers_open", "gauge", "", "Drivers this process has open (opened and not closed)"},
        {"kvblob_operations_submitted_total", "counter", "kind",
         "Operations submitted: admitted, or refused by the host or the driver"},
        {"kvblob_operations_refused_total", "counter", "kind,rule",
         "Operations refused, by the rule the refusal names (driver: the driver cited none)"},
        {"kvblob_rows_total", "counter", "kind,result", "Rows of final operations, by result"},
        {"kvblob_ready_bytes_total", "counter", "kind", "Bytes of READY rows: what puts stored and gets filled"},
        {"kvblob_operation_seconds", "histogram", "kind", "From submit until the host saw the operation final"},
        {"kvblob_access_end_seconds", "histogram", "kind",
         "From final until the host saw the driver's access to the caller's memory end"},
        {"kvblob_access_end_bound_seconds", "gauge", "", "The access-end bound the driver declares (0: none)"},
        {"kvblob_access_end_over_bound_total", "counter", "",
         "Operations whose access ended later after final than the declared bound"},
        {"kvblob_operations_in_flight", "gauge", "", "Operations admitted and not yet released"},
        {"kvblob_regions", "gauge", "", "Registered memory regions"},
        {"kvblob_region_bytes", "gauge", "", "Bytes of registered memory regions"},
        {"kvblob_pinned_bytes", "gauge", "",
         "Registered bytes kept for the life of the process: an operation naming them never proved its access ended"},
        {"kvblob_driver_log_lines_total", "counter", "level", "Log lines the driver wrote, by level"},
        {"kvblob_contract_breaks_total", "counter", "rule",
         "Answers the host corrected or refused at run time, by the rule the driver broke"},
    };
    return families;
}

namespace {

// The length of the UTF-8 sequence at text[i] (a lead byte, then its
// continuation bytes), or 0 when none starts there. No overlong or
// surrogate check: a label is only shown, never interpreted.
size_t utf8_sequence(std::string_view text, size_t i)
{
    const auto c = static_cast<unsigned char>(text[i]);
    const size_t length = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
    if (length == 0 || i + length > text.size()) return 0;
    for (size_t k = 1; k < length; ++k)
        if ((static_cast<unsigned char>(text[i + k]) & 0xc0) != 0x80) return 0;
    return length;
}

}  // namespace

std::string metrics_label_problem(std::string_view label)
{
    if (label.size() > max_metrics_label)
        return "is " + std::to_string(label.size()) + " bytes long; at most " + std::to_string(max_metrics_label);
    for (size_t i = 0; i < label.size();) {
        const auto c = static_cast<unsigned char>(label[i]);
        if (c < 0x80) {
            if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
                char hex[8];
                std::snprintf(hex, sizeof hex, "0x%02x", c);
                return std::string("holds the control character ") + hex + " at byte " + std::to_string(i);
            }
            ++i;
            continue;
        }
        const size_t length = utf8_sequence(label, i);
        if (length == 0) return "is not UTF-8 at byte " + std::to_string(i);
        i += length;
    }
    return {};
}

namespace {

const char *kind_name(size_t k) { return to_string(static_cast<OpKind>(k)); }

// A label value as the format wants it: backslash, double quote and line
// feed escaped. Anything that is not UTF-8, or a control character a label
// check would refuse (a driver's name is not checked there), is written as
// U+FFFD, so no value can end its line or its quotes early.
void append_label_value(std::string &out, std::string_view value)
{
    for (size_t i = 0; i < value.size();) {
        const auto c = static_cast<unsigned char>(value[i]);
        if (c == '\\') out += "\\\\", ++i;
        else if (c == '"') out += "\\\"", ++i;
        else if (c == '\n') out += "\\n", ++i;
        else if (c < 0x80) {
            if ((c < 0x20 && c != '\t') || c == 0x7f) out += "\xEF\xBF\xBD";
            else out += static_cast<char>(c);
            ++i;
        } else if (const size_t length = utf8_sequence(value, i)) {
            out.append(value.substr(i, length)), i += length;
        } else {
            out += "\xEF\xBF\xBD", ++i;
        }
    }
}

void append_number(std::string &out, uint64_t n)
{
    char buf[24];
    out.append(buf, std::to_chars(buf, buf + sizeof buf, n).ptr);
}

void append_seconds(std::string &out, uint64_t ns)
{
    char buf[32];
    out.append(buf, std::to_chars(buf, buf + sizeof buf, static_cast<double>(ns) / 1e9).ptr);
}

// Writes one family: its HELP and TYPE, then what each driver adds.
class Page {
public:
    explicit Page(const std::vector<MetricsSnapshot> &snapshots) : snapshots_(snapshots) {}

    // Family `name`: its HELP and TYPE, then samples(snapshot, series) for
    // each snapshot, which calls series(suffix, extra_labels, value) once a
    // line.
    using Series = std::function<void(const char *suffix, const std::string &extra_labels, const std::string &value)>;
    void family(const char *name, const std::function<void(const MetricsSnapshot &, const Series &)> &samples)
    {
        const MetricFamily &f = find(name);
        out_ += "# HELP ";
        out_ += f.name;
        out_ += ' ';
        out_ += f.help;
        out_ += "\n# TYPE ";
        out_ += f.name;
        out_ += ' ';
        out_ += f.type;
        out_ += '\n';
        for (const auto &s : snapshots_) {
            samples(s, [&](const char *suffix, const std::string &extra, const std::string &value) {
                out_ += f.name;
                out_ += suffix;
                out_ += "{driver=\"";
                append_label_value(out_, s.driver);
                out_ += "\",label=\"";
                append_label_value(out_, s.label);
                out_ += '"';
                out_ += extra;
                out_ += "} ";
                out_ += value;
                out_ += '\n';
            });
        }
    }
    void unlabelled(const char *name, uint64_t value)
    {
        const MetricFamily &f = find(name);
        out_ += std::string("# HELP ") + f.name + ' ' + f.help + "\n# TYPE " + f.name + ' ' + f.type + '\n' + f.name + ' ';
        append_number(out_, value);
        out_ += '\n';
    }
    std::string take() { return std::move(out_); }

private:
    static const MetricFamily &find(const char *name)
    {
        for (const auto &f : metric_families())
            if (std::string_view(f.name) == name) return f;
        throw std::logic_error(std::string("no metric family ") + name);
    }
    const std::vector<MetricsSnapshot> &snapshots_;
    std::string out_;
};

std::string number(uint64_t n)
{
    std::string s;
    append_number(s, n);
    return s;
}

std::string label(const char *name, std::string_view value)
{
    std::string s = std::string(",") + name + "=\"";
    append_label_value(s, value);
    return s + '"';
}

void histogram_series(const HistogramSnapshot &h, const std::string &kind, const Page::Series &series)
{
    uint64_t cumulative = 0;
    for (size_t b = 0; b < latency_bucket_bounds_ns.size(); ++b) {
        cumulative += h.buckets[b];
        std::string le;
        append_seconds(le, latency_bucket_bounds_ns[b]);
        series("_bucket", kind + ",le=\"" + le + "\"", number(cumulative));
    }
    series("_bucket", kind + ",le=\"+Inf\"", number(h.count));
    std::string sum;
    append_seconds(sum, h.sum_ns);
    series("_sum", kind, sum);
    series("_count", kind, number(h.count));
}

void add_histogram(HistogramSnapshot &to, const HistogramSnapshot &from)
{
    for (size_t b = 0; b < to.buckets.size(); ++b) to.buckets[b] += from.buckets[b];
    to.count += from.count;
    to.sum_ns += from.sum_ns;
}

void add_snapshot(MetricsSnapshot &to, const MetricsSnapshot &from)
{
    for (size_t k = 0; k < to.kinds.size(); ++k) {
        KindMetrics &a = to.kinds[k];
        const KindMetrics &b = from.kinds[k];
        a.submitted += b.submitted;
        for (const auto &[rule, n] : b.refused) a.refused[rule] += n;
        for (size_t r = 0; r < a.rows.size(); ++r) a.rows[r] += b.rows[r];
        a.ready_bytes += b.ready_bytes;
        add_histogram(a.until_final, b.until_final);
        add_histogram(a.access_end_after_final, b.access_end_after_final);
    }
    to.ops_in_flight += from.ops_in_flight;
    to.regions += from.regions;
    to.region_bytes += from.region_bytes;
    to.pinned_bytes += from.pinned_bytes;
    for (size_t l = 0; l < to.log_lines.size(); ++l) to.log_lines[l] += from.log_lines[l];
    for (const auto &[rule, n] : from.contract_breaks) to.contract_breaks[rule] += n;
    to.access_end_bound_ns = std::max(to.access_end_bound_ns, from.access_end_bound_ns);
    to.access_end_over_bound += from.access_end_over_bound;
}

}  // namespace

MetricsSnapshot metrics_total(const std::vector<MetricsSnapshot> &snapshots)
{
    MetricsSnapshot total;
    for (size_t i = 0; i < snapshots.size(); ++i) {
        if (i == 0) total = snapshots[0];
        else add_snapshot(total, snapshots[i]);
    }
    return total;
}

namespace {

// One series per driver and label: opens that share both (an
// engine that opens a driver twice and labels neither) are added together,
// since a page with the same series twice is refused by every scraper.
std::vector<MetricsSnapshot> merged(const std::vector<MetricsSnapshot> &snapshots)
{
    std::vector<MetricsSnapshot> out;
    for (const auto &s : snapshots) {
        auto same = std::find_if(out.begin(), out.end(),
                                 [&](const MetricsSnapshot &o) { return o.driver == s.driver && o.label == s.label; });
        if (same == out.end()) out.push_back(s);
        else add_snapshot(*same, s);
    }
    return out;
}

}  // namespace

std::string prometheus_text(const std::vector<MetricsSnapshot> &snapshots)
{
    const auto series = merged(snapshots);
    Page page(series);
    page.unlabelled("kvblob_drivers_open", snapshots.size());
    const auto per_kind = [&](const char *name, const std::function<std::string(const KindMetrics &)> &value) {
        page.family(name, [&](const MetricsSnapshot &s, const Page::Series &series) {
            for (size_t k = 0; k < 4; ++k) series("", label("kind", kind_name(k)), value(s.kinds[k]));
        });
    };
    per_kind("kvblob_operations_submitted_total", [](const KindMetrics &k) { return number(k.submitted); });
    page.family("kvblob_operations_refused_total", [](const MetricsSnapshot &s, const Page::Series &series) {
        for (size_t k = 0; k < 4; ++k)
            for (const auto &[rule, n] : s.kinds[k].refused)
                series("", label("kind", kind_name(k)) + label("rule", rule), number(n));
    });
    page.family("kvblob_rows_total", [](const MetricsSnapshot &s, const Page::Series &series) {
        for (size_t k = 0; k < 4; ++k)
            for (kvblob_row_result r = KVBLOB_ROW_READY; r <= KVBLOB_ROW_RESULT_LAST; ++r)
                series("", label("kind", kind_name(k)) + label("result", kvblob_row_result_name(r)),
                       number(s.kinds[k].rows[static_cast<size_t>(r)]));
    });
    page.family("kvblob_ready_bytes_total", [](const MetricsSnapshot &s, const Page::Series &series) {
        for (size_t k : {0, 1}) series("", label("kind", kind_name(k)), number(s.kinds[k].ready_bytes));
    });
    page.family("kvblob_operation_seconds", [](const MetricsSnapshot &s, const Page::Series &series) {
        for (size_t k = 0; k < 4; ++k) histogram_series(s.kinds[k].until_final, label("kind", kind_name(k)), series);
    });
    page.family("kvblob_access_end_seconds", [](const MetricsSnapshot &s, const Page::Series &series) {
        for (size_t k = 0; k < 4; ++k)
            histogram_series(s.kinds[k].access_end_after_final, label("kind", kind_name(k)), series);
    });
    const auto per_driver = [&](const char *name, const std::function<std::string(const MetricsSnapshot &)> &value) {
        page.family(name, [&](const MetricsSnapshot &s, const Page::Series &series) { series("", "", value(s)); });
    };
    per_driver("kvblob_access_end_bound_seconds", [](const MetricsSnapshot &s) {
        std::string v;
        append_seconds(v, s.access_end_bound_ns);
        return v;
    });
    per_driver("kvblob_access_end_over_bound_total", [](const MetricsSnapshot &s) { return number(s.access_end_over_bound); });
    per_driver("kvblob_operations_in_flight", [](const MetricsSnapshot &s) { return number(s.ops_in_flight); });
    per_driver("kvblob_regions", [](const MetricsSnapshot &s) { return number(s.regions); });
    per_driver("kvblob_region_bytes", [](const MetricsSnapshot &s) { return number(s.region_bytes); });
    per_driver("kvblob_pinned_bytes", [](const MetricsSnapshot &s) { return number(s.pinned_bytes); });
    page.family("kvblob_driver_log_lines_total", [](const MetricsSnapshot &s, const Page::Series &series) {
        for (size_t l = 0; l < s.log_lines.size(); ++l) series("", label("level", metrics_level_names[l]), number(s.log_lines[l]));
    });
    page.family("kvblob_contract_breaks_total", [](const MetricsSnapshot &s, const Page::Series &series) {
        for (const auto &[rule, n] : s.contract_breaks) series("", label("rule", rule), number(n));
    });
    return page.take();
}

}  // namespace kvblob
