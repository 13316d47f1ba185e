// Breaks of R-ADM-9 at a declared limit: a driver that acts on rows as it
// reads them and counts rows, spans, bytes or operations in flight last, so
// that an operation it refuses for a limit has already stored, written or
// removed something (through operations of the breaking driver's own, on
// the reference or on a second reference driver of the same store).
#include "batch_copy.hpp"
#include "hook.hpp"

#include <cstring>

namespace kvblob::breaking {

namespace {

template <class B>
std::unique_ptr<Break> make()
{
    return std::make_unique<B>();
}

// Acts on the first max_rows_per_op rows of an operation of kind K that has
// more, then lets the reference refuse the whole.
template <Kind K>
struct ActsBeforeCountingRows : Break {
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        if (kind == K && batch && batch->rows && batch->row_count > h.caps.max_rows_per_op) {
            kvblob_batch_t first = *batch;
            first.row_count = h.caps.max_rows_per_op;
            h.run(kind, first);
        }
        return h.submit(kind, batch, out, err, cap);
    }
};
// refusal.limits: a remove over max_rows_per_op has removed its first rows.
const Registered removes_rows("refusal.limits", make<ActsBeforeCountingRows<Kind::remove>>);
const Registered gets_rows("m.adm9.get-over-rows-writes", make<ActsBeforeCountingRows<Kind::get>>);
const Registered puts_rows("m.adm9.put-over-rows-stores", make<ActsBeforeCountingRows<Kind::put>>);

// m.adm9.put-limit-checked-last: a put refused for a row over
// max_spans_per_row or max_object_bytes has stored the rows before it (the
// reference's refusal names the row and the rule, R-ADM-5).
struct StoresBeforeRowLimit : Break {
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        char why[512] = "";
        const kvblob_status st = h.submit(kind, batch, out, why, sizeof why);
        if (err && cap) std::snprintf(err, cap, "%s", why);
        const char *row = std::strstr(why, "[R-ADM-5] row ");
        if (kind != Kind::put || st != KVBLOB_E_REJECTED || !row || !batch || !batch->rows) return st;
        kvblob_batch_t before = *batch;
        before.row_count = std::min<uint64_t>(std::strtoull(row + 14, nullptr, 10), batch->row_count);
        if (before.row_count) h.run(kind, before);
        return st;
    }
};
const Registered limit_last("m.adm9.put-limit-checked-last", make<StoresBeforeRowLimit>);

// Does an operation of kind K that the reference refused for its operations
// in flight on a second connection of the same store, to its end, and
// still answers the refusal.
template <Kind K>
struct QueuedPastInFlight : Break {
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        char why[512] = "";
        const kvblob_status st = h.submit(kind, batch, out, why, sizeof why);
        if (err && cap) std::snprintf(err, cap, "%s", why);
        if (kind != K || st != KVBLOB_E_REJECTED || !std::strstr(why, "in flight")) return st;
        kvblob_op_t *op = nullptr;
        char ignored[256];
        if (h.submit_spare(kind, batch, &op, ignored, sizeof ignored) != KVBLOB_OK || !op) return st;
        h.wait_final(op);
        while (h.access(op) == KVBLOB_ACCESS_OPEN) std::this_thread::yield();
        while (h.next->release(h.of(op), op) == KVBLOB_E_BUSY) std::this_thread::yield();
        std::lock_guard lock(h.ops_mu);
        h.spare_ops.erase(op);
        return st;
    }
};
// refusal.ops-in-flight: a remove refused over max_ops_in_flight removes anyway.
const Registered removes_in_flight("refusal.ops-in-flight", make<QueuedPastInFlight<Kind::remove>>);
const Registered puts_in_flight("m.adm9.put-over-in-flight-stored", make<QueuedPastInFlight<Kind::put>>);

}  // namespace

}  // namespace kvblob::breaking
