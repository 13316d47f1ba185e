// Breaks of the store's copy paths (R-ROW-5, R-ROW-6, R-ROW-8, R-REG-3,
// R-CON-1, R-CON-2, R-ADM-5, R-ADM-6), made at the table: spans redirected
// to memory of the breaking driver's own (Hooked::scratch) so bytes never
// reach the host or reach it late, written past or before the host's spans,
// objects published (through puts of its own) before they are whole, spans
// the reference refuses admitted in another shape.
#include "batch_copy.hpp"
#include "hook.hpp"

#include <kvblob/support/device_copy.hpp>
#include <kvblob/support/options.hpp>

#include <chrono>
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

bool device(Hooked &h, const kvblob_span_t &span)
{
    std::lock_guard lock(h.ops_mu);
    auto it = h.regions.find(span.region);
    return it != h.regions.end() && it->second.kind == KVBLOB_MEMORY_DEVICE;
}

// Sets n bytes of device memory at at to value.
void fill_device(uint8_t *at, size_t n, int ordinal, uint8_t value)
{
    std::string error;
    support::host_to_device(at, n, ordinal, [value](uint8_t *chunk, size_t len) { std::memset(chunk, value, len); },
                            error);
}
int ordinal(Hooked &h, const kvblob_span_t &span)
{
    std::lock_guard lock(h.ops_mu);
    auto it = h.regions.find(span.region);
    return it == h.regions.end() ? 0 : it->second.device_ordinal;
}

// ---- writes outside the spans ------------------------------------------------------

// A get writes Write(h, span, at) around each of its spans as it is admitted.
template <void (*Write)(Hooked &, const kvblob_span_t &, uint8_t *)>
struct WritesAround : Break {
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        kvblob_status st = h.submit(kind, batch, out, err, cap);
        if (st == KVBLOB_OK && kind == Kind::get)
            for (uint64_t r = 0; r < batch->row_count; ++r)
                for (uint32_t s = 0; s < batch->rows[r].span_count; ++s)
                    if (uint8_t *at = h.address(batch->rows[r].spans[s])) Write(h, batch->rows[r].spans[s], at);
        return st;
    }
};
void nul_after(Hooked &h, const kvblob_span_t &span, uint8_t *at)
{
    if (!device(h, span)) at[span.length] = 0;  // a NUL after
}
void byte_before(Hooked &h, const kvblob_span_t &span, uint8_t *at)
{
    if (!device(h, span)) at[-1] = 0;  // a length byte before
}
void device_past_end(Hooked &h, const kvblob_span_t &span, uint8_t *at)
{
    if (device(h, span)) fill_device(at + span.length, 64, ordinal(h, span), 0);
}
const Registered past_span("m.reg3.write-past-span", make<WritesAround<nul_after>>);
const Registered before_span("m.reg3.write-before-span", make<WritesAround<byte_before>>);
const Registered canaries("device.guard-canaries", make<WritesAround<device_past_end>>);

// device.miss.untouched: MISS zeroes device destinations (absent keys found by a probe first).
struct DeviceMissZeroes : Break {
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        if (auto rows = stored_rows(h, kind, Kind::get, batch))
            for (size_t r = 0; r < rows->copy.rows.size(); ++r)
                for (const auto &span : rows->copy.spans[r])
                    if (!rows->stored[r] && device(h, span))
                        if (uint8_t *at = h.address(span)) fill_device(at, span.length, ordinal(h, span), 0);
        return h.submit(kind, batch, out, err, cap);
    }
};
const Registered device_miss("device.miss.untouched", make<DeviceMissZeroes>);

// ---- bytes kept from the host: spans redirected to scratch ------------------------

