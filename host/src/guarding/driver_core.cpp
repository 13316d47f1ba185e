// DriverCore's life: what the host lends the driver at open, the log
// lines of slots that threw, the bounded drain, and shutdown. The calls it
// holds to the contract are in driver_core_calls.cpp.
#include "driver_core.hpp"

#include <algorithm>
#include <future>
#include <memory>
#include <utility>

#include <pthread.h>
#include <time.h>

#include "kvblob/host/keep_alive.hpp"

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

constexpr auto default_shutdown_timeout = std::chrono::seconds(10);

}  // namespace

DriverCore::DriverCore(std::shared_ptr<LoadedObject> lib, const kvblob_plugin_t *t, std::string n, LogSink s,
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

}  // namespace kvblob
