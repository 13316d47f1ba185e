// RAII around one opened driver, its region registrations and its
// operations. The types here never release a handle or end a registration
// while the driver may still touch the memory behind it.
#pragma once

#include <kvblob/kvblob.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "kvblob/host/metrics.hpp"
#include "kvblob/host/types.hpp"

namespace kvblob {

// The default sink: WARN and above to stderr (MISBEHAVING always).
LogSink stderr_log_sink(const std::string &driver_name);

class DriverCore;

// A registration; unregisters when destroyed. If the driver still refuses
// (access open or unprovable), the registration is pinned: the handle is
// kept by the driver object and retried at shutdown, and the caller must keep
// the memory alive (the log says so).
class Region {
public:
    Region() = default;
    Region(Region &&) noexcept;
    Region &operator=(Region &&) noexcept;
    ~Region();
    kvblob_region_t *handle() const noexcept { return handle_; }
    explicit operator bool() const noexcept { return handle_ != nullptr; }
    // Unregisters now; returns the driver's status and keeps the handle on
    // refusal.
    kvblob_status unregister();

private:
    friend class Driver;
    Region(std::shared_ptr<DriverCore> core, kvblob_region_t *handle);
    std::shared_ptr<DriverCore> core_;
    kvblob_region_t *handle_ = nullptr;
};

// The most of a driver's row message Operation::message gives: the rest is
// cut.
inline constexpr size_t max_row_message_bytes = 511;

// An admitted operation. Destroying it releases the handle only once the
// results are final and access ended; otherwise it cancels and hands the
// handle to the driver object, which releases it after its drain, or keeps
// it for good when access is unprovable.
//
// Once released (or moved from, or default-constructed) the object holds no
// handle, and every member that would ask the driver throws CallError
// (E_INVALID, R-OPS-1) saying why: the driver never sees a dead handle.
class Operation {
public:
    Operation() = default;
    Operation(Operation &&) noexcept;
    Operation &operator=(Operation &&) noexcept;
    ~Operation();

    kvblob_op_t *handle() const noexcept { return handle_; }
    uint64_t row_count() const noexcept { return rows_; }
    bool is_final() const;
    kvblob_access access() const;
    // Waits until final and access no longer open; false on timeout. It
    // first watches on the calling thread for up to 200 µs (an in-memory
    // answer comes sooner than a sleeping thread wakes), or 20 µs where the
    // driver's operations have lately taken over 50 µs (watching would save
    // one wake and hold a core the driver wants), then sleeps: with a
    // driver that declares KVBLOB_CAP_NOTIFY until the driver announces an
    // operation (then confirms through poll and access), looking again
    // every 100 ms all the same (an announcement the driver missed costs
    // no more); with any other driver between polls.
    bool wait(std::chrono::milliseconds timeout) const;
    // The same, up to a point in time: for a wait shorter than a
    // millisecond (a driver that watches an operation of a tier of its own
    // for a few hundred microseconds, then leaves it to a worker).
    bool wait_until(std::chrono::steady_clock::time_point deadline) const;
    // The driver's completion descriptor (Driver::completion_fd), for an
    // event loop that waits for this operation; -1 when the driver does
    // not notify or this object holds no operation.
    int completion_fd() const noexcept;
    // Each row's result; PENDING rows while not final. Once final, results
    // never change (R-ROW-1): the first final answer stands for good, and a
    // driver that later answers otherwise is logged as MISBEHAVING and the
    // row's message says so.
    std::vector<RowStatus> results() const;
    // The same into out, sized to the rows: a caller that asks every
    // operation keeps one vector's memory instead of an allocation a call.
    void results(std::vector<RowStatus> &out) const;
    // The driver's message for row (or the host's, for a row whose answer it
    // overruled), at most max_row_message_bytes of it, without the driver's
    // secret options (without_secrets: one the cut ends inside is removed
    // too). A row outside the operation is refused (CallError).
    std::string message(uint64_t row) const;
    kvblob_status cancel() const;
    // Releases the handle now (R-OPS-1): KVBLOB_OK once results are final and
    // access ended, after which this object is empty; the driver's refusal
    // otherwise, and the handle is kept. KVBLOB_E_BUSY, without asking the
    // driver, while another thread's is_final, message or cancel on this
    // operation is still in the driver.
    kvblob_status release();

private:
    friend class Driver;
    Operation(std::shared_ptr<DriverCore> core, kvblob_op_t *handle, uint64_t rows);
    void abandon() noexcept;
    // The core to ask about handle_; throws CallError naming member when
    // this object holds no handle.
    DriverCore &owned(const char *member) const;
    // Final, and access no longer open (a poll: the driver may run the
    // operation's work in this thread).
    bool settled() const;
    // wait's and wait_until's wait, once not settled at the first look.
    bool wait_settled(DriverCore &core, std::chrono::steady_clock::time_point deadline) const;
    std::shared_ptr<DriverCore> core_;
    kvblob_op_t *handle_ = nullptr;
    uint64_t rows_ = 0;
    bool released_ = false;  // emptied by release(), not by a move
};

class Driver {
public:
    Driver(Driver &&) noexcept = default;
    Driver &operator=(Driver &&) noexcept = default;
    // Lets go of this handle's share of the driver. The shutdown (drain with
    // a 10 s timeout, release parked operations, unregister pinned regions,
    // close) runs when the last holder lets go: this Driver, or a Region or
    // Operation that outlives it, whichever is destroyed last. What cannot be
    // ended (access unprovable, R-REG-2) is left alive, never freed.
    ~Driver();

