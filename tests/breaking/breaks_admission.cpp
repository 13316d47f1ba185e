// Breaks of admission, made at the table (R-ADM-*, R-KEY-1, R-HNT-1,
// R-CON-1): limits declared and not enforced (the reference opened with a
// limit past the one declared), batches rewritten before the reference sees
// them (keys, spans, hints), regions the reference refuses registered in its
// stead, refusals the reference would not make.
#include "batch_copy.hpp"
#include "hook.hpp"

#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <unordered_set>

namespace kvblob::breaking {

namespace {

template <class B>
std::unique_ptr<Break> make()
{
    return std::make_unique<B>();
}

void say(char *err, uint32_t cap, const std::string &text)
{
    if (err && cap) std::snprintf(err, cap, "%s", text.c_str());
}

// ---- limits declared and not enforced ----------------------------------------

// Declares one limit other than the one the reference enforces: Change(limit).
template <uint64_t kvblob_caps_t::*Limit, int64_t Delta>
struct Misdeclares : Break {
    kvblob_status open(Hooked &h, const kvblob_open_args_t *args, kvblob_caps_t *caps, char *err,
                       uint32_t cap) override
    {
        kvblob_status st = Break::open(h, args, caps, err, cap);
        if (st == KVBLOB_OK) caps->*Limit = std::max<int64_t>(1, static_cast<int64_t>(caps->*Limit) + Delta);
        h.caps = *caps;
        return st;
    }
};

// admission.too-many-rows: admits past the row limit it declares (by half of it).
struct RowsUnbounded : Break {
    kvblob_status open(Hooked &h, const kvblob_open_args_t *args, kvblob_caps_t *caps, char *err,
                       uint32_t cap) override
    {
        kvblob_status st = Break::open(h, args, caps, err, cap);
        if (st == KVBLOB_OK) caps->max_rows_per_op = std::max<uint64_t>(1, caps->max_rows_per_op / 2);
        h.caps = *caps;
        return st;
    }
};
const Registered rows("admission.too-many-rows", make<RowsUnbounded>);
const Registered rows_by_one("m.adm3.rows-off-by-one", make<Misdeclares<&kvblob_caps_t::max_rows_per_op, -1>>);
const Registered spans("admission.too-many-spans", make<Misdeclares<&kvblob_caps_t::max_spans_per_row, -1>>);
const Registered long_key("admission.long-key", make<Misdeclares<&kvblob_caps_t::max_key_bytes, -1>>);
const Registered object("admission.object-too-large", make<Misdeclares<&kvblob_caps_t::max_object_bytes, -1>>);
const Registered in_flight("admission.ops-in-flight", make<Misdeclares<&kvblob_caps_t::max_ops_in_flight, -1>>);
const Registered in_flight_by_one("m.adm10.in-flight-plus-one",
                                  make<Misdeclares<&kvblob_caps_t::max_ops_in_flight, -1>>);
// admission.converse: a key at the limit refused (off by one the other way).
const Registered converse("admission.converse", make<Misdeclares<&kvblob_caps_t::max_key_bytes, +1>>);

// m.adm3.in-flight-busy: over the in-flight limit is BUSY, not REJECTED.
struct InFlightBusy : Break {
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        kvblob_status st = h.submit(kind, batch, out, err, cap);
        if (st == KVBLOB_E_REJECTED && err && std::strstr(err, "too many operations in flight")) return KVBLOB_E_BUSY;
        return st;
    }
};
const Registered in_flight_busy("m.adm3.in-flight-busy", make<InFlightBusy>);

// admission.ops-in-flight-racing: enforces max_ops_in_flight itself, one
// below the reference's, and checks the limit, then counts an admission,
// as two steps: a submit that checks while another is between the two is
// admitted past the limit. Submits one at a time are counted right, so
// admission.ops-in-flight passes. So that racing submits meet between the
// two steps in every run, not by luck of scheduling, a submit that takes
// the last slot waits there until a second submit has checked too (no
// longer than a second: one at a time, none comes). An operation is
// counted out at its release, which the check does before it submits
// again; once none is live, the next last slot waits anew.
struct InFlightCheckedThenCounted : Break {
    std::mutex mu;
    std::condition_variable checked;
    uint64_t live = 0, limit = 0;
    unsigned at_last_slot = 0;  // submits that checked while one slot was left
    kvblob_status open(Hooked &h, const kvblob_open_args_t *args, kvblob_caps_t *caps, char *err,
                       uint32_t cap) override
    {
        kvblob_status st = Break::open(h, args, caps, err, cap);
        if (st == KVBLOB_OK) caps->max_ops_in_flight = limit = std::max<uint64_t>(1, caps->max_ops_in_flight - 1);
        h.caps = *caps;
        return st;
    }
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        {
            std::unique_lock lock(mu);
            if (live >= limit) {
                say(err, cap, "too many operations in flight");
                return KVBLOB_E_REJECTED;
            }
            if (live + 1 == limit) {
                ++at_last_slot;
                checked.notify_all();
                checked.wait_for(lock, std::chrono::seconds(1), [&] { return at_last_slot >= 2; });
            }
        }
        const kvblob_status st = h.submit(kind, batch, out, err, cap);
        if (st == KVBLOB_OK) {
            std::lock_guard lock(mu);
            ++live;
        }
        return st;
    }
    kvblob_status release(Hooked &h, kvblob_op_t *op) override
    {
        const kvblob_status st = Break::release(h, op);
        if (st == KVBLOB_OK) {
            std::lock_guard lock(mu);
            if (--live == 0) at_last_slot = 0;
        }
        return st;
    }
};
const Registered in_flight_racing("admission.ops-in-flight-racing", make<InFlightCheckedThenCounted>);

