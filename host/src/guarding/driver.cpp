#include "kvblob/host/driver.hpp"

#include <algorithm>
#include <cstdio>
#include <future>
#include <memory>
#include <optional>
#include <regex>
#include <thread>
#include <utility>

#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "answers.hpp"
#include "driver_core.hpp"
#include "kvblob/host/keep_alive.hpp"
#include "memory_kind.hpp"
#include "metrics/tick_clock.hpp"
#include "watch.hpp"

namespace kvblob {

namespace {

// The C callback a driver logs through; never lets an exception cross back.
void log_trampoline(void *context, kvblob_log_level level, const char *message)
{
    try {
        const auto &services = *static_cast<const DriverCore::Services *>(context);
        if (services.metrics) services.metrics->log_line(level);
        if (services.sink) services.sink(level, message ? message : "(null)");
    } catch (...) {
    }
}

// The C callback a 1.1 driver announces through (kvblob_host_services_t.notify):
// never blocks beyond a leaf lock (Notifier::announce), never calls the
// driver, never throws. op and event are not needed to wake: waiters confirm
// through poll and access, so an unknown or not-yet-returned op is harmless.
// An observer (Plugin::open's NotifySink) sees them first.
void notify_trampoline(void *context, kvblob_op_t *op, kvblob_notify_event event)
{
    auto &services = *static_cast<DriverCore::Services *>(context);
    try {
        if (services.observer) services.observer(op, event);
    } catch (...) {
    }
    services.notifier.announce();
}

const char *level_name(kvblob_log_level level)
{
    switch (level) {
    case KVBLOB_LOG_DEBUG: return "debug";
    case KVBLOB_LOG_INFO: return "info";
    case KVBLOB_LOG_WARN: return "warning";
    case KVBLOB_LOG_ERROR: return "error";
    case KVBLOB_LOG_MISBEHAVING: return "driver misbehaving";
    default: return "log";
    }
}

constexpr auto default_shutdown_timeout = std::chrono::seconds(10);

}  // namespace

LogSink stderr_log_sink(const std::string &driver_name)
{
    return [driver_name](kvblob_log_level level, const std::string &message) {
        if (level >= KVBLOB_LOG_WARN)
            std::fprintf(stderr, "kvblob[%s] %s: %s\n", driver_name.c_str(), level_name(level),
                         message.c_str());
    };
}

const char *to_string(OpKind kind)
{
    switch (kind) {
    case OpKind::put: return "put";
    case OpKind::get: return "get";
    case OpKind::probe: return "probe";
    case OpKind::remove: return "remove";
    }
    return "?";
}

CallError::CallError(kvblob_status status, std::string rule, const std::string &message)
    : std::runtime_error("[" + rule + "] " + message + " (" + kvblob_status_name(status) + ")"),
      status_(status),
      rule_(std::move(rule))
{
}

// ---- DriverCore -----------------------------------------------------------

DriverCore::DriverCore(std::shared_ptr<Library> lib, const kvblob_plugin_t *t, std::string n, LogSink s,
                       uint32_t abi, NotifySink observer, bool lend_notify, std::string metrics_label,
                       bool count_metrics)
    : library(std::move(lib)), table(t), name(std::move(n)), abi_version(abi),
      metrics_(count_metrics ? std::make_shared<DriverMetrics>(name, std::move(metrics_label)) : nullptr),
      services_(std::make_unique<Services>())
{
    services_->metrics = metrics_;
    services_->sink = std::move(s);
    services_->observer = std::move(observer);
    // Sized for the negotiated version: a 1.0 driver sees a 1.0 record.
    services_->table.struct_size =
        abi >= KVBLOB_ABI_1_1 ? sizeof services_->table : KVBLOB_HOST_SERVICES_SIZE_1_0;
    services_->table.context = services_.get();
    services_->table.log = &log_trampoline;
    // Lent only where the driver may read it: a 1.0 driver is polled.
    // (and where the caller asked for it: a host that polls lends none).
    if (abi >= KVBLOB_ABI_1_1 && lend_notify) services_->table.notify = &notify_trampoline;
}


DriverCore::~DriverCore()
{
    // After a shutdown that could not close (close(timeout) past its
    // timeout), only a look without waiting: the caller's timeout bounds
    // close, and the destructor must not wait a second time.
    if (handle) shutdown(shutdown_failed_ ? std::chrono::nanoseconds(0) : asked_timeout_.value_or(default_shutdown_timeout));
    // A driver still open may log through what it was lent at open: keep it,
    // and the driver itself, for the life of the process.
    if (handle) {
        keep_alive_for_good(services_.release());
        keep_alive_for_good(handle);
        // So are the operations and regions it could not let go of: handles
        // the driver may still use, never released.
        for (auto *op : parked_) keep_alive_for_good(op);
        for (auto *r : pinned_) keep_alive_for_good(r);
        return;  // still open: its metrics stay listed, with the memory it pins
    }
    if (metrics_) withdraw_metrics(metrics_.get());
}

void DriverCore::adopt(kvblob_driver_t *h, const kvblob_caps_t &c)
{
    handle = h;
    caps = c;
    if (metrics_) metrics_->declare_access_bound(c.flags & KVBLOB_CAP_ACCESS_BOUND ? c.access_end_bound_ns : 0);
    // scenarios: looked up and checked by the loader (host/src/loading/plugin.cpp).
}

void DriverCore::publish_metrics()
{
    if (!metrics_ || std::exchange(published_, true)) return;
    kvblob::publish_metrics(metrics_);
}

void DriverCore::note(kvblob_log_level level, const std::string &message) const
{
    if (services_->sink) services_->sink(level, message);
}

void DriverCore::threw(const char *slot, const std::string &what) noexcept
{
    try {
        std::lock_guard lock(thrown_mu_);
        if (metrics_) metrics_->contract_broken("exception");
        thrown_pending_.store(true, std::memory_order_release);
        thrown_.push_back("driver " + name + " threw a C++ exception out of " + slot +
                          " across the C ABI (" + what + "); the call is taken as refused, not final, its access "
                          "open: nothing the driver may touch is given back");
    } catch (...) {
    }
}

void DriverCore::flush_thrown()
{
    if (!thrown_pending_.load(std::memory_order_acquire)) return;
    std::vector<std::string> lines;
    {
        std::lock_guard lock(thrown_mu_);
        lines.swap(thrown_);
        thrown_pending_.store(false, std::memory_order_relaxed);
    }
    for (const auto &line : lines) note(KVBLOB_LOG_MISBEHAVING, line);
}

void DriverCore::pin(kvblob_region_t *region)
{
    Locked locked(*this);
    pinned_.push_back(region);
}

namespace {

// One call of a driver's drain, on a thread of its own (DriverCore::bounded_drain).
struct DrainCall {
    kvblob_status (*drain)(kvblob_driver_t *, uint64_t);
    kvblob_driver_t *driver;
    uint64_t timeout_ns;
    std::promise<kvblob_status> answer;
};

void *run_drain(void *arg)
{
    std::unique_ptr<DrainCall> call(static_cast<DrainCall *>(arg));
    kvblob_status st = KVBLOB_E_INTERNAL;
    try {
        st = call->drain(call->driver, call->timeout_ns);
    } catch (...) {  // reported by the caller as a drain that did not succeed
    }
    call->answer.set_value(st);
    return nullptr;
}

timespec realtime_after(std::chrono::nanoseconds d)
{
    timespec t{};
    clock_gettime(CLOCK_REALTIME, &t);
    const auto ns = static_cast<int64_t>(t.tv_nsec) + d.count() % 1000000000;
    t.tv_sec += static_cast<time_t>(d.count() / 1000000000 + ns / 1000000000);
    t.tv_nsec = static_cast<long>(ns % 1000000000);
    return t;
}

}  // namespace

kvblob_status DriverCore::bounded_drain(std::chrono::nanoseconds timeout)
{
    // The driver's drain runs on a thread of its own. One that overstays its
    // own timeout by more than a grace (a slot that blocks) is left running
    // there: this thread goes on, and everything the driver may still touch
    // stays alive for the life of the process, its code pinned. The drain
    // thread touches nothing of this object, which may be gone by then.
    // A drain that answered is joined, so that the thread's exit (its
    // thread-local objects destroyed, its TLS freed by the loader) is over
    // before the caller closes the driver and unloads its code; the join is
    // bounded by the grace too, for a thread-local destructor that blocks.
    if (drain_blocked_.load()) return KVBLOB_E_TIMEOUT;  // it still has not returned: not asked again
    auto *call = new DrainCall{table->drain, handle, static_cast<uint64_t>(timeout.count()), {}};
    auto answer = call->answer.get_future();
    pthread_t thread;
    if (pthread_create(&thread, nullptr, run_drain, call) != 0) {
        delete call;
        return KVBLOB_E_INTERNAL;  // no thread to bound it on: the driver was not asked
    }
    // Bounded by a year whatever the caller asked, so the sum cannot overflow.
    const auto wait = std::min<std::chrono::nanoseconds>(timeout, std::chrono::hours(24 * 365)) + drain_grace;
    if (answer.wait_for(wait) == std::future_status::ready) {
        const timespec until = realtime_after(drain_grace);
        if (pthread_timedjoin_np(thread, nullptr, &until) != 0) {
            pthread_detach(thread);
            library->pin();  // its thread-local destructors are the driver's code
            std::lock_guard lock(thrown_mu_);
            thrown_pending_.store(true, std::memory_order_release);
            thrown_.push_back("driver " + name + "'s drain answered, but its thread did not end within " +
                              std::to_string(drain_grace.count()) + " s more; it is left running, its code kept");
        }
        return answer.get();
    }
    pthread_detach(thread);
    drain_blocked_.store(true);
    library->pin();
    std::lock_guard lock(thrown_mu_);
    thrown_pending_.store(true, std::memory_order_release);
    thrown_.push_back("driver " + name + "'s drain did not return within its timeout and " +
                      std::to_string(drain_grace.count()) +
                      " s more; it is left running, and nothing it may touch is freed");
    return KVBLOB_E_TIMEOUT;
}

void DriverCore::defer_shutdown(std::chrono::nanoseconds timeout)
{
    Locked locked(*this);
    asked_timeout_ = timeout;
}

kvblob_status DriverCore::shutdown(std::chrono::nanoseconds timeout)
{
    Locked locked(*this);
    if (closed_ || !handle) return KVBLOB_OK;
    kvblob_status st = bounded_drain(timeout);
    std::erase_if(parked_, [&](kvblob_op_t *op) { return release_locked(op) == KVBLOB_OK; });
    std::erase_if(pinned_, [&](kvblob_region_t *r) { return unregister_locked(r) == KVBLOB_OK; });
    // Close only when nothing is left that the driver may still touch.
    if (st == KVBLOB_OK) st = parked_.empty() && pinned_.empty() ? call(&kvblob_plugin_t::close, "close", KVBLOB_E_INTERNAL, handle) : KVBLOB_E_BUSY;
    if (st != KVBLOB_OK) {
        // Something may still touch memory: keep the driver open and its code
        // mapped for the life of the process rather than free anything.
        library->pin();
        queue_note(KVBLOB_LOG_WARN, std::string("could not close (") + kvblob_status_name(st) + "): " +
                                  std::to_string(parked_.size()) + " operation(s) and " +
                                  std::to_string(pinned_.size()) +
                                  " region(s) stay alive for the life of the process");
        shutdown_failed_ = true;
        return st;
    }
    closed_ = true;
    handle = nullptr;
    if (metrics_) withdraw_metrics(metrics_.get());
    return KVBLOB_OK;
}

// ---- enforced calls ---------------------------------------------------------

kvblob_region_t *DriverCore::register_region(const kvblob_region_desc_t &desc)
{
    if (desc.kind == KVBLOB_MEMORY_DEVICE && !(caps.flags & KVBLOB_CAP_DEVICE_MEMORY))
        throw CallError(KVBLOB_E_REJECTED, "R-ADM-8",
                        "DEVICE memory, but driver " + name + " does not declare device_memory");
    if (desc.kind != KVBLOB_MEMORY_HOST && desc.kind != KVBLOB_MEMORY_DEVICE)
        throw CallError(KVBLOB_E_REJECTED, "R-ADM-8", "unknown memory kind " + std::to_string(desc.kind));
    if (!desc.base || desc.size == 0)
        throw CallError(KVBLOB_E_REJECTED, "R-REG-1", "a region needs a base address and a positive size");
    if (const std::string problem = memory_kind_problem(desc); !problem.empty())
        throw CallError(KVBLOB_E_REJECTED, "R-ADM-8", problem);
    char err[512] = {0};
    kvblob_region_t *region = nullptr;
    kvblob_status st = call(&kvblob_plugin_t::register_region, "register_region", KVBLOB_E_INTERNAL, handle, &desc,
                             &region, static_cast<char *>(err), static_cast<uint32_t>(sizeof err));
    err[sizeof err - 1] = '\0';
    flush_thrown();
    if (st != KVBLOB_OK || !region)
        throw CallError(st == KVBLOB_OK ? KVBLOB_E_INTERNAL : st, desc.kind == KVBLOB_MEMORY_DEVICE ? "R-ADM-8" : "R-REG-1",
                        "driver " + name + " refused the registration: " + err);
    Locked locked(*this);
    regions_[region] = RegionRecord{static_cast<const uint8_t *>(desc.base), desc.size, desc.kind, 0, false};
    if (metrics_) metrics_->region_registered(desc.size);
    return region;
}

kvblob_status DriverCore::unregister_region(kvblob_region_t *region)
{
    Locked locked(*this);
    return unregister_locked(region);
}

kvblob_status DriverCore::unregister_locked(kvblob_region_t *region)
{
    auto it = regions_.find(region);
    if (it == regions_.end()) return KVBLOB_E_INVALID;
    if (it->second.open_ops) {
        // Some of the operations naming it may have ended since last asked.
        for (auto &[op, record] : ops_)
            if (!record.access_settled &&
                std::find(record.regions.begin(), record.regions.end(), region) != record.regions.end())
                observe_access(op, record);
    }
    if (it->second.pinned) return KVBLOB_E_UNPROVABLE;  // R-REG-2: for good
    if (it->second.open_ops) return KVBLOB_E_BUSY;      // R-REG-1: the driver is not even asked
    kvblob_status st = call(&kvblob_plugin_t::unregister_region, "unregister_region", KVBLOB_E_INTERNAL, handle, region);
    if (st == KVBLOB_OK) {
        if (metrics_) metrics_->region_unregistered(it->second.size);
        regions_.erase(it);
    }
    return st;
}

kvblob_op_t *DriverCore::submit(OpKind kind, const kvblob_batch_t &batch)
{
    const uint64_t submitted_at = metrics_ ? tick_clock::now() : 0;
    auto field = &kvblob_plugin_t::put;  // the four slots share one signature
    bool declared = true;
    switch (kind) {
    case OpKind::put: field = &kvblob_plugin_t::put; break;
    case OpKind::get: field = &kvblob_plugin_t::get; break;
    case OpKind::probe: field = &kvblob_plugin_t::probe, declared = caps.flags & KVBLOB_CAP_PROBE; break;
    case OpKind::remove: field = &kvblob_plugin_t::remove, declared = caps.flags & KVBLOB_CAP_REMOVE; break;
    }
    if (!declared || !(table->*field)) {
        if (metrics_) {
            Locked locked(*this);  // the submitted counter's writers hold it
            metrics_->submitted(kind);
            metrics_->refused(kind, "R-CAP-1");
        }
        throw CallError(KVBLOB_E_UNSUPPORTED, "R-CAP-1",
                        std::string(to_string(kind)) + " is not declared by driver " + name);
    }
    AdmissionVerdict verdict;
    {
        Locked locked(*this);
        if (metrics_) metrics_->submitted(kind);
        verdict = admit(caps, kind, batch, [&](kvblob_region_t *r) -> const RegionRecord * {
            auto it = regions_.find(r);
            return it == regions_.end() ? nullptr : &it->second;
        });
        if (!verdict.rule.empty()) {
            if (metrics_) metrics_->refused(kind, verdict.rule);
            throw CallError(KVBLOB_E_REJECTED, verdict.rule,
                            std::string(to_string(kind)) + " refused before reaching driver " + name + ": " +
                                verdict.reason);
        }
        // Counted before dispatch, so no unregister can slip in meanwhile.
        for (auto *r : verdict.regions) ++regions_[r].open_ops;
    }
    char err[512] = {0};
    kvblob_op_t *op = nullptr;
    kvblob_status st = call(field, to_string(kind), KVBLOB_E_INTERNAL, handle, &batch, &op, static_cast<char *>(err),
                            static_cast<uint32_t>(sizeof err));
    err[sizeof err - 1] = '\0';
    Locked locked(*this);
    if (st != KVBLOB_OK || !op) {
        // Only a refusal certifies that no memory was touched (R-ADM-1). A
        // slot that threw (taken as E_INTERNAL by call()) or answered any
        // other failure proves nothing: the memory its spans name stays
        // registered for good, as after unprovable access (R-REG-2).
        const bool refused = st == KVBLOB_E_REJECTED || st == KVBLOB_E_CLOSED;
        for (auto *r : verdict.regions) {
            --regions_[r].open_ops;
            if (!refused) pin_locked(regions_[r]);
        }
        std::smatch rule;
        const std::string text = err;
        const bool cited = std::regex_search(text, rule, std::regex(R"(R-[A-Z]+-[0-9]+)"));
        std::string what = std::string(to_string(kind)) + " refused by driver " + name + ": " + text;
        if (metrics_) metrics_->refused(kind, cited ? rule.str() : "driver");
        if (!refused) {
            if (metrics_) metrics_->contract_broken("R-ADM-1");
            const std::string answer = st == KVBLOB_OK ? std::string("OK without an operation") : kvblob_status_name(st);
            if (!verdict.regions.empty())
                queue_note(KVBLOB_LOG_MISBEHAVING,
                           "driver " + name + " broke R-ADM-1: its " + to_string(kind) + " answered " + answer +
                               ", not a refusal (REJECTED or CLOSED): nothing proves its memory was left alone, so its " +
                               std::to_string(verdict.regions.size()) +
                               " region(s) stay registered and their memory must stay alive for the life of the "
                               "process (R-REG-2)");
            what = std::string(to_string(kind)) + " failed in driver " + name + " (" + answer + ": " + text +
                   "); not a refusal, so the regions it names stay held for good (R-ADM-1)";
        }
        throw CallError(st == KVBLOB_OK ? KVBLOB_E_INTERNAL : st, cited ? rule.str() : "R-ADM-1", what);
    }
    OpRecord record;
    record.kind = kind;
    record.rows = batch.row_count;
    record.regions = std::move(verdict.regions);
    record.submitted_at = submitted_at;
    record.uniform_row_bytes = verdict.uniform_row_bytes;
    record.row_bytes = std::move(verdict.row_bytes);
    ops_[op] = std::move(record);
    if (metrics_) metrics_->admitted();
    return op;
}

kvblob_access DriverCore::observe_access(kvblob_op_t *op, OpRecord &record)
{
    const kvblob_access a = call(&kvblob_plugin_t::access, "access", KVBLOB_ACCESS_OPEN, handle, op);
    if (record.access_settled) return a;
    if (a == KVBLOB_ACCESS_ENDED) {
        for (auto *r : record.regions)
            if (auto it = regions_.find(r); it != regions_.end() && it->second.open_ops) --it->second.open_ops;
        record.access_settled = true;
        // Seen ended at the first look after final: it stayed open no time
        // the host could see, and costs no clock reading.
        if (metrics_ && record.final_seen)
            metrics_->access_ended(record.kind, record.open_after_final
                                                    ? tick_clock::between(record.final_at, tick_clock::now())
                                                    : std::chrono::nanoseconds(0));
    } else if (a == KVBLOB_ACCESS_UNPROVABLE) {
        for (auto *r : record.regions)
            if (auto it = regions_.find(r); it != regions_.end()) pin_locked(it->second);
        record.access_settled = true;
        queue_note(KVBLOB_LOG_WARN, "driver " + name + ": an operation's access is unprovable; its " +
                                  std::to_string(record.regions.size()) +
                                  " region(s) stay registered and their memory must stay alive for the life of "
                                  "the process (R-REG-2)");
    } else if (a == KVBLOB_ACCESS_OPEN) {
        if (record.final_seen) record.open_after_final = true;
    } else {
        if (metrics_) metrics_->contract_broken("R-ACC-1");
        if (record.rules_logged.insert("R-ACC-1").second)
            queue_note(KVBLOB_LOG_MISBEHAVING, "driver " + name + " broke R-ACC-1: access answered " + std::to_string(a) +
                                             "; taken as still open");
        return KVBLOB_ACCESS_OPEN;
    }
    return a;
}

DriverCore::OpRecord &DriverCore::record_of(kvblob_op_t *op, const char *member)
{
    auto it = ops_.find(op);
    if (it == ops_.end())
        throw CallError(KVBLOB_E_INVALID, "R-OPS-1",
                        std::string(member) + ": not an operation the host holds for driver " + name +
                            " (released, or never admitted); the driver is not asked");
    return it->second;
}

bool DriverCore::is_final(kvblob_op_t *op)
{
    // The driver is asked without mu_ held: a poll may run the operation's
    // queued work in this thread (a waiter doing its own work, rather than
    // waiting for a busy machine to schedule the driver's worker), and the
    // host's other calls on this driver must not wait for that. The handle
    // is checked live first; its owner (an Operation) is the only one that
    // may release it, so it stays live across the unlocked call.
    {
        Locked locked(*this);
        ++record_of(op, "is_final").unlocked_calls;
    }
    uint32_t fin = 0;
    const bool final = call(&kvblob_plugin_t::poll, "poll", KVBLOB_E_INTERNAL, handle, op, &fin) == KVBLOB_OK && fin != 0;
    Locked locked(*this);
    OpRecord &record = record_of(op, "is_final");
    --record.unlocked_calls;
    return judge_final(final, record);
}

void DriverCore::end_unlocked_call(kvblob_op_t *op)
{
    Locked locked(*this);
    if (auto it = ops_.find(op); it != ops_.end()) --it->second.unlocked_calls;
}

bool DriverCore::observe_final(kvblob_op_t *op, OpRecord &record)
{
    uint32_t fin = 0;
    const bool final = call(&kvblob_plugin_t::poll, "poll", KVBLOB_E_INTERNAL, handle, op, &fin) == KVBLOB_OK && fin != 0;
    return judge_final(final, record);
}

bool DriverCore::judge_final(bool final, OpRecord &record)
{
    if (metrics_ && final && !record.final_seen) {
        record.final_at = tick_clock::now();
        metrics_->until_final(record.kind, tick_clock::between(record.submitted_at, record.final_at));
    }
    if (final) record.final_seen = true;
    if (!final && record.final_seen) {
        if (metrics_) metrics_->contract_broken("R-ROW-1");
        if (record.rules_logged.insert("R-ROW-1 poll").second)
            queue_note(KVBLOB_LOG_MISBEHAVING,
                       "driver " + name + " broke R-ROW-1: poll went back from final; the operation stays final");
        return true;
    }
    return final;
}

kvblob_access DriverCore::access(kvblob_op_t *op)
{
    Locked locked(*this);
    return observe_access(op, record_of(op, "access"));
}

std::vector<RowStatus> DriverCore::results(kvblob_op_t *op)
{
    std::optional<Locked> locked(std::in_place, *this);
    if (!record_of(op, "results").final_seen) {
        // Not seen final yet: asked first without mu_ (is_final), since that
        // poll may run the operation's queued work, and the driver's log
        // calls made meanwhile must reach a sink free to call the host.
        locked.reset();
        is_final(op);
        locked.emplace(*this);
    }
    OpRecord &record = record_of(op, "results");
    const bool final = observe_final(op, record);
    // The driver's answers land in a buffer this thread keeps for the next
    // operation (a very large one gets its own, not kept): fetching results
    // allocates the vector returned, and the first final copy once.
    constexpr uint64_t kept_rows = 4096;
    thread_local std::vector<kvblob_row_status_t> kept;
    std::vector<kvblob_row_status_t> own;
    std::vector<kvblob_row_status_t> &raw = record.rows <= kept_rows ? kept : own;
    raw.assign(record.rows, kvblob_row_status_t{sizeof(kvblob_row_status_t), KVBLOB_ROW_PENDING, 0, 0});
    const kvblob_status st = record.rows ? call(&kvblob_plugin_t::results, "results", KVBLOB_E_INTERNAL, handle, op,
                                                 uint64_t{0}, record.rows, raw.data())
                                          : KVBLOB_OK;
    if (!final) {  // rows may still be pending; nothing is final to check yet
        std::vector<RowStatus> out(record.rows);
        for (size_t i = 0; i < raw.size(); ++i)
            out[i] = {st == KVBLOB_OK ? raw[i].result : KVBLOB_ROW_PENDING, raw[i].driver_code};
        return out;
    }
    return judged_rows(record, st, raw);
}

std::vector<RowStatus> DriverCore::judged_rows(OpRecord &record, kvblob_status st,
                                               const std::vector<kvblob_row_status_t> &raw)
{
    std::vector<RowStatus> out(raw.size());
    const RowStatus *first = record.first_final ? record.first_final->data() : nullptr;
    // The first final answer is the one that stands (R-ROW-1): its rows are
    // counted, once, in the same pass that checks them.
    const bool count = !first && metrics_;
    std::array<uint64_t, KVBLOB_ROW_RESULT_LAST + 1> rows{};
    uint64_t ready_bytes = 0;
    const uint64_t *each_bytes = record.row_bytes.empty() ? nullptr : record.row_bytes.data();
    for (size_t i = 0; i < raw.size(); ++i) {
        CheckedRow checked = check_answer(record.kind, record.cancel_requested, st, raw[i], first ? first + i : nullptr);
        out[i] = checked.status;
        if (count && static_cast<uint32_t>(out[i].result) <= KVBLOB_ROW_RESULT_LAST) {
            ++rows[static_cast<size_t>(out[i].result)];
            if (out[i].result == KVBLOB_ROW_READY) ready_bytes += each_bytes ? each_bytes[i] : record.uniform_row_bytes;
        }
        if (!checked.broken_rule) continue;
        if (metrics_) metrics_->contract_broken(checked.broken_rule);
        record.host_messages[i] = std::string("host: driver broke ") + checked.broken_rule + ": " + checked.why;
        if (record.rules_logged.insert(checked.broken_rule).second)
            queue_note(KVBLOB_LOG_MISBEHAVING, "driver " + name + " broke " + checked.broken_rule + " (row " +
                                             std::to_string(i) + "): " + checked.why);
    }
    if (count) metrics_->rows(record.kind, rows, ready_bytes);
    if (!record.first_final) record.first_final = out;
    return out;
}

void DriverCore::count_unread_rows(kvblob_op_t *op, OpRecord &record)
{
    if (record.first_final || !metrics_) return;
    std::vector<kvblob_row_status_t> raw(record.rows,
                                         kvblob_row_status_t{sizeof(kvblob_row_status_t), KVBLOB_ROW_PENDING, 0, 0});
    const kvblob_status st = record.rows ? call(&kvblob_plugin_t::results, "results", KVBLOB_E_INTERNAL, handle, op,
                                                 uint64_t{0}, record.rows, raw.data())
                                          : KVBLOB_OK;
    judged_rows(record, st, raw);
}

void DriverCore::pin_locked(RegionRecord &region)
{
    if (std::exchange(region.pinned, true)) return;
    if (metrics_) metrics_->region_pinned(region.size);
}

std::string DriverCore::message(kvblob_op_t *op, uint64_t row)
{
    {
        Locked locked(*this);
        OpRecord &record = record_of(op, "message");
        if (row >= record.rows)
            throw CallError(KVBLOB_E_INVALID, "R-ROW-1",
                            "message: row " + std::to_string(row) + " is outside the operation's " +
                                std::to_string(record.rows) + " row(s); driver " + name + " is not asked");
        if (auto m = record.host_messages.find(row); m != record.host_messages.end()) return m->second;
        ++record.unlocked_calls;
    }
    char buf[512] = {0};
    call(&kvblob_plugin_t::row_message, "row_message", uint32_t{0}, handle, op, row, static_cast<char *>(buf),
         static_cast<uint32_t>(sizeof buf));
    buf[sizeof buf - 1] = '\0';
    end_unlocked_call(op);
    return buf;
}

kvblob_status DriverCore::cancel(kvblob_op_t *op)
{
    {
        Locked locked(*this);
        OpRecord &record = record_of(op, "cancel");
        record.cancel_requested = true;
        ++record.unlocked_calls;
    }
    const kvblob_status st = call(&kvblob_plugin_t::cancel, "cancel", KVBLOB_E_INTERNAL, handle, op);
    end_unlocked_call(op);
    return st;
}

kvblob_status DriverCore::release(kvblob_op_t *op)
{
    Locked locked(*this);
    return release_locked(op);
}

kvblob_status DriverCore::release_locked(kvblob_op_t *op)
{
    auto it = ops_.find(op);
    if (it == ops_.end()) return KVBLOB_E_INVALID;  // not the host's (any more): the driver is not asked
    if (it->second.unlocked_calls) return KVBLOB_E_BUSY;  // another thread's call is still in the driver
    const kvblob_access a = observe_access(op, it->second);
    if (a == KVBLOB_ACCESS_UNPROVABLE) return KVBLOB_E_UNPROVABLE;  // kept for good (R-OPS-1)
    if (a != KVBLOB_ACCESS_ENDED || !observe_final(op, it->second)) return KVBLOB_E_BUSY;  // the driver is not asked
    count_unread_rows(op, it->second);
    kvblob_status st = call(&kvblob_plugin_t::release, "release", KVBLOB_E_INTERNAL, handle, op);
    if (st == KVBLOB_OK) {
        ops_.erase(it);
        if (metrics_) metrics_->released();
    }
    return st;
}

void DriverCore::abandon(kvblob_op_t *op)
{
    Locked locked(*this);
    kvblob_status st = release_locked(op);
    if (st == KVBLOB_E_BUSY) {
        // Not final or access still open: stop what has not started and keep
        // the handle until shutdown, which releases it after its drain.
        if (auto it = ops_.find(op); it != ops_.end()) it->second.cancel_requested = true;
        call(&kvblob_plugin_t::cancel, "cancel", KVBLOB_E_INTERNAL, handle, op);
        st = release_locked(op);
    }
    // Any answer but OK leaves the handle the driver's: a release that threw
    // or failed proves nothing either. INVALID: not the host's to keep.
    if (st != KVBLOB_OK && st != KVBLOB_E_INVALID) parked_.push_back(op);
}

// ---- Region ---------------------------------------------------------------

Region::Region(std::shared_ptr<DriverCore> core, kvblob_region_t *handle)
    : core_(std::move(core)), handle_(handle)
{
}
Region::Region(Region &&o) noexcept : core_(std::move(o.core_)), handle_(std::exchange(o.handle_, nullptr)) {}
Region &Region::operator=(Region &&o) noexcept
{
    if (this != &o) {
        Region old(std::move(*this));  // unregisters what this held
        core_ = std::move(o.core_);
        handle_ = std::exchange(o.handle_, nullptr);
    }
    return *this;
}

kvblob_status Region::unregister()
{
    if (!handle_) return KVBLOB_OK;
    kvblob_status st = core_->unregister_region(handle_);
    if (st == KVBLOB_OK) handle_ = nullptr;
    return st;
}

Region::~Region()
{
    if (!handle_) return;
    kvblob_status st = unregister();
    if (st != KVBLOB_OK) {
        core_->note(KVBLOB_LOG_WARN, std::string("region kept registered (") + kvblob_status_name(st) +
                                         "): its memory must stay alive" +
                                         (st == KVBLOB_E_UNPROVABLE ? " for the life of the process (R-REG-2)"
                                                                    : " until the driver shuts down (R-REG-1)"));
        core_->pin(handle_);
    }
}

// ---- Operation ------------------------------------------------------------

Operation::Operation(std::shared_ptr<DriverCore> core, kvblob_op_t *handle, uint64_t rows)
    : core_(std::move(core)), handle_(handle), rows_(rows)
{
}
Operation::Operation(Operation &&o) noexcept
    : core_(std::move(o.core_)),
      handle_(std::exchange(o.handle_, nullptr)),
      rows_(o.rows_),
      released_(std::exchange(o.released_, false))
{
}
Operation &Operation::operator=(Operation &&o) noexcept
{
    if (this != &o) {
        abandon();
        core_ = std::move(o.core_);
        handle_ = std::exchange(o.handle_, nullptr);
        rows_ = o.rows_;
        released_ = std::exchange(o.released_, false);
    }
    return *this;
}
Operation::~Operation() { abandon(); }

void Operation::abandon() noexcept
{
    if (!handle_) return;
    core_->abandon(handle_);
    handle_ = nullptr;
}

DriverCore &Operation::owned(const char *member) const
{
    if (!handle_)
        throw CallError(KVBLOB_E_INVALID, "R-OPS-1",
                        std::string("Operation::") + member + "() on " +
                            (released_ ? "an operation already released: after release the handle is dead"
                                       : "an object that holds no operation (moved from, or default-constructed)") +
                            "; no driver is asked");
    return *core_;
}

kvblob_status Operation::release()
{
    kvblob_status st = owned("release").release(handle_);
    if (st == KVBLOB_OK) {
        handle_ = nullptr;
        released_ = true;
    }
    return st;
}

bool Operation::is_final() const { return owned("is_final").is_final(handle_); }
kvblob_access Operation::access() const { return owned("access").access(handle_); }

bool Operation::wait(std::chrono::milliseconds timeout) const
{
    DriverCore &core = owned("wait");
    const auto settled = [&] { return is_final() && access() != KVBLOB_ACCESS_OPEN; };
    // Settled already (a driver that finished inside its submit, or a poll
    // that ran the rows itself): answered before the clock is read. Each
    // read is a call of its own, and a settled wait was mostly clock.
    if (settled()) return true;
    const auto start = std::chrono::steady_clock::now();
    const auto deadline = start + timeout;
    if (core.notifies()) {
        // Every operation of the driver announces through one generation:
        // the watch is the wait's, once, and a round woken by another
        // operation's announcement sleeps again at once. Watching per round
        // kept every waiter spinning whenever announcements came more often
        // than the watch lasts. Its length follows the driver's recent
        // waits (WaitHistory, watch.hpp).
        const auto watch_end = start + core.waits().next_watch();
        // The generation is read before the state is asked, so an
        // announcement between the two still wakes the wait below.
        for (;;) {
            const uint64_t seen = core.notifier().current();
            if (settled()) {
                core.waits().record(std::chrono::steady_clock::now() - start);
                return true;
            }
            if (std::chrono::steady_clock::now() >= deadline) return false;
            core.notifier().wait_past(seen, deadline, watch_end);
        }
    }
    // Polled: watched first, then looked at after sleeps that double.
    if (watch(deadline, settled)) return true;
    auto pause = std::chrono::microseconds(1);
    while (!settled()) {
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::microseconds(1000));
    }
    return true;
}

