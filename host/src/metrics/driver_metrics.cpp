#include "driver_metrics.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "tick_clock.hpp"

namespace kvblob {

void AtomicHistogram::observe(std::chrono::nanoseconds elapsed) noexcept
{
    const uint64_t ns = elapsed.count() > 0 ? static_cast<uint64_t>(elapsed.count()) : 0;
    const auto *bound =
        std::lower_bound(latency_bucket_bounds_ns.begin(), latency_bucket_bounds_ns.end(), ns);  // le: inclusive
    auto &bucket = buckets_[static_cast<size_t>(bound - latency_bucket_bounds_ns.begin())];
    bucket.store(bucket.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    sum_ns_.store(sum_ns_.load(std::memory_order_relaxed) + ns, std::memory_order_relaxed);
}

HistogramSnapshot AtomicHistogram::snapshot() const noexcept
{
    HistogramSnapshot out;
    for (size_t i = 0; i < buckets_.size(); ++i) {
        out.buckets[i] = buckets_[i].load(std::memory_order_relaxed);
        out.count += out.buckets[i];  // so count always agrees with the buckets read
    }
    out.sum_ns = sum_ns_.load(std::memory_order_relaxed);
    return out;
}

DriverMetrics::DriverMetrics(std::string driver, std::string label)
    : driver_(std::move(driver)), label_(std::move(label))
{
    tick_clock::calibrate();  // here, at open, rather than on an operation's path
}

void DriverMetrics::count_rule(std::map<std::string, uint64_t> &by_rule, std::string_view rule)
{
    auto it = by_rule.find(std::string(rule));
    if (it == by_rule.end()) it = by_rule.size() < max_rule_labels ? by_rule.emplace(rule, 0).first : by_rule.try_emplace("other", 0).first;
    ++it->second;
}

void DriverMetrics::refused(OpKind kind, std::string_view rule)
{
    std::lock_guard lock(rules_mu_);
    count_rule(refused_[static_cast<size_t>(kind)], rule.empty() ? "driver" : rule);
}

void DriverMetrics::contract_broken(std::string_view rule)
{
    std::lock_guard lock(rules_mu_);
    count_rule(contract_breaks_, rule);
}

void DriverMetrics::rows(OpKind kind, const std::array<uint64_t, KVBLOB_ROW_RESULT_LAST + 1> &rows,
                         uint64_t ready_bytes) noexcept
{
    Kind &k = of(kind);
    for (size_t r = 1; r < rows.size(); ++r)
        if (rows[r]) bump(k.rows[r], rows[r]);
    if (ready_bytes) bump(k.ready_bytes, ready_bytes);
}

void DriverMetrics::access_ended(OpKind kind, std::chrono::nanoseconds after_final) noexcept
{
    of(kind).access_end_after_final.observe(after_final);
    const uint64_t bound = access_end_bound_ns_.load(std::memory_order_relaxed);
    if (bound && after_final.count() > 0 && static_cast<uint64_t>(after_final.count()) > bound)
        bump(access_end_over_bound_, 1);
}

void DriverMetrics::log_line(kvblob_log_level level) noexcept
{
    // A level outside the ABI's is counted as the worst: a driver that says
    // something the host cannot place has its line counted, not dropped.
    const size_t at = level >= 0 && level <= KVBLOB_LOG_MISBEHAVING ? static_cast<size_t>(level) : KVBLOB_LOG_MISBEHAVING;
    add(log_lines_[at], 1);
}

MetricsSnapshot DriverMetrics::snapshot() const
{
    MetricsSnapshot out;
    out.driver = driver_;
    out.label = label_;
    for (size_t k = 0; k < kinds_.size(); ++k) {
        const Kind &from = kinds_[k];
        KindMetrics &to = out.kinds[k];
        to.submitted = from.submitted.load(std::memory_order_relaxed);
        for (size_t r = 0; r < from.rows.size(); ++r) to.rows[r] = from.rows[r].load(std::memory_order_relaxed);
        to.ready_bytes = from.ready_bytes.load(std::memory_order_relaxed);
        to.until_final = from.until_final.snapshot();
        to.access_end_after_final = from.access_end_after_final.snapshot();
    }
    out.ops_in_flight = ops_in_flight_.load(std::memory_order_relaxed);
    out.regions = regions_.load(std::memory_order_relaxed);
    out.region_bytes = region_bytes_.load(std::memory_order_relaxed);
    out.pinned_bytes = pinned_bytes_.load(std::memory_order_relaxed);
    for (size_t l = 0; l < log_lines_.size(); ++l) out.log_lines[l] = log_lines_[l].load(std::memory_order_relaxed);
    out.access_end_bound_ns = access_end_bound_ns_.load(std::memory_order_relaxed);
    out.access_end_over_bound = access_end_over_bound_.load(std::memory_order_relaxed);
    std::lock_guard lock(rules_mu_);
    for (size_t k = 0; k < kinds_.size(); ++k) out.kinds[k].refused = refused_[k];
    out.contract_breaks = contract_breaks_;
    return out;
}

namespace {

struct Registry {
    std::mutex mu;
    std::vector<std::shared_ptr<DriverMetrics>> open;
    bool keep_closed = false;
    std::vector<MetricsSnapshot> closed;
};

// Never destroyed: a driver kept open for good may be let go of during the
// process's exit, after static destructors would have run.
Registry &registry()
{
    static auto *r = new Registry;
    return *r;
}

}  // namespace

void publish_metrics(const std::shared_ptr<DriverMetrics> &metrics)
{
    auto &r = registry();
    std::lock_guard lock(r.mu);
    r.open.push_back(metrics);
}

void withdraw_metrics(const DriverMetrics *metrics)
{
    auto &r = registry();
    std::lock_guard lock(r.mu);
    const auto it = std::find_if(r.open.begin(), r.open.end(), [&](const auto &m) { return m.get() == metrics; });
    if (it == r.open.end()) return;
    if (r.keep_closed) r.closed.push_back((*it)->snapshot());
    r.open.erase(it);
}

void keep_metrics_of_closed_drivers(bool keep)
{
    auto &r = registry();
    std::lock_guard lock(r.mu);
    r.keep_closed = keep;
    if (!keep) r.closed.clear();
}

std::vector<MetricsSnapshot> take_metrics_of_closed_drivers()
{
    auto &r = registry();
    std::lock_guard lock(r.mu);
    return std::exchange(r.closed, {});
}

std::vector<MetricsSnapshot> metrics_of_open_drivers()
{
    std::vector<std::shared_ptr<DriverMetrics>> open;
    {
        auto &r = registry();
        std::lock_guard lock(r.mu);
        open = r.open;  // snapshots are taken outside the registry's lock
    }
    std::vector<MetricsSnapshot> out;
    out.reserve(open.size());
    for (const auto &m : open) out.push_back(m->snapshot());
    return out;
}

}  // namespace kvblob
