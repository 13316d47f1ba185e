// Breaks of an operation's answers, made at the table: poll, results,
// row_message, access, cancel and release say what the reference did not
// (R-ACC-1, R-ROW-1, R-CAN-1, R-OPS-1).
#include "hook.hpp"

#include <atomic>
#include <set>
#include <vector>

namespace kvblob::breaking {

namespace {

template <class B>
std::unique_ptr<Break> make()
{
    return std::make_unique<B>();
}

// The results of every row of op, as the reference answers them.
std::vector<kvblob_row_status_t> all_results(Hooked &h, kvblob_op_t *op)
{
    OpInfo info;
    if (!h.info(op, info)) return {};
    std::vector<kvblob_row_status_t> rows(info.rows);
    for (auto &r : rows) r.struct_size = sizeof r;
    if (h.results(op, 0, info.rows, rows.data()) != KVBLOB_OK) return {};
    return rows;
}

// results.paging-and-order: results ignore first: every page from row 0.
struct PagesFromTop : Break {
    kvblob_status results(Hooked &h, kvblob_op_t *op, uint64_t first, uint64_t count,
                          kvblob_row_status_t *out) override
    {
        kvblob_status st = h.results(op, first, count, out);  // the bounds checked as asked
        return st == KVBLOB_OK ? h.results(op, 0, count, out) : st;
    }
};
const Registered paging("results.paging-and-order", make<PagesFromTop>);

// results.pending-before-final: rows read READY before they have a result.
struct PendingReadsReady : Break {
    kvblob_status results(Hooked &h, kvblob_op_t *op, uint64_t first, uint64_t count,
                          kvblob_row_status_t *out) override
    {
        kvblob_status st = h.results(op, first, count, out);
        if (st == KVBLOB_OK)
            for (uint64_t i = 0; i < count; ++i)
                if (out[i].result == KVBLOB_ROW_PENDING) out[i].result = KVBLOB_ROW_READY;
        return st;
    }
};
const Registered pending("results.pending-before-final", make<PendingReadsReady>);

// data.results.stable: a final result that changes when read again.
struct ReadyOnce : Break {
    std::atomic<uint64_t> reads{0};
    kvblob_status results(Hooked &h, kvblob_op_t *op, uint64_t first, uint64_t count,
                          kvblob_row_status_t *out) override
    {
        kvblob_status st = h.results(op, first, count, out);
        if (st == KVBLOB_OK)
            for (uint64_t i = 0; i < count; ++i)
                if (out[i].result == KVBLOB_ROW_READY && reads++ > 0) out[i].result = KVBLOB_ROW_DECLINED;
        return st;
    }
};
const Registered stable("data.results.stable", make<ReadyOnce>);

// results.row-message: row_message's length counts the terminator.
struct MessageCountsNul : Break {
    uint32_t row_message(Hooked &h, kvblob_op_t *op, uint64_t row, char *buf, uint32_t cap) override
    {
        return h.next->row_message(h.inner, op, row, buf, cap) + 1;
    }
};
const Registered row_message("results.row-message", make<MessageCountsNul>);

// m.acc1.poll-counts-pending: poll writes the count of pending rows into is_final.
struct PollCountsPending : Break {
    kvblob_status poll(Hooked &h, kvblob_op_t *op, uint32_t *is_final) override
    {
        kvblob_status st = h.poll(op, is_final);
        if (st != KVBLOB_OK || *is_final) return st;
        uint32_t pending = 0;
        for (const auto &r : all_results(h, op)) pending += r.result == KVBLOB_ROW_PENDING;
        *is_final = pending;
        return st;
    }
};
const Registered poll_counts("m.acc1.poll-counts-pending", make<PollCountsPending>);

// lifetime.answers-any-order: access() answers garbage until results are final.
struct AccessAfterFinalOnly : Break {
    kvblob_access access(Hooked &h, kvblob_op_t *op) override
    {
        OpInfo info;
        if (!op || !h.info(op, info)) return h.access(op);
        std::vector<kvblob_row_status_t> rows = all_results(h, op);
        for (const auto &r : rows)
            if (r.result == KVBLOB_ROW_PENDING) return 9;  // assumes it is asked once results are final
        return h.access(op);
    }
};
const Registered any_order("lifetime.answers-any-order", make<AccessAfterFinalOnly>);

// m.acc1.access-ends-on-results: access ends only once results were read.
struct AccessEndsOnResults : Break {
    std::mutex mu;
    std::set<kvblob_op_t *> read;
    kvblob_status results(Hooked &h, kvblob_op_t *op, uint64_t first, uint64_t count,
                          kvblob_row_status_t *out) override
    {
        {
            std::lock_guard lock(mu);
            read.insert(op);
        }
        return h.results(op, first, count, out);
    }
    kvblob_access access(Hooked &h, kvblob_op_t *op) override
    {
        {
            std::lock_guard lock(mu);
            if (op && !read.count(op)) return KVBLOB_ACCESS_OPEN;
        }
        return h.access(op);
    }
    kvblob_status release(Hooked &h, kvblob_op_t *op) override
    {
        kvblob_status st = h.next->release(h.inner, op);
        std::lock_guard lock(mu);
        if (st == KVBLOB_OK) read.erase(op);
        return st;
    }
};
const Registered ends_on_results("m.acc1.access-ends-on-results", make<AccessEndsOnResults>);

// cancel.after-final: a cancel after the results are final turns them CANCELLED.
struct CancelAfterFinal : Break {
    std::mutex mu;
    std::set<kvblob_op_t *> cancelled;
    kvblob_status cancel(Hooked &h, kvblob_op_t *op) override
    {
        uint32_t final = 0;
        if (op && h.poll(op, &final) == KVBLOB_OK && final) {
            std::lock_guard lock(mu);
            cancelled.insert(op);
        }
        return h.next->cancel(h.inner, op);
    }
    kvblob_status results(Hooked &h, kvblob_op_t *op, uint64_t first, uint64_t count,
                          kvblob_row_status_t *out) override
    {
        kvblob_status st = h.results(op, first, count, out);
        std::lock_guard lock(mu);
        if (st == KVBLOB_OK && cancelled.count(op))
            for (uint64_t i = 0; i < count; ++i) out[i].result = KVBLOB_ROW_CANCELLED, out[i].driver_code = 0;
        return st;
    }
    kvblob_status release(Hooked &h, kvblob_op_t *op) override
    {
        kvblob_status st = h.next->release(h.inner, op);
        std::lock_guard lock(mu);
        if (st == KVBLOB_OK) cancelled.erase(op);
        return st;
    }
};
const Registered after_final("cancel.after-final", make<CancelAfterFinal>);

// m.ops1.release-unprovable-ok: release says OK to an unprovable operation (and keeps it).
struct ReleaseUnprovableOk : Break {
    kvblob_status release(Hooked &h, kvblob_op_t *op) override
    {
        kvblob_status st = h.next->release(h.inner, op);
        return st == KVBLOB_E_UNPROVABLE ? KVBLOB_OK : st;
    }
};
const Registered unprovable_ok("m.ops1.release-unprovable-ok", make<ReleaseUnprovableOk>);

// m.ops1.release-before-final: release says OK before the operation settled (and keeps it).
struct ReleaseBeforeFinal : Break {
    kvblob_status release(Hooked &h, kvblob_op_t *op) override
    {
        kvblob_status st = h.next->release(h.inner, op);
        return st == KVBLOB_E_BUSY ? KVBLOB_OK : st;
    }
};
const Registered before_final("m.ops1.release-before-final", make<ReleaseBeforeFinal>);

// m.ops1.release-busy-after-cancel: an operation with a CANCELLED row is BUSY for good.
struct ReleaseBusyAfterCancel : Break {
    kvblob_status release(Hooked &h, kvblob_op_t *op) override
    {
        if (h.access(op) == KVBLOB_ACCESS_ENDED)
            for (const auto &r : all_results(h, op))
                if (r.result == KVBLOB_ROW_CANCELLED) return KVBLOB_E_BUSY;
        return h.next->release(h.inner, op);
    }
};
const Registered busy_after_cancel("m.ops1.release-busy-after-cancel", make<ReleaseBusyAfterCancel>);

}  // namespace

}  // namespace kvblob::breaking