// Gets whose spans Redirect(h, copy, scratch) points elsewhere: verified by the
// reference (READY), never delivered to the host.
template <void (*Redirect)(Hooked &, BatchCopy &)>
struct Undelivered : Break {
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        if (kind != Kind::get || !batch || !batch->rows) return h.submit(kind, batch, out, err, cap);
        BatchCopy copy(*batch);
        Redirect(h, copy);
        return h.submit(kind, copy.get(), out, err, cap);
    }
};
// A span of the same length in scratch.
kvblob_span_t elsewhere(Hooked &h, uint64_t length)
{
    return {sizeof(kvblob_span_t), 0, h.scratch(length), 0, length};
}
// device.round-trip: device spans verified, never delivered.
void device_spans(Hooked &h, BatchCopy &c)
{
    for (auto &spans : c.spans)
        for (auto &span : spans)
            if (device(h, span)) span = elsewhere(h, span.length);
}
// data.round-trip.many-regions: with spans in several regions, the second half of the rows delivers nothing.
void second_half(Hooked &, BatchCopy &c);
// data.round-trip.large-rows: a row of 16 MiB or more delivers the first half of its first span.
void first_half(Hooked &h, BatchCopy &c)
{
    for (auto &spans : c.spans) {
        uint64_t total = 0;
        for (const auto &s : spans) total += s.length;
        if (total < (16u << 20) || spans.empty()) continue;
        kvblob_span_t head = spans[0];
        head.length /= 2;
        spans = {head, elsewhere(h, total - head.length)};
    }
}
void second_half(Hooked &h, BatchCopy &c)
{
    std::set<kvblob_region_t *> regions;
    for (const auto &spans : c.spans)
        for (const auto &s : spans) regions.insert(s.region);
    if (regions.size() < 2) return;
    for (size_t r = c.spans.size() / 2; r < c.spans.size(); ++r)
        for (auto &span : c.spans[r]) span = elsewhere(h, span.length);
}
const Registered device_round_trip("device.round-trip", make<Undelivered<device_spans>>);
const Registered many_regions("data.round-trip.many-regions", make<Undelivered<second_half>>);
const Registered large_rows("data.round-trip.large-rows", make<Undelivered<first_half>>);

// m.con1.shared-scratch: one bounce buffer for every thread: a get of up to
// 64 KiB lands there first, and is copied out to the host's spans after.
struct SharedBounce : Break {
    static constexpr uint64_t size = 1 << 16;
    static uint8_t *buffer()
    {
        static uint8_t shared[size];
        return shared;
    }
    std::mutex mu;
    kvblob_region_t *region = nullptr;  // buffer(), registered with this driver's reference
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        if (kind != Kind::get || !batch || !batch->rows) return h.submit(kind, batch, out, err, cap);
        BatchCopy copy(*batch);
        uint64_t at = 0;
        for (auto &spans : copy.spans)
            for (auto &span : spans) at += span.length;
        if (at > size) return h.submit(kind, batch, out, err, cap);
        {
            std::lock_guard lock(mu);
            if (!region) {
                kvblob_region_desc_t d{sizeof d, KVBLOB_MEMORY_HOST, buffer(), size, 0, 0};
                h.next->register_region(h.inner, &d, &region, nullptr, 0);
            }
        }
        std::vector<std::pair<kvblob_span_t, uint64_t>> back;  // the host's span, where its bytes land
        at = 0;
        for (auto &spans : copy.spans)
            for (auto &span : spans) {
                back.emplace_back(span, at);
                span = {sizeof(kvblob_span_t), 0, region, at, span.length};
                at += span.length;
            }
        kvblob_status st = h.submit(kind, copy.get(), out, err, cap);
        if (st != KVBLOB_OK) return st;
        h.wait_final(*out);
        std::this_thread::yield();
        for (const auto &[span, from] : back)
            if (uint8_t *to = h.address(span)) std::memcpy(to, buffer() + from, span.length);
        return st;
    }
    kvblob_status close(Hooked &h) override
    {
        if (region && h.next->unregister_region(h.inner, region) == KVBLOB_OK) region = nullptr;
        return h.next->close(h.inner);
    }
};
const Registered shared_scratch("m.con1.shared-scratch", make<SharedBounce>);

// ---- a stored object's size differing from the row's ----------------------------