    const kvblob_plugin_t &table() const noexcept;
    kvblob_driver_t *handle() const noexcept;
    const kvblob_caps_t &caps() const noexcept;
    bool has(uint64_t capability) const noexcept { return (caps().flags & capability) != 0; }
    // The scenario-hook extension, or nullptr when the driver offers none.
    const kvblob_scenarios_t *scenarios() const noexcept;
    const std::string &name() const noexcept;
    // What the host has counted for this driver since it opened (see
    // kvblob/host/metrics.hpp); never waits for the driver.
    MetricsSnapshot metrics() const;
    // For an engine's own event loop: a non-blocking eventfd that becomes
    // readable whenever the driver announces that one of its operations
    // became final or ended its access (KVBLOB_CAP_NOTIFY). Owned by the
    // host (never close it), valid while this Driver lives; read 8 bytes to
    // reset it, then confirm each operation through is_final and access.
    // It counts the announcements made after its first call (before that,
    // an announcement makes no system call for it).
    // -1 when the driver does not notify: poll those operations instead.
    int completion_fd() const noexcept;

    Region register_region(const kvblob_region_desc_t &desc);
    Operation submit(OpKind kind, const kvblob_batch_t &batch);
    Operation submit(OpKind kind, const kvblob_batch_t &batch, Vouch vouched);
    kvblob_status drain(std::chrono::nanoseconds timeout);
    // Drains with the given timeout, then ends everything and closes. Returns
    // the first status that stopped it (KVBLOB_OK when closed).
    //
    // What it waits for: the driver's drain (every call returned, every
    // operation final and its access ended), for timeout; a drain slot that
    // ignores its own timeout is waited for drain_grace (2 s) more, then left
    // running. Nothing else waits: past the timeout it answers E_TIMEOUT (or
    // the drain's refusal) at once, and the driver, the operations it still
    // holds and the regions they name stay alive for the life of the process
    // (never freed, the caller's memory pinned), and letting go of this
    // Driver afterwards only looks again without waiting. While the caller
    // still holds regions or operations, it answers E_BUSY and the shutdown
    // runs, with this timeout, when the last of them is let go. Like the
    // destructor, it is called once no other thread calls this Driver: a
    // submit or register_region racing it may take a share after it looked.
    kvblob_status shutdown(std::chrono::nanoseconds timeout);

private:
    friend class Plugin;
    explicit Driver(std::shared_ptr<DriverCore> core) : core_(std::move(core)) {}
    std::shared_ptr<DriverCore> core_;
};

}  // namespace kvblob
