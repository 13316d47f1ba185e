// DriverBase's admission (R-ADM-*): a batch is checked row by row, and
// refused whole or admitted whole; after admission every failure is a row
// result (R-ADM-1).
#include "kvblob/support/driver_base.hpp"

#include "call_scope.hpp"
#include "refused.hpp"
#include "kvblob/support/key_hash.hpp"

#include <algorithm>
#include <cstring>
#include <string_view>

namespace kvblob::support {

// ---- admission ------------------------------------------------------------

namespace {

// A row's refusal: its words in problem, and false (check_spans).
bool refuse_row(std::string &problem, std::string words)
{
    problem = std::move(words);
    return false;
}

}  // namespace

// The keys of the operation being admitted, to find one that repeats: open
// addressing over the indices of its rows, whose keys it compares, where a
// std::unordered_set allocated a node per key. The slots are the admitting
// thread's, kept from one operation to the next (not an allocation and a
// free on every operation's path); a set lives only while its operation's
// rows are admitted, never across a call into another driver.
class DriverBase::RowKeySet {
public:
    explicit RowKeySet(const RowList &rows) : rows_(rows)
    {
        size_t want = 16;
        while (want < 2 * rows.size()) want <<= 1;
        if (want > kept_slots) {
            own_.assign(want, 0);
            slots_ = own_.data();
        } else {
            thread_local std::vector<uint64_t> kept(kept_slots);
            std::fill_n(kept.data(), want, 0);
            slots_ = kept.data();
        }
        mask_ = want - 1;
    }
    // False when an earlier row has row r's key.
    bool insert(uint64_t r)
    {
        const Row &row = rows_[r];
        for (size_t i = row.key_hash & mask_;; i = (i + 1) & mask_) {
            uint64_t &slot = slots_[i];
            if (slot == 0) {
                slot = r + 1;
                return true;
            }
            const Row &other = rows_[slot - 1];
            if (other.key_hash == row.key_hash && other.key == row.key) return false;
        }
    }

private:
    static constexpr size_t kept_slots = 4096;  // a larger operation's set has its own
    const RowList &rows_;
    std::vector<uint64_t> own_;
    uint64_t *slots_ = nullptr;  // 0: empty; else row + 1
    size_t mask_ = 0;
};

bool DriverBase::check_spans(const kvblob_row_t &row, uint64_t r, SpanList &spans, std::vector<Region *> &regions,
                             uint64_t &total, LastRegion &last, std::string &problem)
{
    // Words are put together only for a refusal: this runs for every row.
    const auto where = [r] { return "row " + std::to_string(r); };
    if (row.span_count == 0 || !row.spans) return refuse_row(problem, "[R-ADM-5] " + where() + " has no span");
    if (row.span_count > caps_.max_spans_per_row)
        return refuse_row(problem, "[R-ADM-5] " + where() + " has " + std::to_string(row.span_count) +
                                       " spans, more than " + std::to_string(caps_.max_spans_per_row));
    for (uint32_t s = 0; s < row.span_count; ++s) {
        const auto &span = row.spans[s];
        const auto what = [&] { return where() + " span " + std::to_string(s); };
        if (span.struct_size < sizeof(kvblob_span_t))
            return refuse_row(problem, "[R-ADM-6] " + what() + " has a bad struct_size");
        if (!last.region || span.region != last.handle) {
            auto it = regions_.find(span.region);
            if (it == regions_.end())
                return refuse_row(problem, "[R-ADM-6] " + what() + " names a region that is not registered");
            last = {span.region, it->second.get()};
        }
        Region &region = *last.region;
        if (span.length == 0) return refuse_row(problem, "[R-ADM-6] " + what() + " has zero length");
        if (span.offset > region.size || span.length > region.size - span.offset)
            return refuse_row(problem, "[R-ADM-6] " + what() + " [" + std::to_string(span.offset) + ", +" +
                                           std::to_string(span.length) + ") is outside its region of " +
                                           std::to_string(region.size) + " bytes");
        spans.emplace_back(region.base + span.offset, span.length, region.kind == KVBLOB_MEMORY_DEVICE,
                           region.device_ordinal);
        total += span.length;
        if ((regions.empty() || regions.back() != &region) &&
            std::find(regions.begin(), regions.end(), &region) == regions.end())
            regions.push_back(&region);
    }
    if (total > caps_.max_object_bytes)
        return refuse_row(problem, "[R-ADM-5] " + where() + " is " + std::to_string(total) +
                                       " bytes, over the object limit of " + std::to_string(caps_.max_object_bytes));
    return true;
}

kvblob_status DriverBase::admit_row(Op &op, const kvblob_row_t &row, uint64_t r, RowKeySet &keys, LastRegion &last,
                                    std::string &why)
{
    const auto where = [r] { return "row " + std::to_string(r); };  // only for a refusal
    if (row.struct_size < sizeof(kvblob_row_t))
        return refused(why, KVBLOB_E_INVALID, where() + " has a bad struct_size");
    if (row.key_len == 0 || !row.key)
        return refused(why, KVBLOB_E_REJECTED, "[R-ADM-4] " + where() + " has an empty key");
    if (row.key_len > caps_.max_key_bytes)
        return refused(why, KVBLOB_E_REJECTED,
                       "[R-ADM-4] " + where() + " has a key of " + std::to_string(row.key_len) + " bytes, over " +
                           std::to_string(caps_.max_key_bytes));
    Row &dst = op.rows[r];
    const std::string_view key(reinterpret_cast<const char *>(row.key), row.key_len);
    dst.key.assign(key);
    // Hashed from the caller's bytes, not the copy just written: read back
    // at once, the copy's bytes stalled the hash on the store buffer (perf
    // annotate: a quarter of key_hash's time).
    dst.key_hash = key_hash(key);
    if (!keys.insert(r))
        return refused(why, KVBLOB_E_REJECTED, "[R-ADM-4] " + where() + " repeats a key of this operation");
    if (op.kind == OpKind::put || op.kind == OpKind::get) {
        if (std::string problem; !check_spans(row, r, dst.spans, op.regions, dst.total, last, problem))
            return refused(why, KVBLOB_E_REJECTED, std::move(problem));
    } else if (row.span_count != 0) {
        return refused(why, KVBLOB_E_REJECTED, "[R-ADM-5] " + where() + ": probe and remove rows carry no spans");
    }
    return KVBLOB_OK;
}

size_t DriverBase::unsettled_ops_locked() const
{
    constexpr uint32_t both = Op::results_final | Op::access_ended;
    size_t n = 0;
    for (const auto &[handle, op] : ops_)
        if ((op->state.load(std::memory_order_acquire) & both) != both) ++n;
    return n;
}

kvblob_status DriverBase::submit(OpKind kind, const kvblob_batch_t *batch, kvblob_op_t **out, std::string &why)
{
    CallScope scope(calls_in_progress_, drain_mu_, drain_cv_);
    if (out) *out = nullptr;
    if (!batch || !out || batch->struct_size < sizeof(kvblob_batch_t))
        return refused(why, KVBLOB_E_INVALID, "NULL or undersized batch");
    if (draining_) return refused(why, KVBLOB_E_CLOSED, "[R-ADM-2] the driver is draining or closed");
    if (batch->row_count == 0 || !batch->rows)
        return refused(why, KVBLOB_E_REJECTED, "[R-ADM-3] an operation needs at least one row");
    if (batch->row_count > caps_.max_rows_per_op)
        return refused(why, KVBLOB_E_REJECTED,
                       "[R-ADM-3] " + std::to_string(batch->row_count) + " rows, more than the limit of " +
                           std::to_string(caps_.max_rows_per_op));
    if (batch->hint && !(caps_.flags & KVBLOB_CAP_HINTS))
        return refused(why, KVBLOB_E_REJECTED, "[R-ADM-7] a hint, but this driver does not declare hints");
    OpTable::node_type slot = take_spare_op();  // ops_'s entry for op, where one is kept
    std::unique_ptr<Op> op = slot ? std::move(slot.mapped()) : make_op();
    op->kind = kind;
    op->rows.reset(batch->row_count);
    if (batch->hint && batch->hint->bytes) {
        const char *bytes = static_cast<const char *>(batch->hint->bytes);
        op->hint.assign(bytes, batch->hint->size);
    }

    std::shared_lock lock(regions_mu_);
    {
        RowKeySet keys(op->rows);
        LastRegion last;
        kvblob_status refusal = KVBLOB_OK;
        for (uint64_t r = 0; r < batch->row_count && refusal == KVBLOB_OK; ++r)
            refusal = admit_row(*op, batch->rows[r], r, keys, last, why);
        if (refusal != KVBLOB_OK) return refusal;
    }
    // The limit is checked and the operation counted in one step, under
    // ops_mu_: checked, then counted, two submits at one below the limit
    // each saw room and both were admitted. At the limit by in_flight_,
    // which counts an operation out only once its end is announced: the
    // caller may have seen that end already, and submitted again at once
    // (R-ADM-10). The live operations say exactly; every one not settled
    // is in ops_, entered here under the same lock.
    Op *raw = op.get();
    {
        std::lock_guard ops_lock(ops_mu_);
        if (in_flight_.load() >= caps_.max_ops_in_flight && unsettled_ops_locked() >= caps_.max_ops_in_flight)
            return refused(why, KVBLOB_E_REJECTED,
                           "too many operations in flight (limit " + std::to_string(caps_.max_ops_in_flight) + ")");
        // Admitted: from here on every failure is a row result (R-ADM-1).
        for (Region *region : op->regions) region->users.fetch_add(1);
        in_flight_.fetch_add(1);
        if (slot) {
            slot.key() = raw;
            slot.mapped() = std::move(op);
            ops_.insert(std::move(slot));
        } else {
            ops_.emplace(raw, std::move(op));
        }
    }
    lock.unlock();
    *out = raw;
    start(*raw);
    return KVBLOB_OK;
}

}  // namespace kvblob::support