// data.round-trip.batch-10000: refuses more than 5000 rows, under a limit it declares far higher.
struct Refuses5000 : Break {
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        if (batch && out && batch->row_count > 5000) {
            *out = nullptr;
            say(err, cap, "more than 5000 rows");
            return KVBLOB_E_REJECTED;
        }
        return h.submit(kind, batch, out, err, cap);
    }
};
const Registered batch_10000("data.round-trip.batch-10000", make<Refuses5000>);

// ---- batches rewritten -----------------------------------------------------------

// Forwards the batch after Rewrite(h, kind, copy) changed it.
template <class Rewrite>
struct Rewrites : Break {
    Rewrite rewrite;
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        if (!batch || batch->struct_size < sizeof(kvblob_batch_t)) return h.submit(kind, batch, out, err, cap);
        BatchCopy copy(*batch);
        rewrite(h, kind, copy);
        return h.submit(kind, copy.get(), out, err, cap);
    }
};
template <class Rewrite>
std::unique_ptr<Break> rewrites()
{
    return std::make_unique<Rewrites<Rewrite>>();
}

// Each key, rewritten by Key(key).
template <void (*Key)(std::string &)>
struct EachKey {
    void operator()(Hooked &, Kind, BatchCopy &c)
    {
        for (auto &k : c.keys) Key(k);
    }
};
void c_string(std::string &k) { k.resize(std::strlen(k.c_str())); }
void lower_case(std::string &k)
{
    for (auto &ch : k) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
}
void first_250(std::string &k) { k.resize(std::min<size_t>(k.size(), 250)); }
void first_512(std::string &k) { k.resize(std::min<size_t>(k.size(), 512)); }
void seven_bit(std::string &k)
{
    for (auto &ch : k) ch = static_cast<char>(ch & 0x7F);
}
void never_empty(std::string &k)
{
    if (k.empty()) k = "\x7f" "empty";  // what an empty key is stored under
}
const Registered binary_keys("data.binary-keys", rewrites<EachKey<c_string>>);  // a key taken as a C string
const Registered key_space("data.key-space", rewrites<EachKey<lower_case>>);    // keys compared ignoring case
const Registered key_250("m.key1.first-250-bytes", rewrites<EachKey<first_250>>);
const Registered key_512("m.key1.first-512-bytes", rewrites<EachKey<first_512>>);
const Registered key_7bit("m.key1.seven-bit", rewrites<EachKey<seven_bit>>);  // a store that keeps 7-bit text
const Registered empty_key("admission.empty-key", rewrites<EachKey<never_empty>>);

// admission.duplicate-key: a key repeated in one operation is made another, and admitted.
struct DuplicatesRenamed {
    void operator()(Hooked &, Kind, BatchCopy &c)
    {
        std::set<std::string> seen;
        for (auto &k : c.keys)
            while (!seen.insert(k).second) k += '\x7f';
    }
};
const Registered duplicate("admission.duplicate-key", rewrites<DuplicatesRenamed>);

// The hint, when Drop(h, kind, hint): dropped, as if hints were not gated.
template <bool (*Drop)(const Hooked &, Kind, const kvblob_hint_t &)>
struct HintDropped {
    void operator()(Hooked &h, Kind kind, BatchCopy &c)
    {
        if (c.batch.hint && !(h.caps.flags & KVBLOB_CAP_HINTS) && Drop(h, kind, c.hint)) c.batch.hint = nullptr;
    }
};
bool any_hint(const Hooked &, Kind, const kvblob_hint_t &) { return true; }
bool empty_hint(const Hooked &, Kind, const kvblob_hint_t &hint) { return hint.size == 0; }
bool not_put(const Hooked &, Kind kind, const kvblob_hint_t &) { return kind != Kind::put; }
const Registered hint_gated("admission.hint-gated", rewrites<HintDropped<any_hint>>);
const Registered empty_hint_admitted("m.adm7.empty-hint-admitted", rewrites<HintDropped<empty_hint>>);
const Registered hint_put_only("m.adm7.hint-checked-on-put-only", rewrites<HintDropped<not_put>>);

