#include "memory_driver.hpp"

#include <kvblob/support/access_bound.hpp>
#include <kvblob/support/crc32c.hpp>
#include <kvblob/support/device_copy.hpp>
#include <kvblob/support/span_copy.hpp>
#include <kvblob/support/limits.hpp>
#include <kvblob/support/options.hpp>
#include <kvblob/support/plugin_glue.hpp>
#include <kvblob/support/shared_jobs.hpp>
#include <kvblob/support/trailer.hpp>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>

namespace kvblob::memory {

using support::crc32c;
using support::trailer_size;

extern const support::OptionTable memory_options;  // plugin.cpp

std::unique_ptr<MemoryDriver> MemoryDriver::open(const kvblob_open_args_t &args, kvblob_caps_t &caps)
{
    support::ParsedOptions o(memory_options, args);
    const std::string &mode_text = o.text("mode");
    Mode mode = mode_text == "blocking" ? Mode::blocking : mode_text == "controlled" ? Mode::controlled : Mode::background;
    const unsigned workers = support::worker_count(o);
    caps.flags = KVBLOB_CAP_ABSENT_IS_MISS | KVBLOB_CAP_PROBE | KVBLOB_CAP_REMOVE;
    support::apply_limits(o, caps);
    if (o.flag("hints")) caps.flags |= KVBLOB_CAP_HINTS;
    // Device spans move through pinned staging (span_copy.hpp), where this
    // process sees a CUDA device.
    if (support::cuda_device_present()) caps.flags |= KVBLOB_CAP_DEVICE_MEMORY;
    const int64_t delay_ms = o.integer("access_delay_ms");
    if (delay_ms < 0) throw support::OptionError("option 'access_delay_ms' must not be negative");
    auto access_delay = std::chrono::milliseconds(delay_ms);
    // The bound access_delay_ms keeps (R-ACC-2); controlled mode keeps none:
    // access ends when a test says.
    if (mode != Mode::controlled) support::declare_access_bound(args, caps, access_delay);
    auto store = Store::named(o.text("store"), o.bytes("capacity"));
    return std::unique_ptr<MemoryDriver>(new MemoryDriver(caps, args.host, std::move(store), mode, workers,
                                                          access_delay, o.flag("waiter_runs")));
}

MemoryDriver::MemoryDriver(const kvblob_caps_t &caps, const kvblob_host_services_t *host,
                           std::shared_ptr<Store> store, Mode mode, unsigned workers,
                           std::chrono::milliseconds access_delay, bool waiter_runs)
    : DriverBase(caps, host), store_(std::move(store)), mode_(mode), access_delay_(access_delay),
      waiter_runs_(waiter_runs)
{
    if (mode_ == Mode::background) workers_.start(workers, support::WorkQueue::watch_before_sleep, "kvblob-memory");
}

MemoryDriver::~MemoryDriver()
{
    stop();
    // What this driver staged on the shared store ends with it (docs/contract.md, "Scenario hooks").
    for (const auto &key : foreign_keys_) store_->drop_foreign_writer(key);
}

// ---- execution ------------------------------------------------------------

void MemoryDriver::start(Op &base)
{
    auto &op = static_cast<MemoryOp &>(base);
    op.outcomes.resize(op.rows.size());
    if (op.kind == OpKind::put) {
        op.object_sizes.resize(op.rows.size());
        for (size_t i = 0; i < op.rows.size(); ++i) op.object_sizes[i] = op.rows[i].total + trailer_size;
        store_->take_buffers(op.object_sizes, op.buffers);
    }
    bool held = false;
    if (keys_staged_.load(std::memory_order_acquire)) {
        std::lock_guard lock(hooks_mu_);
        for (const auto &row : op.rows) {
            if (unprovable_keys_.erase(row.key)) op.unprovable = true;
            if (op.kind == OpKind::get && held_keys_.count(row.key)) held = true;
        }
        if (held && mode_ != Mode::controlled) {
            // Held inside the store before it starts: not final, access open,
            // until release_staged (R-CON-3) or a cancel (R-CAN-1).
            held_ops_.push_back(&op);
            return;
        }
    }
    dispatch(op);
}

void MemoryDriver::dispatch(MemoryOp &op)
{
    switch (mode_) {
    case Mode::blocking: run(op); break;
    case Mode::background:
        // The polls that wait for op copy its rows beside the worker
        // (run_queued).
        if (!waiter_runs_) {
            workers_.push([this, &op] { run(op); });
            break;
        }
        support::push_shared(workers_, op, rows_per_claim(op), [this](support::Op &o, bool holds_job) {
            share_rows(static_cast<MemoryOp &>(o), holds_job);
        });
        break;
    case Mode::controlled: break;  // waits for advance()
    }
}

// Background mode: the waiting caller copies rows of its own that no thread
// took yet (a copy in memory: bounded work, as blocking mode's put).
bool MemoryDriver::run_queued(Op &base)
{
    auto &op = static_cast<MemoryOp &>(base);
    return support::run_unclaimed(workers_, op, [this](support::Op &o, bool holds_job) {
        share_rows(static_cast<MemoryOp &>(o), holds_job);
    });
}

void MemoryDriver::share_rows(MemoryOp &op, bool holds_job)
{
    if (op.share.work([&](uint64_t i) { transfer_row(op, i); }, holds_job)) complete(op);
}

// Rows under 64 KiB all in one claim: split 16 rows of 4 KiB a claim, a
// put took twice as long, its two threads meeting on the buffer pool's
// lock for every row (docs/notes/2026-12-04-performance-experiments.md, "Sharing rows"). From 64 KiB a
// row the copy dominates, and each claim is one row.
uint64_t MemoryDriver::rows_per_claim(const MemoryOp &op)
{
    const uint64_t row_bytes = op.rows.empty() ? 0 : op.rows[0].total;
    return row_bytes >= 65536 ? 1 : std::max<size_t>(1, op.rows.size());
}

void MemoryDriver::stop()
{
    workers_.stop();
    access_timer_.stop();  // after the workers: they hand it operations
}

void MemoryDriver::run(MemoryOp &op)
{
    for (size_t i = 0; i < op.rows.size(); ++i) transfer_row(op, i);
    complete(op);
}

// Every row transferred: commits, then ends access and finishes.
void MemoryDriver::complete(MemoryOp &op)
{
    commit(op);
    if (access_delay_.count() > 0) {
        // Final now, access open until the delay passed: op cannot be
        // released before the timer's end_access, its last touch.
        finish(op);
        access_timer_.at(AccessTimer::Clock::now() + access_delay_, [this, &op] { end_access(op); });
    } else {
        end_access(op);
        finish(op);  // the last touch: op may be released from here on
    }
}

void MemoryDriver::transfer_row(MemoryOp &op, size_t i)
{
    if (!begin_row(op, i)) return;  // cancelled
    switch (op.kind) {
    case OpKind::put: transfer_put(op, i); break;
    case OpKind::get: transfer_get(op, i); break;
    case OpKind::probe: transfer_probe(op, i); break;
    case OpKind::remove: transfer_remove(op, i); break;
    }
}

void MemoryDriver::transfer_put(MemoryOp &op, size_t i)
{
    const auto &row = op.rows[i];
    auto &out = op.outcomes[i];
    if (pool_full()) {
        out = {KVBLOB_ROW_DECLINED, 0, "the pool is full (staged)", nullptr};
        return;
    }
    const uint64_t bytes = row.total + trailer_size;
    Store::Claim claim;
    switch (store_->reserve({row.key, row.key_hash}, bytes, claim)) {
    case Store::Reservation::exists:
        out = {KVBLOB_ROW_READY, 0, "already stored; left as it was", nullptr};
        return;
    case Store::Reservation::writing:
        out = {KVBLOB_ROW_NOT_READY, 0, "another writer holds this key uncommitted", nullptr};
        return;
    case Store::Reservation::full:
        out = {KVBLOB_ROW_DECLINED, 0,
               "store capacity of " + std::to_string(store_->capacity()) + " bytes would be exceeded", nullptr};
        return;
    case Store::Reservation::reserved: break;
    }
    // One pass over the caller's bytes: copy and checksum together.
    auto object = store_->object_in(std::move(op.buffers[i]), bytes);
    uint8_t *dst = object->data();
    uint32_t crc = 0;
    for (size_t s = 0; s < row.spans.size(); ++s) {
        std::string error;
        if (!support::copy_from_span(crc, dst, row.spans[s], error)) {
            store_->abandon({row.key, row.key_hash});  // nothing is left under the key (R-ROW-8)
            out = {KVBLOB_ROW_FAULT, 0, "reading the row's device memory: " + error, nullptr};
            return;
        }
        dst += row.spans[s].length;
    }
    support::write_trailer(dst, support::trailer_v2, row.key, row.total, crc);
    out = {KVBLOB_ROW_READY, 0, {}, {std::move(object), claim}};
}

void MemoryDriver::transfer_get(MemoryOp &op, size_t i)
{
    const auto &row = op.rows[i];
    auto &out = op.outcomes[i];
    if (keys_staged_.load(std::memory_order_acquire)) {
        std::lock_guard lock(hooks_mu_);
        if (failing_reads_.count(row.key)) {
            out = {KVBLOB_ROW_FAULT, 5, "the store failed to read this object (staged)", nullptr};
            return;
        }
    }
    auto found = store_->find({row.key, row.key_hash});
    if (found.state == Store::State::absent) {
        out = {KVBLOB_ROW_MISS, 0, {}, nullptr};  // destination untouched (R-ROW-3)
        return;
    }
    if (found.state == Store::State::writing) {
        out = {KVBLOB_ROW_NOT_READY, 0, "the object is being written", nullptr};
        return;
    }
    const auto &object = *found.object;
    uint64_t payload = 0;
    uint32_t recorded = 0;
    auto fault = support::check_trailer(object.data(), object.size(), row.key, payload, recorded);
    if (fault != support::TrailerFault::none) {
        out = {KVBLOB_ROW_FAULT, static_cast<int32_t>(fault), support::to_string(fault), nullptr};
        return;
    }
    if (payload != row.total) {
        // R-ROW-5: refused before writing a byte, whichever way it differs.
        out = {KVBLOB_ROW_FAULT, 100,
               "stored object is " + std::to_string(payload) + " bytes; the row's spans hold " +
                   std::to_string(row.total),
               nullptr};
        return;
    }
    const uint8_t *src = object.data();
    uint32_t crc = 0;
    for (const auto &span : row.spans) {
        std::string error;
        if (!support::copy_to_span(crc, span, src, error)) {
            out = {KVBLOB_ROW_FAULT, 0, "writing the row's device memory: " + error, nullptr};
            return;
        }
        src += span.length;
    }
    if (crc != recorded) {
        // R-ROW-6: the bytes were written, but they are never called READY.
        out = {KVBLOB_ROW_FAULT, static_cast<int32_t>(support::TrailerFault::bad_checksum),
               support::to_string(support::TrailerFault::bad_checksum), nullptr};
        return;
    }
    out = {KVBLOB_ROW_READY, 0, {}, nullptr};
}

void MemoryDriver::transfer_probe(MemoryOp &op, size_t i)
{
    auto &out = op.outcomes[i];
    switch (store_->find({op.rows[i].key, op.rows[i].key_hash}).state) {
    case Store::State::absent:
        out = {KVBLOB_ROW_MISS, 0, {}, nullptr};
        break;
    case Store::State::writing:
        out = {KVBLOB_ROW_NOT_READY, 0, "the object is being written", nullptr};
        break;
    case Store::State::complete: out = {KVBLOB_ROW_READY, 0, {}, nullptr}; break;
    }
}

void MemoryDriver::transfer_remove(MemoryOp &op, size_t i)
{
    auto &out = op.outcomes[i];
    switch (store_->remove({op.rows[i].key, op.rows[i].key_hash})) {
    case Store::Removal::removed: out = {KVBLOB_ROW_READY, 0, {}, nullptr}; break;
    case Store::Removal::absent:
        out = {KVBLOB_ROW_MISS, 0, {}, nullptr};
        break;
    case Store::Removal::writing: out = {KVBLOB_ROW_NOT_READY, 0, "the object is being written", nullptr}; break;
    }
}

void MemoryDriver::commit(MemoryOp &op)
{
    for (size_t i = 0; i < op.rows.size(); ++i) {
        auto &out = op.outcomes[i];
        if (op.rows[i].result.load() != KVBLOB_ROW_PENDING) continue;  // cancelled before it started
        if (out.staged.object) store_->commit(out.staged.claim, std::move(out.staged.object));
        set_row(op, i, out.result, out.code, std::move(out.message));
    }
    store_->give_back(op.buffers, op.object_sizes);
}

// ---- cancel and controlled mode -----------------------------------------------

void MemoryDriver::on_cancel(Op &base)
{
    auto &op = static_cast<MemoryOp &>(base);
    if (mode_ != Mode::controlled) {
        // A held get has not started: it ends whole now. Others are left to
        // the workers, which check cancel_requested per row.
        bool was_held = false;
        {
            std::lock_guard lock(hooks_mu_);
            auto it = std::find(held_ops_.begin(), held_ops_.end(), &op);
            if (it != held_ops_.end()) {
                held_ops_.erase(it);
                was_held = true;
            }
        }
        if (!was_held) return;
        cancel_unstarted(op);
        return;
    }
    {
        std::lock_guard lock(op.mu);
        if (op.started) return;
        op.started = op.transferred = op.committed = op.access_ended = true;
    }
    cancel_unstarted(op);
}

kvblob_status MemoryDriver::advance(kvblob_op_t *handle, kvblob_stage stage)
{
    if (mode_ != Mode::controlled) return KVBLOB_E_UNSUPPORTED;
    if (!handle || stage < KVBLOB_STAGE_START || stage > KVBLOB_STAGE_ACCESS_END) return KVBLOB_E_INVALID;
    auto &op = static_cast<MemoryOp &>(*static_cast<Op *>(handle));
    bool do_finish = false, do_end = false;
    {
        std::lock_guard lock(op.mu);
        if (!op.started) {
            op.started = true;
            for (size_t i = 0; i < op.rows.size(); ++i) begin_row(op, i);
        }
        if (stage >= KVBLOB_STAGE_TRANSFER_END && !op.transferred) {
            op.transferred = true;
            for (size_t i = 0; i < op.rows.size(); ++i) transfer_row(op, i);
        }
        if (stage == KVBLOB_STAGE_COMMIT && !op.committed) {
            op.committed = true;
            commit(op);
            do_finish = true;
        }
        if (stage == KVBLOB_STAGE_ACCESS_END && !op.access_ended) {
            op.access_ended = true;
            do_end = true;
        }
    }
    // Outside op.mu: after these the operation may be released and gone.
    if (do_end) end_access(op);
    if (do_finish) finish(op);
    return KVBLOB_OK;
}

// ---- scenario hooks -------------------------------------------------------------

uint64_t MemoryDriver::echo_hint(kvblob_op_t *handle, void *buf, uint64_t capacity)
{
    if (!handle) return 0;
    std::string hint = static_cast<Op *>(handle)->hint;
    if (buf) std::memcpy(buf, hint.data(), std::min<uint64_t>(hint.size(), capacity));
    return hint.size();
}

kvblob_status MemoryDriver::stage_foreign_writer(const std::string &key)
{
    if (!store_->hold_for_foreign_writer(key)) return KVBLOB_E_INVALID;
    std::lock_guard lock(hooks_mu_);
    foreign_keys_.insert(key);
    return KVBLOB_OK;
}

kvblob_status MemoryDriver::stage_key(std::set<std::string> &keys, const std::string &key)
{
    std::lock_guard lock(hooks_mu_);
    keys.insert(key);
    keys_staged_.store(true, std::memory_order_release);
    return KVBLOB_OK;
}

kvblob_status MemoryDriver::stage_corrupt(const std::string &key)
{
    return store_->corrupt(key) ? KVBLOB_OK : KVBLOB_E_INVALID;
}

kvblob_status MemoryDriver::release_staged()
{
    std::vector<MemoryOp *> held;
    std::set<std::string> foreign;
    {
        std::lock_guard lock(hooks_mu_);
        foreign.swap(foreign_keys_);
        failing_reads_.clear();
        held_keys_.clear();
        held.swap(held_ops_);
        keys_staged_.store(!unprovable_keys_.empty(), std::memory_order_release);
    }
    release_full_pool();
    for (const auto &key : foreign) store_->drop_foreign_writer(key);
    for (MemoryOp *op : held) dispatch(*op);
    return KVBLOB_OK;
}

}  // namespace kvblob::memory