// Gets run to the end inside the call; a row FAULT for its size (driver code
// 100) gets what fitted of the stored object written to its first span, and
// answers Answer(stored, row) (PENDING: left as the reference said).
template <kvblob_row_result (*Answer)(uint64_t stored, uint64_t row)>
struct WritesWhatFits : Break {
    std::mutex mu;
    std::map<kvblob_op_t *, std::map<uint64_t, kvblob_row_result>> answers;
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        kvblob_status st = h.submit(kind, batch, out, err, cap);
        if (st != KVBLOB_OK || kind != Kind::get) return st;
        h.wait_final(*out);
        std::map<uint64_t, kvblob_row_result> rewritten;
        for (uint64_t r = 0; r < batch->row_count; ++r) {
            kvblob_row_status_t s{};
            s.struct_size = sizeof s;
            if (h.results(*out, r, 1, &s) != KVBLOB_OK || s.result != KVBLOB_ROW_FAULT || s.driver_code != 100) continue;
            char message[256] = "";
            h.next->row_message(h.inner, *out, r, message, sizeof message);
            const char *is = std::strstr(message, "object is ");
            if (!is || !batch->rows[r].span_count) continue;
            const uint64_t stored = std::strtoull(is + 10, nullptr, 10);
            uint64_t row = 0;
            for (uint32_t i = 0; i < batch->rows[r].span_count; ++i) row += batch->rows[r].spans[i].length;
            const kvblob_row_result answer = Answer(stored, row);
            if (answer == KVBLOB_ROW_PENDING) continue;
            // The stored object, read whole into scratch by a get of the breaking driver's own.
            uint8_t *bytes = nullptr;
            kvblob_span_t whole{sizeof(kvblob_span_t), 0, h.scratch(stored, &bytes), 0, stored};
            kvblob_row_t read{sizeof(kvblob_row_t), 1, batch->rows[r].key, batch->rows[r].key_len, &whole};
            auto got = h.run(Kind::get, {sizeof(kvblob_batch_t), 0, &read, 1, nullptr});
            const kvblob_span_t &first = batch->rows[r].spans[0];
            if (uint8_t *to = h.address(first); to && !got.empty() && got[0] == KVBLOB_ROW_READY)
                std::memcpy(to, bytes, std::min(stored, first.length));
            rewritten[r] = answer;
        }
        std::lock_guard lock(mu);
        if (!rewritten.empty()) answers[*out] = rewritten;
        return st;
    }
    kvblob_status results(Hooked &h, kvblob_op_t *op, uint64_t first, uint64_t count,
                          kvblob_row_status_t *out) override
    {
        kvblob_status st = h.results(op, first, count, out);
        std::lock_guard lock(mu);
        auto it = answers.find(op);
        if (st != KVBLOB_OK || it == answers.end()) return st;
        for (uint64_t i = 0; i < count; ++i)
            if (auto a = it->second.find(first + i); a != it->second.end()) {
                out[i].result = a->second;
                if (a->second == KVBLOB_ROW_READY) out[i].driver_code = 0;
            }
        return st;
    }
    kvblob_status release(Hooked &h, kvblob_op_t *op) override
    {
        kvblob_status st = h.next->release(h.inner, op);
        std::lock_guard lock(mu);
        if (st == KVBLOB_OK) answers.erase(op);
        return st;
    }
};
// data.wrong-size.fault: a size mismatch is READY with what fitted.
kvblob_row_result any_ready(uint64_t, uint64_t) { return KVBLOB_ROW_READY; }
// m.row5.longer-writes-head: an object longer than the row writes its head, then FAULT.
kvblob_row_result longer_fault(uint64_t stored, uint64_t row)
{
    return stored > row ? KVBLOB_ROW_FAULT : KVBLOB_ROW_PENDING;
}
// m.row5.shorter-ready: an object shorter than the row is READY.
kvblob_row_result shorter_ready(uint64_t stored, uint64_t row)
{
    return stored < row ? KVBLOB_ROW_READY : KVBLOB_ROW_PENDING;
}
const Registered wrong_size("data.wrong-size.fault", make<WritesWhatFits<any_ready>>);
const Registered longer("m.row5.longer-writes-head", make<WritesWhatFits<longer_fault>>);
const Registered shorter("m.row5.shorter-ready", make<WritesWhatFits<shorter_ready>>);

// ---- objects published before they are whole --------------------------------------

