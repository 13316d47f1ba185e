// Breaks of rows' results, made at the table (R-ROW-*, R-RMV-1, R-ADM-1):
// results rewritten from what the reference answered, rows the reference
// left alone written, objects stored or removed where the reference would
// not (through operations of the breaking driver's own).
#include "batch_copy.hpp"
#include "hook.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <set>

namespace kvblob::breaking {

namespace {

template <class B>
std::unique_ptr<Break> make()
{
    return std::make_unique<B>();
}

constexpr int32_t bad_checksum = 6;  // plugins/support's TrailerFault::bad_checksum

// Rewrites each row's result: Row(kind, row, rows, status).
template <void (*Row)(Kind, uint64_t, uint64_t, kvblob_row_status_t &)>
struct RewritesRows : Break {
    kvblob_status results(Hooked &h, kvblob_op_t *op, uint64_t first, uint64_t count,
                          kvblob_row_status_t *out) override
    {
        kvblob_status st = h.results(op, first, count, out);
        OpInfo info;
        if (st == KVBLOB_OK && h.info(op, info))
            for (uint64_t i = 0; i < count; ++i) Row(info.kind, first + i, info.rows, out[i]);
        return st;
    }
};
template <void (*Row)(Kind, uint64_t, uint64_t, kvblob_row_status_t &)>
std::unique_ptr<Break> rows()
{
    return std::make_unique<RewritesRows<Row>>();
}

void set(kvblob_row_status_t &s, kvblob_row_result r, int32_t code = 0) { s.result = r, s.driver_code = code; }

// data.absent-is-miss: absence reported as FAULT with absent_is_miss.
void absent_fault(Kind k, uint64_t, uint64_t, kvblob_row_status_t &s)
{
    if (k == Kind::get && s.result == KVBLOB_ROW_MISS) set(s, KVBLOB_ROW_FAULT, 404);
}
// m.row4.probe-absent-fault: a probe of an absent key is FAULT with absent_is_miss.
void probe_absent_fault(Kind k, uint64_t, uint64_t, kvblob_row_status_t &s)
{
    if (k == Kind::probe && s.result == KVBLOB_ROW_MISS) set(s, KVBLOB_ROW_FAULT, 404);
}
// scenario.foreign-writer: a key being written is FAULT.
void writing_fault(Kind k, uint64_t, uint64_t, kvblob_row_status_t &s)
{
    if ((k == Kind::put || k == Kind::get) && s.result == KVBLOB_ROW_NOT_READY) set(s, KVBLOB_ROW_FAULT);
}
// scenario.foreign-writer.probe: a probe of a key being written is MISS.
void writing_probe_miss(Kind k, uint64_t, uint64_t, kvblob_row_status_t &s)
{
    if (k == Kind::probe && s.result == KVBLOB_ROW_NOT_READY) set(s, KVBLOB_ROW_MISS);
}
// scenario.full-pool: a full pool is FAULT, not DECLINED.
void full_fault(Kind k, uint64_t, uint64_t, kvblob_row_status_t &s)
{
    if (k == Kind::put && s.result == KVBLOB_ROW_DECLINED) set(s, KVBLOB_ROW_FAULT);
}
// scenario.failing-read: a failing read reported as MISS.
void failing_read_miss(Kind k, uint64_t, uint64_t, kvblob_row_status_t &s)
{
    if (k == Kind::get && s.result == KVBLOB_ROW_FAULT && s.driver_code == 5) set(s, KVBLOB_ROW_MISS);
}
// m.rmv1.remove-absent-ready: removing an absent key is READY.
void remove_absent_ready(Kind k, uint64_t, uint64_t, kvblob_row_status_t &s)
{
    if (k == Kind::remove && s.result == KVBLOB_ROW_MISS) set(s, KVBLOB_ROW_READY);
}
// data.corrupt.never-ready: a checksum mismatch is READY (the bytes were written).
void corrupt_ready(Kind k, uint64_t, uint64_t, kvblob_row_status_t &s)
{
    if (k == Kind::get && s.result == KVBLOB_ROW_FAULT && s.driver_code == bad_checksum) set(s, KVBLOB_ROW_READY);
}
// data.round-trip.one-row: a result outside the table.
void one_row_99(Kind k, uint64_t, uint64_t rows, kvblob_row_status_t &s)
{
    if (k == Kind::get && rows == 1 && s.result != KVBLOB_ROW_PENDING) s.result = 99;
}
// data.round-trip.many-rows: the last row of a large get never gets its result.
void last_row_pending(Kind k, uint64_t row, uint64_t rows, kvblob_row_status_t &s)
{
    if (k == Kind::get && rows >= 100 && row + 1 == rows) set(s, KVBLOB_ROW_PENDING);
}

const Registered absent_is_miss("data.absent-is-miss", rows<absent_fault>);
const Registered probe_absent("m.row4.probe-absent-fault", rows<probe_absent_fault>);
const Registered foreign_writer("scenario.foreign-writer", rows<writing_fault>);
const Registered foreign_writer_probe("scenario.foreign-writer.probe", rows<writing_probe_miss>);
const Registered full_pool("scenario.full-pool", rows<full_fault>);
const Registered failing_read("scenario.failing-read", rows<failing_read_miss>);
const Registered remove_absent("m.rmv1.remove-absent-ready", rows<remove_absent_ready>);
const Registered corrupt("data.corrupt.never-ready", rows<corrupt_ready>);
const Registered one_row("data.round-trip.one-row", rows<one_row_99>);
const Registered many_rows("data.round-trip.many-rows", rows<last_row_pending>);

// Rewrites the results of a whole operation at once: Op(all).
template <void (*Op)(std::vector<kvblob_row_status_t> &)>
struct RewritesOp : Break {
    kvblob_status results(Hooked &h, kvblob_op_t *op, uint64_t first, uint64_t count,
                          kvblob_row_status_t *out) override
    {
        kvblob_status st = h.results(op, first, count, out);
        OpInfo info;
        if (st != KVBLOB_OK || !h.info(op, info)) return st;
        std::vector<kvblob_row_status_t> all(info.rows);
        for (auto &r : all) r.struct_size = sizeof r;
        if (h.results(op, 0, all.size(), all.data()) != KVBLOB_OK) return st;
        for (const auto &r : all)
            if (r.result == KVBLOB_ROW_PENDING) return st;  // rewritten once every row has its result
        Op(all);
        page(all, first, count, out);
        return st;
    }
};
template <void (*Op)(std::vector<kvblob_row_status_t> &)>
std::unique_ptr<Break> whole()
{
    return std::make_unique<RewritesOp<Op>>();
}

// admission.failures-are-rows: one failing row fails every row.
void one_fails_all(std::vector<kvblob_row_status_t> &all)
{
    for (const auto &r : all)
        if (r.result == KVBLOB_ROW_FAULT) {
            for (auto &each : all) set(each, KVBLOB_ROW_FAULT, 1);
            return;
        }
}
// m.adm1.fault-spreads-to-next: a row's error is not reset before the next row.
void spreads_to_next(std::vector<kvblob_row_status_t> &all)
{
    for (size_t i = all.size() - 1; i >= 1; --i)  // from the end: each row sees its own predecessor
        if (all[i - 1].result == KVBLOB_ROW_FAULT) set(all[i], KVBLOB_ROW_FAULT, all[i - 1].driver_code);
}
// m.adm1.fault-aborts-rest: the first failing row aborts the rest.
void aborts_rest(std::vector<kvblob_row_status_t> &all)
{
    for (size_t i = 0; i < all.size(); ++i)
        if (all[i].result == KVBLOB_ROW_FAULT) {
            for (size_t j = i + 1; j < all.size(); ++j) set(all[j], KVBLOB_ROW_FAULT, 1);
            return;
        }
}
const Registered failures_are_rows("admission.failures-are-rows", whole<one_fails_all>);
const Registered spreads("m.adm1.fault-spreads-to-next", whole<spreads_to_next>);
const Registered aborts("m.adm1.fault-aborts-rest", whole<aborts_rest>);

// ---- rows acted on before the reference sees them ---------------------------

// Gets whose absent keys get their destination written first: Write(row, span, at).
template <void (*Write)(uint64_t, uint8_t *, uint64_t)>
struct WritesOnMiss : Break {
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        if (auto rows = stored_rows(h, kind, Kind::get, batch))
            for (size_t r = 0; r < rows->copy.rows.size(); ++r)
                if (!rows->stored[r])
                    for (const auto &span : rows->copy.spans[r])
                        if (uint8_t *at = h.address(span)) Write(r, at, span.length);
        return h.submit(kind, batch, out, err, cap);
    }
};
void zeroes(uint64_t, uint8_t *at, uint64_t n) { std::memset(at, 0, n); }
void first_nul(uint64_t, uint8_t *at, uint64_t) { at[0] = 0; }  // "cleared" as a C string
void ff_after_first(uint64_t row, uint8_t *at, uint64_t n)
{
    if (row > 0) std::memset(at, 0xFF, n);
}
const Registered miss_zeroes("data.miss.untouched", make<WritesOnMiss<zeroes>>);
const Registered miss_nul("m.row3.miss-first-byte", make<WritesOnMiss<first_nul>>);
const Registered miss_in_batch("m.row3.miss-in-batch", make<WritesOnMiss<ff_after_first>>);

// data.put-existing.unchanged: a second put rewrites what is stored (removed first).
struct PutReplaces : Break {
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        if (auto rows = stored_rows(h, kind, Kind::put, batch)) {
            std::vector<kvblob_row_t> gone;
            for (size_t r = 0; r < rows->copy.rows.size(); ++r)
                if (rows->stored[r])
                    gone.push_back({sizeof(kvblob_row_t), 0, batch->rows[r].key, batch->rows[r].key_len, nullptr});
            if (!gone.empty()) h.run(Kind::remove, {sizeof(kvblob_batch_t), 0, gone.data(), gone.size(), nullptr});
        }
        return h.submit(kind, batch, out, err, cap);
    }
};
const Registered put_existing("data.put-existing.unchanged", make<PutReplaces>);

