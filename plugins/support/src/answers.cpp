// DriverBase's answers of an operation (R-ACC-*, R-ROW-1): poll, results,
// row_message, access, cancel (R-CAN-1) and release (R-OPS-1); and the
// helpers an executing driver sets them with, which announce them to the
// host (R-NTF-*).
#include "kvblob/support/driver_base.hpp"

#include "call_scope.hpp"
#include "kvblob/support/spin_pause.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>

namespace kvblob::support {

namespace {

Op *as_op(kvblob_op_t *op) { return static_cast<Op *>(op); }

}  // namespace

// ---- the two answers ------------------------------------------------------

kvblob_status DriverBase::poll(kvblob_op_t *handle, uint32_t *is_final)
{
    if (!handle || !is_final) return KVBLOB_E_INVALID;
    Op &op = *as_op(handle);
    *is_final = (op.state.load(std::memory_order_acquire) & Op::results_final) ? 1u : 0u;
    if (!*is_final && (op.queued.load(std::memory_order_relaxed) || op.share.unclaimed())) {
        // The caller waits for op and some of its work still waits for a
        // thread: the caller runs it. Counted as a call in progress, so that
        // a drain that began before op ended waits for this call to leave
        // the driver's code, as it does for a blocking put (R-DRN-3). Counted
        // after the look above, not before it (every poll would pay for
        // the count): where op ends between the two, a drain may return
        // before this call counts in. That is harmless: run_queued then
        // finds nothing left to run, and a caller may close the driver only
        // once its own polls returned (after close the handle is dead).
        CallScope scope(calls_in_progress_, drain_mu_, drain_cv_);
        if (run_queued(op))
            *is_final = (op.state.load(std::memory_order_acquire) & Op::results_final) ? 1u : 0u;
    }
    return KVBLOB_OK;
}

kvblob_status DriverBase::results(kvblob_op_t *handle, uint64_t first, uint64_t count, kvblob_row_status_t *out)
{
    if (!handle || (count && !out)) return KVBLOB_E_INVALID;
    Op &op = *as_op(handle);
    if (first > op.rows.size() || count > op.rows.size() - first) return KVBLOB_E_INVALID;
    for (uint64_t i = 0; i < count; ++i) {
        const Row &row = op.rows[first + i];
        const int32_t result = row.result.load(std::memory_order_acquire);
        out[i].result = result;
        out[i].driver_code = result == KVBLOB_ROW_PENDING ? 0 : row.code;
        out[i].reserved = 0;
    }
    return KVBLOB_OK;
}

uint32_t DriverBase::row_message(kvblob_op_t *handle, uint64_t row, char *buf, uint32_t capacity)
{
    if (capacity && buf) buf[0] = '\0';
    if (!handle) return 0;
    Op &op = *as_op(handle);
    if (row >= op.rows.size() || op.rows[row].result.load(std::memory_order_acquire) == KVBLOB_ROW_PENDING)
        return 0;
    const std::string &m = op.rows[row].message;
    if (capacity && buf) {
        size_t n = std::min<size_t>(m.size(), capacity - 1);
        std::memcpy(buf, m.data(), n);
        buf[n] = '\0';
    }
    return static_cast<uint32_t>(m.size());
}

kvblob_access DriverBase::access(kvblob_op_t *handle)
{
    if (!handle) return KVBLOB_ACCESS_OPEN;
    const uint32_t state = as_op(handle)->state.load(std::memory_order_acquire);
    return (state & Op::access_unprovable) ? KVBLOB_ACCESS_UNPROVABLE
           : (state & Op::access_ended)    ? KVBLOB_ACCESS_ENDED
                                           : KVBLOB_ACCESS_OPEN;
}

kvblob_status DriverBase::cancel(kvblob_op_t *handle)
{
    if (!handle) return KVBLOB_E_INVALID;
    Op &op = *as_op(handle);
    if (op.state.load() & Op::results_final) return KVBLOB_OK;
    op.cancel_requested.store(true);
    on_cancel(op);
    return KVBLOB_OK;
}

kvblob_status DriverBase::release(kvblob_op_t *handle)
{
    std::lock_guard lock(ops_mu_);
    auto it = ops_.find(handle);
    if (it == ops_.end()) return KVBLOB_E_INVALID;
    Op &op = *it->second;
    const uint32_t state = op.state.load(std::memory_order_acquire);
    if (state & Op::access_unprovable)  // R-OPS-1
        return KVBLOB_E_UNPROVABLE;
    if (state != (Op::results_final | Op::access_ended)) return KVBLOB_E_BUSY;
    // Both bits are set, so every announcement of op has begun (each counts
    // itself in before setting its bit); wait out those still in the host's
    // notify: no notify names op after this returns.
    if (op.announcing.load(std::memory_order_acquire) != 0) wait_announced(op);
    keep_spare_op(ops_.extract(it));
    return KVBLOB_OK;
}

// The announcer is mostly on another core and out of the host's notify
// within microseconds: watched for that long. Otherwise it lost its core,
// often to the very thread its notify woke, which is here: this thread
// sleeps until the announcer is out. It never yields: on cores that busy
// threads share, a yield may hand the core to one of them until the next
// scheduler tick (counted under kvblob-bench --load: every sched_yield left
// in a loaded run of the Mooncake driver came from the yield this replaced).
void DriverBase::wait_announced(const Op &op)
{
    for (int i = 0; i < 256; ++i) {
        if (op.announcing.load(std::memory_order_acquire) == 0) return;
        spin_pause();
    }
    std::unique_lock lock(announced_mu_);
    // Counted before the look, both sequentially consistent, as the
    // announcer's count out and its look at this: one of the two sees the
    // other's (announced).
    releases_waiting_.fetch_add(1, std::memory_order_seq_cst);
    announced_cv_.wait(lock, [&] { return op.announcing.load(std::memory_order_seq_cst) == 0; });
    releases_waiting_.fetch_sub(1, std::memory_order_relaxed);
}

void DriverBase::announced(Op &op)
{
    op.announcing.fetch_sub(1, std::memory_order_seq_cst);  // op may be gone from here on
    if (releases_waiting_.load(std::memory_order_seq_cst) == 0) return;
    std::lock_guard lock(announced_mu_);
    announced_cv_.notify_all();
}

// ---- executing drivers' helpers -------------------------------------------

// Inlined into both callers: out of line, a call a row was half of what
// begin_rows saves over begin_row in a loop (callgrind, 4 KiB x 32 gets).
[[gnu::always_inline]] inline bool DriverBase::begin_row(Op &op, size_t i, bool cancelled)
{
    Row &row = op.rows[i];
    if (row.result.load() != KVBLOB_ROW_PENDING) return false;
    if (row.started.load()) return true;
    if (cancelled) {
        set_row(op, i, KVBLOB_ROW_CANCELLED, 0, "cancelled before it started");
        return false;
    }
    // Read again by this row's own thread, or by one it handed the row to
    // through a queue or lock (which orders them): a release store, not
    // the full fence of a sequentially consistent one on every row.
    row.started.store(true, std::memory_order_release);
    return true;
}

bool DriverBase::begin_row(Op &op, size_t i) { return begin_row(op, i, op.cancel_requested.load()); }

void DriverBase::begin_rows(Op &op, std::vector<size_t> &out)
{
    const bool cancelled = op.cancel_requested.load();
    for (size_t i = 0; i < op.rows.size(); ++i)
        if (begin_row(op, i, cancelled)) out.push_back(i);
}

void DriverBase::set_row(Op &op, size_t i, kvblob_row_result result, int32_t code, std::string message)
{
    Row &row = op.rows[i];
    row.code = code;
    row.message = std::move(message);
    row.result.store(result, std::memory_order_release);
}

void DriverBase::set_rows_ready(Op &op, const std::vector<size_t> &rows)
{
    for (size_t i : rows) {
        Row &row = op.rows[i];
        row.code = 0;
        row.message.clear();
        row.result.store(KVBLOB_ROW_READY, std::memory_order_release);
    }
}

uint32_t DriverBase::set_state(Op &op, uint32_t bit)
{
    if (!notifies_) return op.state.fetch_or(bit, std::memory_order_acq_rel);
    // Counted in before the bit is set, so that a release seeing the bit
    // sees the count too.
    op.announcing.fetch_add(1, std::memory_order_seq_cst);
    return op.state.fetch_or(bit, std::memory_order_seq_cst);
}

void DriverBase::announce(Op &op, uint32_t bit, uint32_t before, kvblob_notify_event event)
{
    if (!notifies_) return;
    // After the state it announces is visible, and only by the call that set
    // the bit: each event once per operation.
    if (!(before & bit)) host_.notify(host_.context, &op, event);
    announced(op);  // op may be gone from here on
}

void DriverBase::published(Op &op, uint32_t bit, uint32_t before)
{
    constexpr uint32_t both = Op::results_final | Op::access_ended;
    announce(op, bit, before, bit == Op::results_final ? KVBLOB_NOTIFY_FINAL : KVBLOB_NOTIFY_ACCESS);
    // From here on op may be released and gone: only the driver's own state.
    if (((before | bit) & both) == both && (before & both) != both) {
        // Under drain's lock, as CallScope: once drain sees nothing in
        // flight, the driver may be closed and gone.
        std::lock_guard lock(drain_mu_);
        in_flight_.fetch_sub(1);
        drain_cv_.notify_all();
    }
}

void DriverBase::finish(Op &op) { published(op, Op::results_final, set_state(op, Op::results_final)); }

void DriverBase::end_access(Op &op)
{
    if (op.unprovable) {
        for (Region *region : op.regions) region->pinned.store(true);
        any_unprovable_.store(true);
        log(KVBLOB_LOG_WARN, "an operation's access is unprovable: its regions stay registered for good");
        announce(op, Op::access_unprovable, set_state(op, Op::access_unprovable), KVBLOB_NOTIFY_ACCESS);
        std::lock_guard lock(drain_mu_);
        drain_cv_.notify_all();
        return;
    }
    // The regions counted out and the access ended in one step, as
    // unregister_region (which holds regions_mu_ alone) sees them: counted
    // out first and ended after, an unregister between the two succeeded
    // while access() still answered OPEN (R-REG-1). Ended first and counted
    // out after, a caller that saw the end and unregistered at once was
    // refused BUSY. The announcement comes after, unlocked.
    uint32_t before = 0;
    {
        std::shared_lock lock(regions_mu_);
        for (Region *region : op.regions) region->users.fetch_sub(1);
        before = set_state(op, Op::access_ended);
    }
    published(op, Op::access_ended, before);
}

void DriverBase::cancel_unstarted(Op &op)
{
    for (size_t i = 0; i < op.rows.size(); ++i) set_row(op, i, KVBLOB_ROW_CANCELLED, 0, "cancelled before it started");
    op.unprovable = false;  // nothing touched its memory
    end_access(op);
    finish(op);
}

}  // namespace kvblob::support
