#include "check_metrics.hpp"

#include <cctype>
#include <map>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include "kvblob/host/json.hpp"
#include "kvblob/host/metrics.hpp"

namespace kvblob::conformance {

namespace {

constexpr const char *record_word = "metrics";

// The check's own tally. A check's threads may submit at once: one lock,
// off any path the battery times.
struct Tally {
    std::mutex mu;
    std::map<std::string, uint64_t> counts;
    std::unordered_map<kvblob_op_t *, OpKind> kinds;  // an admitted operation's kind, for its results
};

Tally &tally()
{
    static auto *t = new Tally;  // a check's process ends by _exit: never destroyed
    return *t;
}

bool valid_name(const std::string &name)
{
    if (name.empty() || name.size() > 128) return false;
    for (char c : name)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') return false;
    return true;
}

}  // namespace

void start_counting_check()
{
    keep_metrics_of_closed_drivers(true);
    (void)take_metrics_of_closed_drivers();
    std::lock_guard lock(tally().mu);
    tally().counts.clear();
    tally().kinds.clear();
}

void count_submit(kvblob_op_t *op, OpKind kind, kvblob_status status)
{
    std::lock_guard lock(tally().mu);
    const std::string k = to_string(kind);
    ++tally().counts[k + ".submitted"];
    if (status != KVBLOB_OK) {
        // KVBLOB_E_REJECTED -> put.refused.E_REJECTED
        std::string name = kvblob_status_name(status);
        if (name.rfind("KVBLOB_", 0) == 0) name = name.substr(7);
        ++tally().counts[k + ".refused." + name];
    } else if (op) {
        tally().kinds[op] = kind;
    }
}

void count_results(kvblob_op_t *op, const std::vector<kvblob_row_status_t> &rows)
{
    std::lock_guard lock(tally().mu);
    auto it = tally().kinds.find(op);
    if (it == tally().kinds.end()) return;  // read before: its rows are counted once
    const std::string k = to_string(it->second);
    tally().kinds.erase(it);
    for (const auto &r : rows) ++tally().counts[k + ".rows." + kvblob_row_result_name(r.result)];
}

std::string check_metrics_record()
{
    std::map<std::string, uint64_t> counts;
    {
        std::lock_guard lock(tally().mu);
        counts = tally().counts;
    }
    auto drivers = take_metrics_of_closed_drivers();
    for (auto &m : metrics_of_open_drivers()) drivers.push_back(std::move(m));
    const MetricsSnapshot host = metrics_total(drivers);
    counts["drivers_opened"] = drivers.size();
    for (size_t l = 0; l < host.log_lines.size(); ++l) counts[std::string("log.") + metrics_level_names[l]] = host.log_lines[l];
    std::string out = record_word;
    for (const auto &[name, n] : counts)
        if (n) out += " " + name + "=" + std::to_string(n);
    return out;
}

bool is_check_metrics_record(const std::string &record)
{
    return record == record_word || record.rfind(std::string(record_word) + " ", 0) == 0;
}

CheckMetrics check_metrics_of(const std::vector<std::string> &records)
{
    const std::string *last = nullptr;
    for (const auto &record : records)
        if (is_check_metrics_record(record)) last = &record;
    CheckMetrics out;
    if (!last) return out;
    std::istringstream words(last->substr(std::string(record_word).size()));
    for (std::string word; words >> word;) {
        const size_t eq = word.find('=');
        if (eq == std::string::npos || eq + 1 == word.size() || word.size() - eq - 1 > 19) continue;
        const std::string name = word.substr(0, eq), value = word.substr(eq + 1);
        if (!valid_name(name) || value.find_first_not_of("0123456789") != std::string::npos) continue;
        out.emplace_back(name, std::stoull(value));
    }
    return out;
}

std::string check_metrics_json(const CheckMetrics &metrics)
{
    if (metrics.empty()) return "null";
    std::string out = "{";
    for (size_t i = 0; i < metrics.size(); ++i)
        out += (i ? "," : "") + json_quote(metrics[i].first) + ":" + std::to_string(metrics[i].second);
    return out + "}";
}

}  // namespace kvblob::conformance