// A put's rows whose key was stored already answer Result (counted again, or taken for a conflict).
template <kvblob_row_result Result>
struct ExistingSays : Break {
    std::mutex mu;
    std::map<kvblob_op_t *, std::vector<bool>> existing;
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        std::vector<bool> stored;
        if (auto rows = stored_rows(h, kind, Kind::put, batch))
            stored = std::move(rows->stored);
        kvblob_status st = h.submit(kind, batch, out, err, cap);
        std::lock_guard lock(mu);
        if (st == KVBLOB_OK && !stored.empty()) existing[*out] = stored;
        return st;
    }
    kvblob_status results(Hooked &h, kvblob_op_t *op, uint64_t first, uint64_t count,
                          kvblob_row_status_t *out) override
    {
        kvblob_status st = h.results(op, first, count, out);
        std::lock_guard lock(mu);
        auto it = existing.find(op);
        if (st == KVBLOB_OK && it != existing.end())
            for (uint64_t i = 0; i < count; ++i)
                if (it->second[first + i] && out[i].result == KVBLOB_ROW_READY) set(out[i], Result);
        return st;
    }
    kvblob_status release(Hooked &h, kvblob_op_t *op) override
    {
        kvblob_status st = h.next->release(h.inner, op);
        std::lock_guard lock(mu);
        if (st == KVBLOB_OK) existing.erase(op);
        return st;
    }
};
const Registered existing_not_ready("m.row7.existing-not-ready", make<ExistingSays<KVBLOB_ROW_NOT_READY>>);
const Registered existing_declined("m.row7.existing-declined", make<ExistingSays<KVBLOB_ROW_DECLINED>>);

