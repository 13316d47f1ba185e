// The shared state behind Driver, Region and Operation: the driver handle,
// and the host's own record of every registration and operation, which it
// enforces the contract with, whatever the driver does. Internal.
//
// Region and Operation objects hold it by shared_ptr, so the driver is shut
// down only when the last of them is gone: an operation can never outlive
// the driver it would have to be released to.
#pragma once

#include <kvblob/kvblob.h>

#include "notifier.hpp"
#include "watch.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "admission.hpp"
#include "kvblob/host/types.hpp"
#include "kvblob/host/metrics.hpp"
#include "loaded_object/loaded_object.hpp"
#include "metrics/driver_metrics.hpp"

namespace kvblob {

class DriverCore {
public:
    DriverCore(std::shared_ptr<LoadedObject> library, const kvblob_plugin_t *table, std::string name, LogSink sink,
               uint32_t abi_version = KVBLOB_ABI_VERSION, NotifySink observer = {}, bool lend_notify = true,
               std::string metrics_label = {}, bool count_metrics = true);
    DriverCore(const DriverCore &) = delete;
    DriverCore &operator=(const DriverCore &) = delete;
    ~DriverCore();

    void adopt(kvblob_driver_t *handle, const kvblob_caps_t &caps);
    // Lists this driver among the open ones (metrics_of_open_drivers), once
    // the loader has accepted it; it leaves the list when it closes.
    void publish_metrics();
    // Zeros, but for the names, where counting is off (LoadOptions::count_metrics).
    MetricsSnapshot metrics_snapshot() const
    {
        if (metrics_) return metrics_->snapshot();
        MetricsSnapshot empty;
        empty.driver = name;
        return empty;
    }
    void note(kvblob_log_level level, const std::string &message) const;
    kvblob_status shutdown(std::chrono::nanoseconds timeout);
    // The caller asked for a shutdown while it still holds regions or
    // operations: the one that runs when the last holder lets go keeps this
    // timeout, not the default.
    void defer_shutdown(std::chrono::nanoseconds timeout);

    // ---- enforced calls (each refuses before dispatch where the host can) ----
    kvblob_region_t *register_region(const kvblob_region_desc_t &desc);  // throws CallError
    kvblob_status unregister_region(kvblob_region_t *region);
    kvblob_op_t *submit(OpKind kind, const kvblob_batch_t &batch, Vouch vouched);  // throws CallError
    bool is_final(kvblob_op_t *op);
    kvblob_access access(kvblob_op_t *op);
    // Into out, sized to the rows (its memory kept from one call to the next).
    void results(kvblob_op_t *op, std::vector<RowStatus> &out);
    std::string message(kvblob_op_t *op, uint64_t row);
    kvblob_status cancel(kvblob_op_t *op);
    kvblob_status release(kvblob_op_t *op);
    // The owner let go: release now, or cancel and keep it until shutdown.
    void abandon(kvblob_op_t *op);
    // A registration the caller let go of that could not end yet.
    void pin(kvblob_region_t *region);

    // What the host lends the driver at open (kvblob_host_services_t and the
    // log sink behind it). The ABI keeps it valid until close succeeds, so it
    // lives on the heap: a driver that cannot be closed keeps it for good.
    struct Services {
        LogSink sink;
        NotifySink observer;  // sees each announcement first; may be empty
        Notifier notifier;  // what the driver's notify (ABI 1.1) reaches
        WaitHistory waits;  // how long Operation::wait has waited lately
        std::shared_ptr<DriverMetrics> metrics;  // counts the driver's log lines
        kvblob_host_services_t table{};
    };
    const kvblob_host_services_t *services() const { return &services_->table; }
    // Whether the driver announces its operations (KVBLOB_CAP_NOTIFY), so
    // waiting needs no polling.
    bool notifies() const { return (caps.flags & KVBLOB_CAP_NOTIFY) != 0; }
    Notifier &notifier() { return services_->notifier; }
    WaitHistory &waits() { return services_->waits; }

