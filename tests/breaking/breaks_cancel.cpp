// Breaks of cancel (R-CAN-1), made at the table: rows that started answered
// CANCELLED, a cancel kept from the reference until the store lets go, rows
// answered CANCELLED stored anyway.
#include "batch_copy.hpp"
#include "hook.hpp"

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

// Rows of a cancelled operation of the kinds Kinds(kind) that finished READY
// are answered CANCELLED, after they stored or delivered their bytes; with
// Drop, a put's rows are removed again (stored nothing).
template <bool (*Kinds)(Kind), bool Drop>
struct StartedCancelled : Break {
    std::mutex mu;
    std::map<kvblob_op_t *, std::unique_ptr<BatchCopy>> cancelled;
    std::set<kvblob_op_t *> dropped;
    kvblob_status cancel(Hooked &h, kvblob_op_t *op) override
    {
        OpInfo info;
        if (h.info(op, info) && Kinds(info.kind)) {
            std::lock_guard lock(mu);
            cancelled.emplace(op, nullptr);
        }
        return h.next->cancel(h.inner, op);
    }
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        kvblob_status st = h.submit(kind, batch, out, err, cap);
        std::lock_guard lock(mu);
        if (st == KVBLOB_OK && Drop && kind == Kind::put) keys[*out] = BatchCopy(*batch).keys;
        return st;
    }
    std::map<kvblob_op_t *, std::vector<std::string>> keys;
    kvblob_status results(Hooked &h, kvblob_op_t *op, uint64_t first, uint64_t count,
                          kvblob_row_status_t *out) override
    {
        kvblob_status st = h.results(op, first, count, out);
        uint32_t final = 0;
        if (st != KVBLOB_OK || h.poll(op, &final) != KVBLOB_OK || !final) return st;
        std::vector<std::string> drop;
        {
            std::lock_guard lock(mu);
            if (!cancelled.count(op)) return st;
            for (uint64_t i = 0; i < count; ++i)
                if (out[i].result == KVBLOB_ROW_READY) out[i].result = KVBLOB_ROW_CANCELLED, out[i].driver_code = 0;
            if (Drop && !dropped.count(op) && keys.count(op)) drop = keys[op], dropped.insert(op);
        }
        std::vector<kvblob_row_t> rows;
        for (const auto &k : drop)
            rows.push_back({sizeof(kvblob_row_t), 0, reinterpret_cast<const uint8_t *>(k.data()), k.size(), nullptr});
        if (!rows.empty()) h.run(Kind::remove, {sizeof(kvblob_batch_t), 0, rows.data(), rows.size(), nullptr});
        return st;
    }
    kvblob_status release(Hooked &h, kvblob_op_t *op) override
    {
        kvblob_status st = h.next->release(h.inner, op);
        std::lock_guard lock(mu);
        if (st == KVBLOB_OK) cancelled.erase(op), dropped.erase(op), keys.erase(op);
        return st;
    }
};
bool any_kind(Kind) { return true; }
bool puts(Kind k) { return k == Kind::put; }
bool gets(Kind k) { return k == Kind::get; }
const Registered started("cancel.started", make<StartedCancelled<any_kind, false>>);
const Registered started_put("m.can1.started-put-cancelled", make<StartedCancelled<puts, true>>);
const Registered moved_get("m.can1.moved-get-cancelled", make<StartedCancelled<gets, false>>);

// m.can1.held-get-started: a held get counts as started: the cancel is kept
// from the reference until the store lets go (release_staged).
struct HeldGetStarted : Break {
    std::mutex mu;
    std::vector<kvblob_op_t *> kept;
    kvblob_status cancel(Hooked &h, kvblob_op_t *op) override
    {
        OpInfo info;
        uint32_t final = 0;
        if (h.info(op, info) && info.kind == Kind::get && h.poll(op, &final) == KVBLOB_OK && !final) {
            std::lock_guard lock(mu);
            kept.push_back(op);
            return KVBLOB_OK;
        }
        return h.next->cancel(h.inner, op);
    }
    kvblob_status release_staged(Hooked &h) override
    {
        kvblob_status st = h.scenarios->release_staged(h.inner);
        std::vector<kvblob_op_t *> now;
        {
            std::lock_guard lock(mu);
            now.swap(kept);
        }
        for (kvblob_op_t *op : now) h.next->cancel(h.inner, op);
        return st;
    }
};
const Registered held_started("m.can1.held-get-started", make<HeldGetStarted>);

// lifetime.cancel: rows answered CANCELLED are stored anyway: their bytes
// are copied as the put is admitted, and stored, once the cancelled put is
// final, by a put of the breaking driver's own.
struct CancelledStored : Break {
    struct Put {
        std::vector<std::string> keys;
        std::vector<std::vector<uint8_t>> bytes;  // each row's, as given
    };
    std::mutex mu;
    std::map<kvblob_op_t *, Put> puts;
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        Put put;
        if (kind == Kind::put && batch && batch->rows) {
            BatchCopy copy(*batch);
            put.keys = copy.keys;
            for (const auto &spans : copy.spans) {
                auto &row = put.bytes.emplace_back();
                for (const auto &span : spans)
                    if (const uint8_t *at = h.address(span)) row.insert(row.end(), at, at + span.length);
            }
        }
        kvblob_status st = h.submit(kind, batch, out, err, cap);
        std::lock_guard lock(mu);
        if (st == KVBLOB_OK && kind == Kind::put) puts[*out] = std::move(put);
        return st;
    }
    kvblob_status cancel(Hooked &h, kvblob_op_t *op) override
    {
        kvblob_status st = h.next->cancel(h.inner, op);
        Put put;
        {
            std::lock_guard lock(mu);
            auto it = puts.find(op);
            if (it == puts.end()) return st;
            put = std::move(it->second);
            puts.erase(it);
        }
        h.wait_final(op);
        std::vector<kvblob_row_status_t> results(put.keys.size());
        for (auto &r : results) r.struct_size = sizeof r;
        h.results(op, 0, results.size(), results.data());
        uint64_t total = 0;
        for (size_t r = 0; r < put.keys.size(); ++r)
            if (results[r].result == KVBLOB_ROW_CANCELLED) total += put.bytes[r].size();
        if (total == 0) return st;
        uint8_t *base = nullptr;
        kvblob_region_t *region = h.scratch(total, &base);
        std::vector<kvblob_row_t> rows;
        std::vector<kvblob_span_t> spans(put.keys.size());
        uint64_t at = 0;
        for (size_t r = 0; r < put.keys.size(); ++r) {
            if (results[r].result != KVBLOB_ROW_CANCELLED || put.bytes[r].empty()) continue;
            spans[r] = {sizeof(kvblob_span_t), 0, region, at, put.bytes[r].size()};
            std::memcpy(base + at, put.bytes[r].data(), put.bytes[r].size());
            at += put.bytes[r].size();
            rows.push_back({sizeof(kvblob_row_t), 1, reinterpret_cast<const uint8_t *>(put.keys[r].data()),
                            put.keys[r].size(), &spans[r]});
        }
        if (!rows.empty()) h.run(Kind::put, {sizeof(kvblob_batch_t), 0, rows.data(), rows.size(), nullptr});
        return st;
    }
    kvblob_status release(Hooked &h, kvblob_op_t *op) override
    {
        kvblob_status st = h.next->release(h.inner, op);
        std::lock_guard lock(mu);
        if (st == KVBLOB_OK) puts.erase(op);
        return st;
    }
};
const Registered cancelled_stored("lifetime.cancel", make<CancelledStored>);

}  // namespace

}  // namespace kvblob::breaking