// The hint's bytes cut to Size(hint).
template <uint64_t (*Size)(const kvblob_hint_t &)>
struct HintCut {
    void operator()(Hooked &, Kind, BatchCopy &c)
    {
        if (c.batch.hint && c.hint.bytes) c.hint.size = Size(c.hint);
    }
};
uint64_t as_c_string(const kvblob_hint_t &h) { return strnlen(static_cast<const char *>(h.bytes), h.size); }
uint64_t capped_64(const kvblob_hint_t &h) { return std::min<uint64_t>(h.size, 64); }
const Registered exact_bytes("hints.exact-bytes", rewrites<HintCut<as_c_string>>);
const Registered hint_64("m.hnt1.hint-capped-64", rewrites<HintCut<capped_64>>);

// m.con1.static-key-set / concurrency.admission-held: one key set for every
// call, emptied at each operation's first row: two threads admitting at once
// refuse each other's keys.
struct StaticKeySet : Break {
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        static std::unordered_set<std::string> seen;
        static std::mutex seen_mu;
        if (batch && batch->rows)
            for (uint64_t r = 0; r < batch->row_count; ++r) {
                const auto &row = batch->rows[r];
                // Read before the lock: a key whose page is held holds this call alone.
                std::string key(reinterpret_cast<const char *>(row.key), row.key ? row.key_len : 0);
                std::lock_guard lock(seen_mu);
                if (r == 0) seen.clear();
                if (!seen.insert(std::move(key)).second) {
                    if (out) *out = nullptr;
                    say(err, cap, "[R-ADM-4] row " + std::to_string(r) + " repeats a key");
                    return KVBLOB_E_REJECTED;
                }
            }
        return h.submit(kind, batch, out, err, cap);
    }
};
const Registered static_set("m.con1.static-key-set", make<StaticKeySet>);
const Registered admission_held("concurrency.admission-held", make<StaticKeySet>);

// m.con1.submitter-thread-only: a completion queue per thread: only the submitting thread sees its operations.
struct SubmitterOnly : Break {
    std::mutex mu;
    std::map<kvblob_op_t *, std::thread::id> submitter;
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        kvblob_status st = h.submit(kind, batch, out, err, cap);
        std::lock_guard lock(mu);
        if (st == KVBLOB_OK) submitter[*out] = std::this_thread::get_id();
        return st;
    }
    kvblob_status poll(Hooked &h, kvblob_op_t *op, uint32_t *is_final) override
    {
        {
            std::lock_guard lock(mu);
            auto it = submitter.find(op);
            if (it != submitter.end() && it->second != std::this_thread::get_id()) return KVBLOB_E_INVALID;
        }
        return h.poll(op, is_final);
    }
};
const Registered submitter_only("m.con1.submitter-thread-only", make<SubmitterOnly>);

// ---- regions the reference refuses, registered in its stead ------------------

// Registers desc as host memory of Substitute(desc) when Accept(h, desc).
template <bool (*Accept)(const Hooked &, const kvblob_region_desc_t &)>
struct RegistersAnyway : Break {
    kvblob_status register_region(Hooked &h, const kvblob_region_desc_t *desc, kvblob_region_t **out, char *err,
                                  uint32_t cap) override
    {
        if (!desc || desc->struct_size < sizeof *desc || !Accept(h, *desc))
            return h.next->register_region(h.inner, desc, out, err, cap);
        static uint8_t stand_in[64];
        kvblob_region_desc_t d = *desc;
        d.kind = KVBLOB_MEMORY_HOST;
        if (!d.base || d.size == 0) d.base = stand_in, d.size = sizeof stand_in;
        return h.next->register_region(h.inner, &d, out, err, cap);
    }
};
bool malformed(const Hooked &, const kvblob_region_desc_t &d) { return !d.base || d.size == 0; }
bool device(const Hooked &h, const kvblob_region_desc_t &d)
{
    return d.kind == KVBLOB_MEMORY_DEVICE && !(h.caps.flags & KVBLOB_CAP_DEVICE_MEMORY);
}
bool unknown_kind(const Hooked &, const kvblob_region_desc_t &d)
{
    return d.kind != KVBLOB_MEMORY_HOST && d.kind != KVBLOB_MEMORY_DEVICE;
}
const Registered malformed_region("admission.malformed-region", make<RegistersAnyway<malformed>>);
const Registered device_refused("admission.device-refused", make<RegistersAnyway<device>>);
const Registered unknown("m.adm8.unknown-kind-accepted", make<RegistersAnyway<unknown_kind>>);

}  // namespace

}  // namespace kvblob::breaking
