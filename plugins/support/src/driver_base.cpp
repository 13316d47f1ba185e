#include "kvblob/support/driver_base.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <optional>
#include <string_view>
#include <unordered_set>

namespace kvblob::support {

namespace {

// Keeps the count of put/get/probe/remove calls in progress, so that drain
// waits for them to return (R-DRN-3).
class CallScope {
public:
    CallScope(std::atomic<uint64_t> &calls, std::mutex &mu, std::condition_variable &cv)
        : calls_(calls), mu_(mu), cv_(cv)
    {
        calls_.fetch_add(1);
    }
    ~CallScope()
    {
        // Counted out under the lock drain judges by: a drain that sees the
        // last call gone may return and the driver be closed, so nothing of
        // it may be touched after the lock is let go.
        std::lock_guard lock(mu_);
        if (calls_.fetch_sub(1) == 1) cv_.notify_all();
    }

private:
    std::atomic<uint64_t> &calls_;
    std::mutex &mu_;
    std::condition_variable &cv_;
};

Op *as_op(kvblob_op_t *op) { return static_cast<Op *>(op); }

}  // namespace

DriverBase::DriverBase(const kvblob_caps_t &caps, const kvblob_host_services_t *host) : caps_(caps)
{
    // Copy what the host's record covers: a 1.0 host lends a shorter one,
    // and the members it lacks stay zero (no notify).
    if (host && host->struct_size >= KVBLOB_HOST_SERVICES_SIZE_1_0)
        std::memcpy(&host_, host, std::min<size_t>(host->struct_size, sizeof host_));
    host_.struct_size = sizeof host_;
}

DriverBase::~DriverBase() = default;

void DriverBase::offer_notify(const kvblob_open_args_t &args, kvblob_caps_t &caps)
{
    // Only where the negotiated version lays notify out and the host lent
    // one (the constructor copied no member past a 1.0 record): a 1.0 host
    // sees no 1.1 bit and is polled.
    constexpr size_t covers_notify = offsetof(kvblob_host_services_t, notify) + sizeof(kvblob_host_services_t::notify);
    if (args.abi_version < KVBLOB_ABI_1_1 || !args.host || args.host->struct_size < covers_notify || !host_.notify)
        return;
    notifies_ = true;
    caps.flags |= KVBLOB_CAP_NOTIFY;
    caps_.flags |= KVBLOB_CAP_NOTIFY;
}

void DriverBase::log(kvblob_log_level level, const std::string &message) const
{
    if (host_.log) host_.log(host_.context, level, message.c_str());
}

const void *DriverBase::extension(const char *) { return nullptr; }
std::unique_ptr<Op> DriverBase::make_op() { return std::make_unique<Op>(); }
void DriverBase::on_cancel(Op &) {}

// ---- regions --------------------------------------------------------------

kvblob_status DriverBase::register_region(const kvblob_region_desc_t *desc, kvblob_region_t **out,
                                          std::string &why)
{
    if (out) *out = nullptr;
    if (!desc || !out || desc->struct_size < sizeof(kvblob_region_desc_t)) {
        why = "register_region: NULL or undersized descriptor";
        return KVBLOB_E_INVALID;
    }
    if (draining_) {
        why = "[R-ADM-2] the driver is draining";
        return KVBLOB_E_CLOSED;
    }
    if (!desc->base || desc->size == 0) {
        why = "[R-REG-1] a region needs a base address and a positive size";
        return KVBLOB_E_REJECTED;
    }
    if (desc->kind == KVBLOB_MEMORY_DEVICE && !(caps_.flags & KVBLOB_CAP_DEVICE_MEMORY)) {
        why = "[R-ADM-8] DEVICE memory, but this driver does not declare device_memory";
        return KVBLOB_E_REJECTED;
    }
    if (desc->kind != KVBLOB_MEMORY_HOST && desc->kind != KVBLOB_MEMORY_DEVICE) {
        why = "[R-ADM-8] unknown memory kind " + std::to_string(desc->kind);
        return KVBLOB_E_REJECTED;
    }
    if (reinterpret_cast<uintptr_t>(desc->base) + desc->size < reinterpret_cast<uintptr_t>(desc->base)) {
        why = "[R-REG-1] region wraps around the address space";
        return KVBLOB_E_REJECTED;
    }
    auto region = std::make_unique<Region>();
    region->base = static_cast<uint8_t *>(desc->base);
    region->size = desc->size;
    region->kind = desc->kind;
    region->device_ordinal = desc->device_ordinal;
    if (kvblob_status st = store_register(*region, why); st != KVBLOB_OK) return st;
    Region *raw = region.get();
    std::unique_lock lock(regions_mu_);
    regions_.emplace(raw, std::move(region));
    *out = raw;
    return KVBLOB_OK;
}

kvblob_status DriverBase::unregister_region(kvblob_region_t *handle)
{
    std::unique_lock lock(regions_mu_);
    auto it = regions_.find(handle);
    if (it == regions_.end()) return KVBLOB_E_INVALID;
    if (it->second->pinned) return KVBLOB_E_UNPROVABLE;         // R-REG-2
    if (it->second->users.load() != 0) return KVBLOB_E_BUSY;  // R-REG-1
    // Out of the table first: no operation can name it any more, and none
    // still does (users is 0), so the store's side is undone unlocked.
    std::unique_ptr<Region> gone = std::move(it->second);
    regions_.erase(it);
    lock.unlock();
    store_unregister(*gone);
    return KVBLOB_OK;
}

// ---- admission ------------------------------------------------------------

// The keys of the operation being admitted, to find one that repeats: open
// addressing over the indices of its rows, whose keys it compares. One
// table per operation, where a std::unordered_set allocated a node per key.
class DriverBase::RowKeySet {
public:
    explicit RowKeySet(const std::vector<Row> &rows) : rows_(rows)
    {
        size_t want = 16;
        while (want < 2 * rows.size()) want <<= 1;
        slots_.assign(want, 0);
        mask_ = want - 1;
    }
    // False when an earlier row has row r's key.
    bool insert(uint64_t r)
    {
        const std::string &key = rows_[r].key;
        for (size_t i = std::hash<std::string_view>{}(key) & mask_;; i = (i + 1) & mask_) {
            uint64_t &slot = slots_[i];
            if (slot == 0) {
                slot = r + 1;
                return true;
            }
            if (rows_[slot - 1].key == key) return false;
        }
    }

private:
    const std::vector<Row> &rows_;
    std::vector<uint64_t> slots_;  // 0: empty; else row + 1
    size_t mask_ = 0;
};

std::string DriverBase::check_spans(const kvblob_row_t &row, uint64_t r, SpanList &spans,
                                    std::vector<Region *> &regions, uint64_t &total)
{
    // Words are put together only for a refusal: this runs for every row.
    const auto where = [r] { return "row " + std::to_string(r); };
    if (row.span_count == 0 || !row.spans) return "[R-ADM-5] " + where() + " has no span";
    if (row.span_count > caps_.max_spans_per_row)
        return "[R-ADM-5] " + where() + " has " + std::to_string(row.span_count) + " spans, more than " +
               std::to_string(caps_.max_spans_per_row);
    for (uint32_t s = 0; s < row.span_count; ++s) {
        const auto &span = row.spans[s];
        const auto what = [&] { return where() + " span " + std::to_string(s); };
        if (span.struct_size < sizeof(kvblob_span_t)) return "[R-ADM-6] " + what() + " has a bad struct_size";
        auto it = regions_.find(span.region);
        if (it == regions_.end()) return "[R-ADM-6] " + what() + " names a region that is not registered";
        Region &region = *it->second;
        if (span.length == 0) return "[R-ADM-6] " + what() + " has zero length";
        if (span.offset > region.size || span.length > region.size - span.offset)
            return "[R-ADM-6] " + what() + " [" + std::to_string(span.offset) + ", +" + std::to_string(span.length) +
                   ") is outside its region of " + std::to_string(region.size) + " bytes";
        spans.push_back(
            {region.base + span.offset, span.length, region.kind == KVBLOB_MEMORY_DEVICE, region.device_ordinal});
        total += span.length;
        if (std::find(regions.begin(), regions.end(), &region) == regions.end()) regions.push_back(&region);
    }
    if (total > caps_.max_object_bytes)
        return "[R-ADM-5] " + where() + " is " + std::to_string(total) + " bytes, over the object limit of " +
               std::to_string(caps_.max_object_bytes);
    return {};
}

kvblob_status DriverBase::admit_row(Op &op, const kvblob_row_t &row, uint64_t r,
                                    RowKeySet &keys, std::string &why)
{
    const auto where = [r] { return "row " + std::to_string(r); };  // only for a refusal
    if (row.struct_size < sizeof(kvblob_row_t)) {
        why = where() + " has a bad struct_size";
        return KVBLOB_E_INVALID;
    }
    if (row.key_len == 0 || !row.key) {
        why = "[R-ADM-4] " + where() + " has an empty key";
        return KVBLOB_E_REJECTED;
    }
    if (row.key_len > caps_.max_key_bytes) {
        why = "[R-ADM-4] " + where() + " has a key of " + std::to_string(row.key_len) + " bytes, over " +
              std::to_string(caps_.max_key_bytes);
        return KVBLOB_E_REJECTED;
    }
    Row &dst = op.rows[r];
    dst.key.assign(reinterpret_cast<const char *>(row.key), row.key_len);
    if (!keys.insert(r)) {
        why = "[R-ADM-4] " + where() + " repeats a key of this operation";
        return KVBLOB_E_REJECTED;
    }
    if (op.kind == OpKind::put || op.kind == OpKind::get) {
        if (auto problem = check_spans(row, r, dst.spans, op.regions, dst.total); !problem.empty()) {
            why = problem;
            return KVBLOB_E_REJECTED;
        }
    } else if (row.span_count != 0) {
        why = "[R-ADM-5] " + where() + ": probe and remove rows carry no spans";
        return KVBLOB_E_REJECTED;
    }
    return KVBLOB_OK;
}

kvblob_status DriverBase::submit(OpKind kind, const kvblob_batch_t *batch, kvblob_op_t **out, std::string &why)
{
    CallScope scope(calls_in_progress_, drain_mu_, drain_cv_);
    if (out) *out = nullptr;
    if (!batch || !out || batch->struct_size < sizeof(kvblob_batch_t)) {
        why = "NULL or undersized batch";
        return KVBLOB_E_INVALID;
    }
    if (draining_) {
        why = "[R-ADM-2] the driver is draining or closed";
        return KVBLOB_E_CLOSED;
    }
    if (batch->row_count == 0 || !batch->rows) {
        why = "[R-ADM-3] an operation needs at least one row";
        return KVBLOB_E_REJECTED;
    }
    if (batch->row_count > caps_.max_rows_per_op) {
        why = "[R-ADM-3] " + std::to_string(batch->row_count) + " rows, more than the limit of " +
              std::to_string(caps_.max_rows_per_op);
        return KVBLOB_E_REJECTED;
    }
    if (batch->hint && !(caps_.flags & KVBLOB_CAP_HINTS)) {
        why = "[R-ADM-7] a hint, but this driver does not declare hints";
        return KVBLOB_E_REJECTED;
    }
    auto op = make_op();
    op->kind = kind;
    op->rows = std::vector<Row>(batch->row_count);
    if (batch->hint && batch->hint->bytes) {
        const char *bytes = static_cast<const char *>(batch->hint->bytes);
        op->hint.assign(bytes, batch->hint->size);
    }

    RowKeySet keys(op->rows);
    std::shared_lock lock(regions_mu_);
    uint64_t r = 0;
    kvblob_status refusal = KVBLOB_OK;
    for (; r < batch->row_count && refusal == KVBLOB_OK; ++r) refusal = admit_row(*op, batch->rows[r], r, keys, why);
    if (refusal != KVBLOB_OK) return refusal;
    if (in_flight_.load() >= caps_.max_ops_in_flight) {
        why = "too many operations in flight (limit " + std::to_string(caps_.max_ops_in_flight) + ")";
        return KVBLOB_E_REJECTED;
    }
    // Admitted: from here on every failure is a row result (R-ADM-1).
    for (Region *region : op->regions) region->users.fetch_add(1);
    lock.unlock();
    in_flight_.fetch_add(1);
    Op *raw = op.get();
    {
        std::lock_guard ops_lock(ops_mu_);
        ops_.emplace(raw, std::move(op));
    }
    *out = raw;
    start(*raw);
    return KVBLOB_OK;
}

// ---- the two answers ------------------------------------------------------

kvblob_status DriverBase::poll(kvblob_op_t *handle, uint32_t *is_final)
{
    if (!handle || !is_final) return KVBLOB_E_INVALID;
    Op &op = *as_op(handle);
    *is_final = (op.state.load(std::memory_order_acquire) & Op::results_final) ? 1u : 0u;
    if (!*is_final && op.queued.load(std::memory_order_relaxed)) {
        // The caller waits for op and its work still waits for a worker: the
        // caller runs it. Counted as a call in progress, so that a drain
        // that sees op end waits for this call to leave the driver's code
        // (R-DRN-3), as it does for a blocking put.
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
    // notify, which never blocks: no notify names op after this returns.
    while (op.announcing.load(std::memory_order_acquire) != 0) std::this_thread::yield();
    ops_.erase(it);
    return KVBLOB_OK;
}

// ---- executing drivers' helpers -------------------------------------------

bool DriverBase::begin_row(Op &op, size_t i)
{
    if (op.rows[i].result.load() != KVBLOB_ROW_PENDING) return false;
    if (op.rows[i].started.load()) return true;
    if (op.cancel_requested.load()) {
        set_row(op, i, KVBLOB_ROW_CANCELLED, 0, "cancelled before it started");
        return false;
    }
    op.rows[i].started.store(true);
    return true;
}

void DriverBase::set_row(Op &op, size_t i, kvblob_row_result result, int32_t code, std::string message)
{
    Row &row = op.rows[i];
    row.code = code;
    row.message = std::move(message);
    row.result.store(result, std::memory_order_release);
}

uint32_t DriverBase::set_and_announce(Op &op, uint32_t bit, kvblob_notify_event event)
{
    if (!notifies_) return op.state.fetch_or(bit, std::memory_order_acq_rel);
    // Counted in before the bit is set, so that a release seeing the bit
    // sees the count too.
    op.announcing.fetch_add(1, std::memory_order_seq_cst);
    const uint32_t before = op.state.fetch_or(bit, std::memory_order_seq_cst);
    // After the state it announces is visible, and only by the call that set
    // the bit: each event once per operation.
    if (!(before & bit)) host_.notify(host_.context, &op, event);
    op.announcing.fetch_sub(1, std::memory_order_release);  // op may be gone from here on
    return before;
}

void DriverBase::publish(Op &op, uint32_t bit)
{
    constexpr uint32_t both = Op::results_final | Op::access_ended;
    const uint32_t before =
        set_and_announce(op, bit, bit == Op::results_final ? KVBLOB_NOTIFY_FINAL : KVBLOB_NOTIFY_ACCESS);
    // From here on op may be released and gone: only the driver's own state.
    if (((before | bit) & both) == both && (before & both) != both) {
        // Under drain's lock, as CallScope: once drain sees nothing in
        // flight, the driver may be closed and gone.
        std::lock_guard lock(drain_mu_);
        in_flight_.fetch_sub(1);
        drain_cv_.notify_all();
    }
}

void DriverBase::finish(Op &op) { publish(op, Op::results_final); }

void DriverBase::end_access(Op &op)
{
    if (op.unprovable) {
        for (Region *region : op.regions) region->pinned.store(true);
        any_unprovable_.store(true);
        log(KVBLOB_LOG_WARN, "an operation's access is unprovable: its regions stay registered for good");
        set_and_announce(op, Op::access_unprovable, KVBLOB_NOTIFY_ACCESS);
        std::lock_guard lock(drain_mu_);
        drain_cv_.notify_all();
        return;
    }
    for (Region *region : op.regions) region->users.fetch_sub(1);
    publish(op, Op::access_ended);
}

void DriverBase::cancel_unstarted(Op &op)
{
    for (size_t i = 0; i < op.rows.size(); ++i) set_row(op, i, KVBLOB_ROW_CANCELLED, 0, "cancelled before it started");
    op.unprovable = false;  // nothing touched its memory
    end_access(op);
    finish(op);
}

// ---- drain and close ------------------------------------------------------

kvblob_status DriverBase::drain(uint64_t timeout_ns)
{
    draining_.store(true);
    if (any_unprovable_.load()) return KVBLOB_E_UNPROVABLE;  // R-DRN-2
    std::unique_lock lock(drain_mu_);
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::nanoseconds(std::min<uint64_t>(timeout_ns, uint64_t(1) << 62));
    auto idle = [&] {
        return any_unprovable_.load() || (calls_in_progress_.load() == 0 && in_flight_.load() == 0);
    };
    const bool done = drain_cv_.wait_until(lock, deadline, idle);
    if (any_unprovable_.load()) return KVBLOB_E_UNPROVABLE;
    if (!done) return KVBLOB_E_TIMEOUT;
    drained_ok_.store(true);
    return KVBLOB_OK;
}

kvblob_status DriverBase::can_close()
{
    if (!drained_ok_.load()) return KVBLOB_E_BUSY;  // R-CLS-1
    {
        std::shared_lock lock(regions_mu_);
        if (!regions_.empty()) return KVBLOB_E_BUSY;
    }
    stop();
    return KVBLOB_OK;
}

}  // namespace kvblob::support
