// The counters behind one opened driver's MetricsSnapshot, and the registry
// that lists every open driver's. Internal to the host library.
//
// The guarding code counts as it goes, on paths that already hold the
// driver's lock (DriverCore::mu_): those counters have one writer at a
// time, so they are added with a plain load and store of an atomic (no
// locked instruction, which would cost more than the rest of the counting),
// and read by a snapshot from any thread without tearing. The driver's log
// lines, counted on the driver's threads without that lock, are added with
// fetch_add (and nothing else writes them). A snapshot never takes the
// driver's lock: a scrape does not wait for a slow driver. Refusals and
// contract breaks, rare and keyed by a rule id, are kept in maps behind a
// lock of their own.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "kvblob/host/metrics.hpp"

namespace kvblob {

// Observed under the driver's lock (one writer at a time).
class AtomicHistogram {
public:
    void observe(std::chrono::nanoseconds elapsed) noexcept;
    HistogramSnapshot snapshot() const noexcept;

private:
    std::array<std::atomic<uint64_t>, latency_bucket_bounds_ns.size() + 1> buckets_{};
    std::atomic<uint64_t> sum_ns_{0};
};

class DriverMetrics {
public:
    DriverMetrics(std::string driver, std::string label);

    // ---- under the driver's lock ----
    void submitted(OpKind kind) noexcept { bump(of(kind).submitted, 1); }
    // A refusal, by the rule it names ("driver": none). At most
    // max_rule_labels distinct rules per kind; past that a driver citing
    // ever new ids is counted under "other", so it cannot grow the page.
    void refused(OpKind kind, std::string_view rule);
    void admitted() noexcept { bump(ops_in_flight_, 1); }
    void released() noexcept { bump(ops_in_flight_, uint64_t(-1)); }
    // One final operation's rows, counted once: rows[r] of result r, and the
    // bytes of its READY rows.
    void rows(OpKind kind, const std::array<uint64_t, KVBLOB_ROW_RESULT_LAST + 1> &rows, uint64_t ready_bytes) noexcept;
    void until_final(OpKind kind, std::chrono::nanoseconds elapsed) noexcept { of(kind).until_final.observe(elapsed); }
    void access_ended(OpKind kind, std::chrono::nanoseconds after_final) noexcept;
    void region_registered(uint64_t bytes) noexcept { bump(regions_, 1), bump(region_bytes_, bytes); }
    void region_unregistered(uint64_t bytes) noexcept { bump(regions_, uint64_t(-1)), bump(region_bytes_, -bytes); }
    void region_pinned(uint64_t bytes) noexcept { bump(pinned_bytes_, bytes); }

    // ---- from any thread ----
    void log_line(kvblob_log_level level) noexcept;
    void contract_broken(std::string_view rule);
    void declare_access_bound(uint64_t ns) noexcept { access_end_bound_ns_.store(ns, std::memory_order_relaxed); }

    MetricsSnapshot snapshot() const;

    static constexpr size_t max_rule_labels = 32;

private:
    struct Kind {
        std::atomic<uint64_t> submitted{0};
        std::array<std::atomic<uint64_t>, KVBLOB_ROW_RESULT_LAST + 1> rows{};
        std::atomic<uint64_t> ready_bytes{0};
        AtomicHistogram until_final, access_end_after_final;
    };
    static void add(std::atomic<uint64_t> &counter, uint64_t n) noexcept { counter.fetch_add(n, std::memory_order_relaxed); }
    // One writer at a time (the driver's lock): no locked instruction. n
    // wraps, so adding uint64_t(-1) takes one away.
    static void bump(std::atomic<uint64_t> &counter, uint64_t n) noexcept
    {
        counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    }
    Kind &of(OpKind kind) noexcept { return kinds_[static_cast<size_t>(kind)]; }
    static void count_rule(std::map<std::string, uint64_t> &by_rule, std::string_view rule);

    const std::string driver_, label_;
    std::array<Kind, 4> kinds_;
    std::atomic<uint64_t> ops_in_flight_{0}, regions_{0}, region_bytes_{0}, pinned_bytes_{0};
    std::array<std::atomic<uint64_t>, KVBLOB_LOG_MISBEHAVING + 1> log_lines_{};
    std::atomic<uint64_t> access_end_bound_ns_{0}, access_end_over_bound_{0};
    mutable std::mutex rules_mu_;  // a leaf: nothing is called while it is held
    std::array<std::map<std::string, uint64_t>, 4> refused_;
    std::map<std::string, uint64_t> contract_breaks_;
};

// Lists the open drivers' metrics. A driver's entry is added when it opens
// and removed when it closes; one that is never closed (kept open for good)
// stays, so the memory it pins stays visible.
void publish_metrics(const std::shared_ptr<DriverMetrics> &metrics);
void withdraw_metrics(const DriverMetrics *metrics);

}  // namespace kvblob
