// The host's records of a driver's operations, kept for reuse once
// released: each stays in its node of DriverCore::ops_, taken out whole
// and put back under the next operation's handle, with the memory of its
// first final answer. None are kept under AddressSanitizer: a host path that still
// held a released record must stay a use after free it can report, not a
// touch of the next operation's record.
#include "driver_core.hpp"

#include <new>

namespace kvblob {

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr size_t max_spare_records = 0;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr size_t max_spare_records = 0;
#else
constexpr size_t max_spare_records = 8;
#endif
#else
constexpr size_t max_spare_records = 8;
#endif

// A record whose first final answer held more rows than this is let go: a
// kept record keeps that memory for as long as the driver is open.
constexpr size_t max_kept_rows = 4096;

}  // namespace

void DriverCore::OpRecord::reset()
{
    kind = OpKind::put;
    rows = 0;
    submitted_at = final_at = 0;
    open_after_final = false;
    uniform_row_bytes = 0;
    row_bytes.clear();
    regions.clear();
    access_settled = cancel_requested = final_seen = false;
    has_first_final = false;
    first_final.clear();
    host_messages.clear();
    rules_logged.clear();
    unlocked_calls = 0;
}

DriverCore::OpRecord &DriverCore::fresh_record(kvblob_op_t *op)
{
    if (!spare_records_.empty()) {
        auto spare = std::move(spare_records_.back());
        spare_records_.pop_back();
        spare.key() = op;
        // Not placed where the host still holds op (a driver that handed
        // the same handle out twice): that record is started over below,
        // as a new one would have replaced it.
        if (auto placed = ops_.insert(std::move(spare)); placed.inserted) return placed.position->second;
    }
    OpRecord &record = ops_[op];
    record.reset();
    return record;
}

void DriverCore::keep_record(decltype(ops_)::node_type released)
{
    if (spare_records_.size() >= max_spare_records || released.mapped().first_final.capacity() > max_kept_rows) return;
    released.mapped().reset();
    try {
        spare_records_.push_back(std::move(released));
    } catch (const std::bad_alloc &) {  // not kept: freed with released; the release itself succeeded
    }
}

}  // namespace kvblob