    // The object the driver's code lives in: kept loaded as long as this
    // core, pinned where the driver may still run after it.
    std::shared_ptr<LoadedObject> library;
    const kvblob_plugin_t *table;
    std::string name;
    // The version negotiated with the plugin: what the driver may use.
    uint32_t abi_version;
    kvblob_driver_t *handle = nullptr;
    kvblob_caps_t caps{};
    const kvblob_scenarios_t *scenarios = nullptr;
    // The values of the driver's secret options (Plugin::secrets_in), set
    // once at open: its row messages and its refusals' words (submit,
    // register_region) are read without them, as its log lines are.
    std::vector<std::string> secrets;

    // Calls the driver's slot `field` of its table. No exception may cross
    // the C ABI; one that does anyway is caught here, logged as MISBEHAVING,
    // and the call answers `otherwise`, which always assumes nothing
    // happened and nothing ended (refused, not final, access open, release
    // and close refused): no memory a driver may touch is given back on the
    // strength of a call that threw.
    template <class Field, class R, class... A>
    R call(Field kvblob_plugin_t::*field, const char *slot, R otherwise, A... args) noexcept
    {
        try {
            return (table->*field)(args...);
        } catch (const std::exception &e) {
            threw(slot, e.what());
        } catch (...) {
            threw(slot, "an exception that is not a std::exception");
        }
        return otherwise;
    }

    // The driver's drain, bounded: E_TIMEOUT when the slot itself does not
    // return in time (see driver_core.cpp); its log line waits for flush_thrown.
    kvblob_status bounded_drain(std::chrono::nanoseconds timeout);
    static constexpr std::chrono::seconds drain_grace{2};
    // Sends the log lines of thrown exceptions and blocked slots.
    void flush_thrown();

private:
    // Records a thrown exception for the log; sent when mu_ is next released
    // (or at once, by flush_thrown, where no lock follows the call).
    void threw(const char *slot, const std::string &what) noexcept;

    // Holds mu_. Log lines queued while it is held are sent after it is
    // released, so an engine's log sink may call back into the host.
    class Locked {
    public:
        explicit Locked(DriverCore &core) : core_(core), lock_(core.mu_) {}
        Locked(const Locked &) = delete;
        Locked &operator=(const Locked &) = delete;
        ~Locked()
        {
            auto notes = std::move(core_.queued_notes_);
            core_.queued_notes_.clear();
            lock_.unlock();
            for (const auto &[level, message] : notes) core_.note(level, message);
            core_.flush_thrown();
        }

    private:
        DriverCore &core_;
        std::unique_lock<std::mutex> lock_;
    };
    // Caller holds mu_ (through Locked).
    void queue_note(kvblob_log_level level, std::string message) { queued_notes_.emplace_back(level, std::move(message)); }

    // A field added to a record is reset in OpRecord::reset (op_records.cpp).
    struct OpRecord {
        OpKind kind = OpKind::put;
        uint64_t rows = 0;
        // What the metrics need: when it was submitted and first seen final
        // (metrics/tick_clock.hpp), whether its access was seen still open
        // after that, and each row's bytes (one figure when every row has
        // the same).
        uint64_t submitted_at = 0, final_at = 0;
        bool open_after_final = false;
        uint64_t uniform_row_bytes = 0;
        std::vector<uint64_t> row_bytes;  // empty when uniform
        std::vector<kvblob_region_t *> regions;
        bool access_settled = false;  // ENDED or UNPROVABLE seen and accounted
        bool cancel_requested = false;
        bool final_seen = false;  // results are final for good once seen so
        // The first final answer, which stands (R-ROW-1), once has_first_final.
        bool has_first_final = false;
        std::vector<RowStatus> first_final;
        std::map<uint64_t, std::string> host_messages;  // rows the host turned into FAULT
        std::set<std::string> rules_logged;
        // Calls on it that ask the driver without mu_ held (is_final,
        // message, cancel), from their check that it is live until the
        // driver answered. release answers BUSY while any is in progress:
        // a release from another thread (two Python threads sharing an
        // operation, say) would otherwise let such a call reach a handle
        // the driver has freed, or already handed to a new operation.
        uint32_t unlocked_calls = 0;

