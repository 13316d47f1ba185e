// Breaks of refusal (R-ADM-3, R-ADM-9) and drivers that take the process
// down: a refused batch whose rows before the refused one were acted on
// anyway (through operations of the breaking driver's own, or staged on the
// store), an operation of no rows admitted, a put that crashes or hangs.
#include "batch_copy.hpp"
#include "hook.hpp"

#include <chrono>
#include <csignal>
#include <cstdlib>
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

// What a driver acting on each row as soon as it checked it leaves behind
// when it refuses the batch at a later row: Act(h, kind, rows before it).
template <void (*Act)(Hooked &, Kind, BatchCopy &)>
struct ActsBeforeRefusal : Break {
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        char why[512] = "";
        kvblob_status st = h.submit(kind, batch, out, why, sizeof why);
        if (err && cap) std::snprintf(err, cap, "%s", why);
        const char *row = std::strstr(why, "row ");
        if (st != KVBLOB_E_REJECTED || !row || !batch || !batch->rows) return st;
        const uint64_t refused_at = std::strtoull(row + 4, nullptr, 10);
        BatchCopy before(*batch);
        before.rows.resize(std::min<uint64_t>(refused_at, before.rows.size()));
        before.keys.resize(before.rows.size());
        before.spans.resize(before.rows.size());
        before.batch.row_count = before.rows.size();
        if (!before.rows.empty()) Act(h, kind, before);
        return st;
    }
};
const kvblob_scenarios_t *hooks(Hooked &h)
{
    return static_cast<const kvblob_scenarios_t *>(h.next->get_extension(h.inner, KVBLOB_EXT_SCENARIOS));
}
void get_writes(Hooked &h, Kind kind, BatchCopy &rows)
{
    if (kind == Kind::get) h.run(Kind::get, *rows.get());
}
void put_stores(Hooked &h, Kind kind, BatchCopy &rows)
{
    if (kind == Kind::put) h.run(Kind::put, *rows.get());
}
void remove_removes(Hooked &h, Kind kind, BatchCopy &rows)
{
    if (kind == Kind::remove) h.run(Kind::remove, *rows.get());
}
// A claim on each key that no write ends: gets of them answer NOT_READY.
void put_claims(Hooked &h, Kind kind, BatchCopy &rows)
{
    const kvblob_scenarios_t *s = hooks(h);
    if (kind != Kind::put || !s || !s->stage_foreign_writer) return;
    for (const auto &k : rows.keys) s->stage_foreign_writer(h.inner, reinterpret_cast<const uint8_t *>(k.data()), k.size());
}
// A half-written object under each key: gets of them answer FAULT.
void put_corrupts(Hooked &h, Kind kind, BatchCopy &rows)
{
    const kvblob_scenarios_t *s = hooks(h);
    if (kind != Kind::put || !s || !s->stage_corrupt) return;
    h.run(Kind::put, *rows.get());
    for (const auto &k : rows.keys) s->stage_corrupt(h.inner, reinterpret_cast<const uint8_t *>(k.data()), k.size());
}
const Registered no_side_effects("refusal.no-side-effects", make<ActsBeforeRefusal<get_writes>>);
const Registered put_stores_rows("m.adm9.put-stores-checked-rows", make<ActsBeforeRefusal<put_stores>>);
const Registered remove_removes_rows("m.adm9.remove-removes-checked-rows", make<ActsBeforeRefusal<remove_removes>>);
const Registered leaves_reservation("m.adm9.put-leaves-reservation", make<ActsBeforeRefusal<put_claims>>);
const Registered leaves_claim("m.adm9.put-leaves-writer-claim", make<ActsBeforeRefusal<put_claims>>);
const Registered leaves_corrupt("m.adm9.put-leaves-corrupt-object", make<ActsBeforeRefusal<put_corrupts>>);