// remove.then-miss: says removed, removes nothing (the rows are probed instead).
struct RemoveProbes : Break {
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        return h.submit(kind == Kind::remove ? Kind::probe : kind, batch, out, err, cap);
    }
};
const Registered then_miss("remove.then-miss", make<RemoveProbes>);

// remove.put-again: remembers the keys it removed (a negative cache) and
// answers READY to a put of one without storing it (the put is probed
// instead, and its MISS rows answered READY).
struct RemovedKeysCached : Break {
    std::mutex mu;
    std::set<std::string> removed;
    std::set<kvblob_op_t *> unstored;
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        if (!batch || !batch->rows) return h.submit(kind, batch, out, err, cap);
        const auto keys = BatchCopy(*batch).keys;
        std::unique_lock lock(mu);
        if (kind == Kind::remove) removed.insert(keys.begin(), keys.end());
        const bool cached = kind == Kind::put &&
                            std::all_of(keys.begin(), keys.end(), [&](const std::string &k) { return removed.count(k); });
        lock.unlock();
        if (!cached) return h.submit(kind, batch, out, err, cap);
        std::vector<kvblob_row_t> rows(batch->rows, batch->rows + batch->row_count);
        for (auto &r : rows) r.span_count = 0, r.spans = nullptr;
        const kvblob_batch_t probe{sizeof(kvblob_batch_t), 0, rows.data(), rows.size(), nullptr};
        kvblob_status st = h.submit(Kind::probe, &probe, out, err, cap);
        lock.lock();
        if (st == KVBLOB_OK) unstored.insert(*out);
        return st;
    }
    kvblob_status results(Hooked &h, kvblob_op_t *op, uint64_t first, uint64_t count,
                          kvblob_row_status_t *out) override
    {
        kvblob_status st = h.results(op, first, count, out);
        std::lock_guard lock(mu);
        if (st == KVBLOB_OK && unstored.count(op))
            for (uint64_t i = 0; i < count; ++i)
                if (out[i].result == KVBLOB_ROW_MISS) set(out[i], KVBLOB_ROW_READY);
        return st;
    }
    kvblob_status release(Hooked &h, kvblob_op_t *op) override
    {
        kvblob_status st = h.next->release(h.inner, op);
        std::lock_guard lock(mu);
        if (st == KVBLOB_OK) unstored.erase(op);
        return st;
    }
};
const Registered put_again("remove.put-again", make<RemovedKeysCached>);