        // As new, keeping the memory of its first final answer (a released
        // record kept for the next submit: spare_records_; submit replaces
        // its regions and row sizes with the admission's).
        void reset();
    };
    // Caller holds mu_ (through Locked). Asks the driver for op's access and accounts for it
    // once it has ended (or become unprovable).
    kvblob_access observe_access(kvblob_op_t *op, OpRecord &record);
    // Caller holds mu_. Polls op; once final it stays final, whatever the
    // driver answers later (which is logged).
    bool observe_final(kvblob_op_t *op, OpRecord &record);
    // Records what poll answered (R-ROW-1: final never goes back). Holds mu_.
    bool judge_final(bool final, OpRecord &record);
    // Without mu_: counts out a call on op that asked the driver unlocked
    // (OpRecord::unlocked_calls), and sends what it left for the log.
    void end_unlocked_call(kvblob_op_t *op);
    kvblob_status release_locked(kvblob_op_t *op);
    // A submit's stages (driver_core_calls.cpp): the declared slot
    // (R-CAP-1), the host's admission, and what a driver that did not
    // admit leaves (caller holds mu_); each of the three throws CallError.
    using SubmitSlot = decltype(&kvblob_plugin_t::put);
    SubmitSlot declared_slot(OpKind kind);
    AdmissionVerdict admitted(OpKind kind, const kvblob_batch_t &batch, Vouch vouched);
    [[noreturn]] void throw_not_admitted(OpKind kind, kvblob_status st, const char *err, size_t err_size,
                                         const std::vector<kvblob_region_t *> &regions);
    // text, which the driver wrote into a buffer of buffer_size bytes,
    // without its secrets; longer: it said its text was longer than the
    // buffer (cut, as one that fills it).
    std::string driver_words(const char *text, size_t buffer_size, bool longer = false) const;
    // Caller holds mu_. The host's record of op; throws CallError (R-OPS-1)
    // for a handle the host does not hold, so no dead handle reaches the
    // driver.
    OpRecord &record_of(kvblob_op_t *op, const char *member);
    kvblob_status unregister_locked(kvblob_region_t *region);
    // Caller holds mu_. The host's answer for each row of a final operation
    // (check_answer); the first final answer is kept and counted.
    void judged_rows(OpRecord &record, kvblob_status st, const std::vector<kvblob_row_status_t> &raw,
                     std::vector<RowStatus> &out);
    // Caller holds mu_. Counts a final operation's rows once, asking the
    // driver for them when the caller never did (an operation released or
    // abandoned unread).
    void count_unread_rows(kvblob_op_t *op, OpRecord &record);
    // Caller holds mu_. Marks a registration pinned for good, counting its
    // bytes once.
    void pin_locked(RegionRecord &region);

    std::shared_ptr<DriverMetrics> metrics_;  // null where counting is off
    bool published_ = false;
    std::unique_ptr<Services> services_;
    std::mutex mu_;
    std::unordered_map<kvblob_region_t *, RegionRecord> regions_;
    std::unordered_map<kvblob_op_t *, OpRecord> ops_;
    // Released operations' records, each in its node of ops_ (extract), kept
    // for the next submits under mu_: measured with perf on a 4 KiB get, the
    // node and the first final answer's copy were two of the host's four
    // allocations an operation, in every engine's and every tier's host.
    std::vector<decltype(ops_)::node_type> spare_records_;
    // Caller holds mu_. op's record, as new.
    OpRecord &fresh_record(kvblob_op_t *op);
    // Caller holds mu_. Keeps a released operation's record, or lets it go.
    void keep_record(decltype(ops_)::node_type released);
    std::vector<kvblob_op_t *> parked_;
    std::vector<kvblob_region_t *> pinned_;
    std::vector<std::pair<kvblob_log_level, std::string>> queued_notes_;
    std::mutex thrown_mu_;  // a leaf: never held while anything else is called
    std::vector<std::string> thrown_;
    // Whether thrown_ may hold lines: every call flushes, almost always
    // nothing, and a look at this costs less than taking thrown_mu_.
    std::atomic<bool> thrown_pending_{false};
    std::atomic<bool> drain_blocked_{false};  // a drain never returned: never call it again
    bool closed_ = false;
    // The timeout of the caller's last shutdown: one deferred (its regions or
    // operations still held) runs with it when the last holder lets go.
    std::optional<std::chrono::nanoseconds> asked_timeout_;
    // A shutdown ran and could not close: the destructor only looks again,
    // without waiting, so close(timeout) is never followed by a second wait.
    bool shutdown_failed_ = false;
};

}  // namespace kvblob