// admission.no-rows: admits an operation of no rows, answered by the
// breaking driver itself: final, access ended, nothing to read.
struct AdmitsNoRows : Break {
    std::mutex mu;
    std::set<kvblob_op_t *> empty;
    bool mine(kvblob_op_t *op)
    {
        std::lock_guard lock(mu);
        return empty.count(op) != 0;
    }
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        if (!batch || !out || (batch->row_count != 0 && batch->rows)) return h.submit(kind, batch, out, err, cap);
        static char handles[64];  // addresses no operation of the reference has
        std::lock_guard lock(mu);
        *out = reinterpret_cast<kvblob_op_t *>(&handles[empty.size() % sizeof handles]);
        empty.insert(*out);
        return KVBLOB_OK;
    }
    kvblob_status poll(Hooked &h, kvblob_op_t *op, uint32_t *is_final) override
    {
        if (!mine(op)) return h.poll(op, is_final);
        *is_final = 1;
        return KVBLOB_OK;
    }
    kvblob_status results(Hooked &h, kvblob_op_t *op, uint64_t first, uint64_t count,
                          kvblob_row_status_t *out) override
    {
        if (!mine(op)) return h.results(op, first, count, out);
        return first == 0 && count == 0 ? KVBLOB_OK : KVBLOB_E_INVALID;
    }
    kvblob_access access(Hooked &h, kvblob_op_t *op) override
    {
        return mine(op) ? KVBLOB_ACCESS_ENDED : h.access(op);
    }
    kvblob_status cancel(Hooked &h, kvblob_op_t *op) override
    {
        return mine(op) ? KVBLOB_OK : h.next->cancel(h.inner, op);
    }
    kvblob_status release(Hooked &h, kvblob_op_t *op) override
    {
        {
            std::lock_guard lock(mu);
            if (empty.erase(op)) return KVBLOB_OK;
        }
        return h.next->release(h.inner, op);
    }
};
const Registered no_rows("admission.no-rows", make<AdmitsNoRows>);

// Drivers that break no rule but take the process down: the runner must
// outlive them (tests/pairing/survive.sh, tests/conformance).
template <Kind K, bool Hang>
struct Dies : Break {
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        kvblob_status st = h.submit(kind, batch, out, err, cap);
        if (kind == K && st == KVBLOB_OK && Hang)  // once admitted, as a store that never answers
            for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
        if (kind == K && st == KVBLOB_OK) std::raise(SIGSEGV);
        return st;
    }
};
const Registered crash_in_put("runner.crash-in-put", make<Dies<Kind::put, false>>);
const Registered crash_in_remove("runner.crash-in-remove", make<Dies<Kind::remove, false>>);
const Registered hang_in_put("runner.hang-in-put", make<Dies<Kind::put, true>>);

// data.round-trip.multi-span: a put stores the first span of a row alone.
struct FirstSpanOnly : Break {
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        if (kind != Kind::put || !batch || !batch->rows) return h.submit(kind, batch, out, err, cap);
        BatchCopy copy(*batch);
        for (auto &spans : copy.spans)
            if (spans.size() > 1) spans.resize(1);
        return h.submit(kind, copy.get(), out, err, cap);
    }
};
const Registered multi_span("data.round-trip.multi-span", make<FirstSpanOnly>);

// m.hnt1.hint-not-copied: keeps the engine's pointer, not the bytes: the
// hint echoed is read from the caller's memory when asked.
struct HintNotCopied : Break {
    std::mutex mu;
    std::map<kvblob_op_t *, kvblob_hint_t> hints;
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        kvblob_status st = h.submit(kind, batch, out, err, cap);
        std::lock_guard lock(mu);
        if (st == KVBLOB_OK && batch->hint && batch->hint->bytes) hints[*out] = *batch->hint;
        return st;
    }
    uint64_t echo_hint(Hooked &h, kvblob_op_t *op, void *buf, uint64_t capacity) override
    {
        kvblob_hint_t hint{};
        {
            std::lock_guard lock(mu);
            auto it = hints.find(op);
            if (it == hints.end()) return h.scenarios->echo_hint(h.inner, op, buf, capacity);
            hint = it->second;
        }
        if (buf) std::memcpy(buf, hint.bytes, std::min<uint64_t>(hint.size, capacity));
        return hint.size;
    }
    kvblob_status release(Hooked &h, kvblob_op_t *op) override
    {
        kvblob_status st = h.next->release(h.inner, op);
        std::lock_guard lock(mu);
        if (st == KVBLOB_OK) hints.erase(op);
        return st;
    }
};
const Registered hint_not_copied("m.hnt1.hint-not-copied", make<HintNotCopied>);

}  // namespace

}  // namespace kvblob::breaking