int Operation::completion_fd() const noexcept
{
    if (!core_ || !core_->notifies()) return -1;
    return core_->notifier().fd();
}

std::vector<RowStatus> Operation::results() const { return owned("results").results(handle_); }
std::string Operation::message(uint64_t row) const { return owned("message").message(handle_, row); }
kvblob_status Operation::cancel() const { return owned("cancel").cancel(handle_); }

// ---- Driver ---------------------------------------------------------------

Driver::~Driver() = default;

const kvblob_plugin_t &Driver::table() const noexcept { return *core_->table; }
kvblob_driver_t *Driver::handle() const noexcept { return core_->handle; }
const kvblob_caps_t &Driver::caps() const noexcept { return core_->caps; }
const kvblob_scenarios_t *Driver::scenarios() const noexcept { return core_->scenarios; }
const std::string &Driver::name() const noexcept { return core_->name; }
MetricsSnapshot Driver::metrics() const { return core_->metrics_snapshot(); }
int Driver::completion_fd() const noexcept
{
    if (!core_->notifies()) return -1;
    return core_->notifier().fd();
}

Region Driver::register_region(const kvblob_region_desc_t &desc) { return Region(core_, core_->register_region(desc)); }

Operation Driver::submit(OpKind kind, const kvblob_batch_t &batch)
{
    return Operation(core_, core_->submit(kind, batch), batch.row_count);
}

kvblob_status Driver::drain(std::chrono::nanoseconds timeout)
{
    const kvblob_status st = core_->bounded_drain(timeout);
    core_->flush_thrown();
    return st;
}

kvblob_status Driver::shutdown(std::chrono::nanoseconds timeout)
{
    if (core_.use_count() > 1) {
        core_->note(KVBLOB_LOG_WARN, "shutdown deferred: regions or operations are still held by the caller");
        core_->defer_shutdown(timeout);
        return KVBLOB_E_BUSY;
    }
    return core_->shutdown(timeout);
}

}  // namespace kvblob