// remove.being-written: removes the writer's claim (the staged writer let go) and says READY.
struct RemoveDropsWriter : Break {
    kvblob_status results(Hooked &h, kvblob_op_t *op, uint64_t first, uint64_t count,
                          kvblob_row_status_t *out) override
    {
        kvblob_status st = h.results(op, first, count, out);
        OpInfo info;
        if (st != KVBLOB_OK || !h.info(op, info) || info.kind != Kind::remove) return st;
        for (uint64_t i = 0; i < count; ++i)
            if (out[i].result == KVBLOB_ROW_NOT_READY) {
                if (h.scenarios && h.scenarios->release_staged) h.scenarios->release_staged(h.inner);
                set(out[i], KVBLOB_ROW_READY);
            }
        return st;
    }
};
const Registered being_written("remove.being-written", make<RemoveDropsWriter>);

// A full pool staged, not passed on: puts are stored, and answer Result.
template <kvblob_row_result Result>
struct SaysFullStoresAnyway : Break {
    std::atomic<bool> full{false};
    std::mutex mu;
    std::set<kvblob_op_t *> during;
    kvblob_status stage_full_pool(Hooked &) override
    {
        full = true;
        return KVBLOB_OK;
    }
    kvblob_status release_staged(Hooked &h) override
    {
        full = false;
        return h.scenarios->release_staged(h.inner);
    }
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        kvblob_status st = h.submit(kind, batch, out, err, cap);
        std::lock_guard lock(mu);
        if (st == KVBLOB_OK && kind == Kind::put && full) during.insert(*out);
        return st;
    }
    kvblob_status results(Hooked &h, kvblob_op_t *op, uint64_t first, uint64_t count,
                          kvblob_row_status_t *out) override
    {
        kvblob_status st = h.results(op, first, count, out);
        std::lock_guard lock(mu);
        if (st == KVBLOB_OK && during.count(op))
            for (uint64_t i = 0; i < count; ++i)
                if (out[i].result == KVBLOB_ROW_READY) set(out[i], Result);
        return st;
    }
    kvblob_status release(Hooked &h, kvblob_op_t *op) override
    {
        kvblob_status st = h.next->release(h.inner, op);
        std::lock_guard lock(mu);
        if (st == KVBLOB_OK) during.erase(op);  // the address may name the next operation
        return st;
    }
};
const Registered leaves_nothing("data.failed-put.leaves-nothing", make<SaysFullStoresAnyway<KVBLOB_ROW_DECLINED>>);
const Registered fault_but_stored("m.row8.fault-but-stored", make<SaysFullStoresAnyway<KVBLOB_ROW_FAULT>>);

}  // namespace

}  // namespace kvblob::breaking