// A put first publishes, under each key, an object of the row's size that
// is not the row's (zeroes; with Corrupt, failing its checksum), for 1 ms,
// then removes it and puts the row's.
template <bool Corrupt>
struct PublishedEarly : Break {
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        if (kind != Kind::put || !batch || !batch->rows) return h.submit(kind, batch, out, err, cap);
        BatchCopy early(*batch);
        for (auto &spans : early.spans) {
            uint64_t total = 0;
            for (const auto &s : spans) total += s.length;
            spans = {elsewhere(h, total)};
        }
        h.run(Kind::put, *early.get());
        if (Corrupt && h.scenarios && h.scenarios->stage_corrupt)
            for (const auto &k : early.keys)
                h.scenarios->stage_corrupt(h.inner, reinterpret_cast<const uint8_t *>(k.data()), k.size());
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        for (auto &spans : early.spans) spans.clear();
        h.run(Kind::remove, *early.get());
        return h.submit(kind, batch, out, err, cap);
    }
};
const Registered threads("concurrency.threads", make<PublishedEarly<false>>);  // readers see it before it is written
const Registered two_writers("concurrency.one-key-two-drivers", make<PublishedEarly<false>>);  // no writer excludes another
const Registered before_trailer("m.row8.commit-before-trailer", make<PublishedEarly<true>>);  // visible before its trailer

// ---- spans the reference refuses, admitted in another shape --------------------

// admission.zero-length-span: a zero-length span admitted (as a byte of scratch).
struct ZeroLengthAdmitted : Break {
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        if (!batch || !batch->rows) return h.submit(kind, batch, out, err, cap);
        BatchCopy copy(*batch);
        for (auto &spans : copy.spans)
            for (auto &span : spans)
                if (span.length == 0) span = elsewhere(h, 1);
        return h.submit(kind, copy.get(), out, err, cap);
    }
};
const Registered zero_length("admission.zero-length-span", make<ZeroLengthAdmitted>);

// admission.span-outside: admits a span past its region and moves what fits.
struct SpanClamped : Break {
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        if (!batch || !batch->rows) return h.submit(kind, batch, out, err, cap);
        BatchCopy copy(*batch);
        {
            std::lock_guard lock(h.ops_mu);
            for (auto &spans : copy.spans)
                for (auto &span : spans)
                    if (auto it = h.regions.find(span.region); it != h.regions.end()) {
                        const uint64_t size = it->second.size;
                        if (span.offset < size && span.length > size - span.offset) span.length = size - span.offset;
                    }
        }
        return h.submit(kind, copy.get(), out, err, cap);
    }
};
const Registered span_outside("admission.span-outside", make<SpanClamped>);

// m.adm5.object-limit-per-span: the object limit checked per span, not per
// row (the reference opened with room for a row of spans each at the limit).
struct LimitPerSpan : Break {
    kvblob_status open(Hooked &h, const kvblob_open_args_t *args, kvblob_caps_t *caps, char *err,
                       uint32_t cap) override
    {
        const char *given = option_value(*args, "max_object_bytes");
        const char *spans = option_value(*args, "max_spans");
        if (!given) return Break::open(h, args, caps, err, cap);
        limit = support::parse_bytes(given);
        const std::string wide = std::to_string(limit * std::strtoull(spans ? spans : "64", nullptr, 10));
        std::vector<kvblob_option_t> options;
        for (uint64_t i = 0; i < args->option_count; ++i)
            if (!args->options[i].key || std::string(args->options[i].key) != "max_object_bytes")
                options.push_back(args->options[i]);
        options.push_back({sizeof(kvblob_option_t), 0, "max_object_bytes", wide.c_str()});
        kvblob_open_args_t a = *args;
        a.options = options.data();
        a.option_count = options.size();
        kvblob_status st = Break::open(h, &a, caps, err, cap);
        if (st == KVBLOB_OK) caps->max_object_bytes = limit;
        h.caps = *caps;
        return st;
    }
    uint64_t limit = UINT64_MAX;
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        for (uint64_t r = 0; batch && batch->rows && r < batch->row_count; ++r)
            for (uint32_t s = 0; s < batch->rows[r].span_count && batch->rows[r].spans; ++s)
                if (batch->rows[r].spans[s].length > limit) {
                    if (out) *out = nullptr;
                    if (err && cap)
                        std::snprintf(err, cap, "[R-ADM-5] row %llu has a span over the object limit",
                                      static_cast<unsigned long long>(r));
                    return KVBLOB_E_REJECTED;
                }
        return h.submit(kind, batch, out, err, cap);
    }
};
const Registered per_span("m.adm5.object-limit-per-span", make<LimitPerSpan>);

}  // namespace

}  // namespace kvblob::breaking
