// Checks of the data path: round trips, row results, object integrity.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>

#include "common.hpp"

namespace kvblob::conformance {

namespace {

// Puts rows x size bytes from guarded memory and gets them back into other
// guarded memory; checks every byte and every canary (R-REG-3).
void round_trip(Context &c, size_t rows, size_t size, size_t regions)
{
    auto d = c.open();
    std::vector<std::unique_ptr<GuardedBuffer>> src, dst;
    std::vector<kvblob_region_t *> src_r, dst_r;
    const size_t per_region = (rows + regions - 1) / regions;
    for (size_t g = 0; g < regions; ++g) {
        src.push_back(std::make_unique<GuardedBuffer>(per_region * size));
        dst.push_back(std::make_unique<GuardedBuffer>(per_region * size));
        std::memset(dst.back()->data(), 0, dst.back()->size());
        src_r.push_back(c.reg(d, *src.back()));
        dst_r.push_back(c.reg(d, *dst.back()));
    }
    Batch put, get;
    for (size_t i = 0; i < rows; ++i) {
        const size_t g = i / per_region, off = (i % per_region) * size;
        fill_pattern(src[g]->data() + off, size, i);
        put.row(c.key(std::to_string(i)), {make_span(src_r[g], off, size)});
        get.row(c.key(std::to_string(i)), {make_span(dst_r[g], off, size)});
    }
    // A failing row says its size, what its put answered and what the
    // driver said of it: a size the store cuts short shows there.
    const std::string of_size = " of " + std::to_string(size) + " bytes";
    std::vector<std::string> put_said, get_said;
    auto pr = c.run(d, OpKind::put, put, &put_said);
    for (size_t i = 0; i < rows; ++i)
        expect(pr[i].result == KVBLOB_ROW_READY, "R-ROW-1",
               "put row " + std::to_string(i) + of_size + " is " + kvblob_row_result_name(pr[i].result) +
                   ", not READY" + said_text(put_said[i]));
    auto gr = c.run(d, OpKind::get, get, &get_said);
    for (size_t i = 0; i < rows; ++i) {
        expect(gr[i].result == KVBLOB_ROW_READY, "R-ROW-1",
               "get row " + std::to_string(i) + of_size + " is " + kvblob_row_result_name(gr[i].result) +
                   ", not READY, after its put answered READY" + said_text(get_said[i]));
        const size_t g = i / per_region, off = (i % per_region) * size;
        expect(std::memcmp(src[g]->data() + off, dst[g]->data() + off, size) == 0, "R-ROW-6",
               "get row " + std::to_string(i) + of_size + " is READY with bytes that differ from what was put");
    }
    for (size_t g = 0; g < regions; ++g)
        expect(src[g]->canary_intact() && dst[g]->canary_intact(), "R-REG-3",
               "a write landed outside the spans (canary damaged)");
}

// An operation of distinct keys, each within every declared limit, was
// refused (answered). Read as two keys taken for one (R-KEY-1) only once
// each key is known to be admitted alone: a store that refuses some keys
// alone (too long for its backend) breaks R-ADM-10 instead, and the
// failure names the lengths it refused and admitted.
[[noreturn]] void judge_refusal(const Context &c, Driver &d, OpKind kind, Batch &b, const std::string &answered,
                                uint64_t longest_admitted)
{
    const kvblob_batch_t &raw = b.get();
    std::set<uint64_t> refused, admitted;
    std::string refused_why;
    for (uint64_t i = 0; i < raw.row_count; ++i) {
        const kvblob_row_t &row = raw.rows[i];
        Batch alone;
        alone.row(std::string(reinterpret_cast<const char *>(row.key), row.key_len),
                  std::vector<kvblob_span_t>(row.spans, row.spans + row.span_count));
        kvblob_status st = KVBLOB_OK;
        std::string why;
        kvblob_op_t *op = c.submit(d, kind, alone, &st, &why);
        if (!op) {
            refused.insert(row.key_len);
            if (refused_why.empty()) refused_why = kvblob_status_name(st) + (" " + why);
            continue;
        }
        admitted.insert(row.key_len);
        expect(c.settle(d, op), "R-ACC-2", std::string(to_string(kind)) + " did not settle");
        d.table().release(d.handle(), op);
    }
    auto lengths = [](const std::set<uint64_t> &of) {
        std::string out;
        for (uint64_t n : of) out += (out.empty() ? "" : ", ") + std::to_string(n);
        return out.empty() ? std::string("none") : out;
    };
    const std::string what = std::string(to_string(kind)) + " of " + std::to_string(raw.row_count) +
                             " distinct keys, each within max_key_bytes (" + std::to_string(d.caps().max_key_bytes) +
                             "), was refused (" + answered + ")";
    if (!refused.empty())
        throw CheckFailure("R-ADM-10", what + "; alone, keys of " + lengths(refused) + " bytes were refused too (" +
                                           refused_why + "), " +
                                           (admitted.empty() ? "none of its keys admitted"
                                                             : "keys of " + lengths(admitted) + " bytes admitted") +
                                           ", and keys of up to " + std::to_string(longest_admitted) +
                                           " bytes were admitted before: refused within every declared limit");
    throw CheckFailure("R-KEY-1", what + ", though each key alone was admitted: the store took two of them for one");
}

// R-KEY-1: a store that folds ASCII case, keeps a key's first few hundred
// bytes only, or drops a byte's high bit makes two of these keys one.
void data_key_space(Context &c)
{
    auto d = c.open();
    const std::string base = c.key("ks");
    // Longer keys than this are not tried, whatever the driver declares.
    constexpr uint64_t longest_tried = 64 * 1024;
    const uint64_t limit = std::min<uint64_t>(d.caps().max_key_bytes, longest_tried);
    if (limit < base.size() + 1) throw NotSupported("max_key_bytes is below the battery's key prefix");
    std::vector<std::string> keys;
    for (int b = 0; b < 256; ++b) keys.push_back(base + static_cast<char>(b));  // 'A' and 'a' among them
    // Two keys of length n that differ only in their last byte, by ASCII
    // case or not; every byte value appears in the bytes before it.
    auto pair_at = [&](uint64_t n, char one, char other) {
        if (n < base.size() + 1 || n > limit) return;
        std::string k = base;
        for (uint64_t i = base.size(); i + 1 < n; ++i) k += static_cast<char>(i * 131 % 256);
        keys.push_back(k + one);
        keys.push_back(k + other);
    };
    pair_at(252, 'Q', 'q');  // only past byte 250, only in case
    const std::set<uint64_t> lengths = {251, 256, 257, 300, 512, 513, 1024, 1025, 4096, limit - 1, limit};
    for (uint64_t n : lengths) pair_at(n, 'x', 'y');
    constexpr uint64_t size = 64;
    if (d.caps().max_object_bytes < size) throw NotSupported("max_object_bytes is below 64");
    GuardedBuffer src(keys.size() * size), dst(keys.size() * size);
    for (size_t i = 0; i < keys.size(); ++i) fill_pattern(src.data() + i * size, size, 7000 + i);
    std::memset(dst.data(), 0, dst.size());
    auto rs = c.reg(d, src), rd = c.reg(d, dst);
    // In batches the driver admits, each key in its own row.
    const size_t per_op = static_cast<size_t>(std::min<uint64_t>(d.caps().max_rows_per_op, 64));
    auto describe = [&](size_t i) {
        char last[8];
        std::snprintf(last, sizeof last, "0x%02x", static_cast<unsigned char>(keys[i].back()));
        return "the key of " + std::to_string(keys[i].size()) + " bytes ending in byte " + last;
    };
    uint64_t longest_admitted = 0;  // the longest key of an admitted operation
    for (OpKind kind : {OpKind::put, OpKind::get})
        for (size_t first = 0; first < keys.size(); first += per_op) {
            Batch b;
            const size_t end = std::min(keys.size(), first + per_op);
            for (size_t i = first; i < end; ++i)
                b.row(keys[i], {make_span(kind == OpKind::put ? rs : rd, i * size, size)});
            kvblob_status st = KVBLOB_OK;
            std::string why;
            kvblob_op_t *op = c.submit(d, kind, b, &st, &why);
            if (!op) judge_refusal(c, d, kind, b, kvblob_status_name(st) + (" " + why), longest_admitted);
            for (size_t i = first; i < end; ++i) longest_admitted = std::max<uint64_t>(longest_admitted, keys[i].size());
            expect(c.settle(d, op), "R-ACC-2", std::string(to_string(kind)) + " did not settle");
            auto r = c.results(d, op, b.size());
            expect(d.table().release(d.handle(), op) == KVBLOB_OK, "R-OPS-1", "release refused for a settled operation");
            for (size_t i = first; i < end; ++i)
                expect(r[i - first].result == KVBLOB_ROW_READY, "R-KEY-1",
                       std::string(to_string(kind)) + " of " + describe(i) + " is " +
                           kvblob_row_result_name(r[i - first].result) + ", not READY: another key took its place");
        }
    for (size_t i = 0; i < keys.size(); ++i)
        expect(std::memcmp(src.data() + i * size, dst.data() + i * size, size) == 0, "R-KEY-1",
               "a get of " + describe(i) + " is READY with another key's bytes: the store took two keys for one");
}

void data_round_trip_one_row(Context &c)
{
    round_trip(c, 1, 4096, 1);
}

void data_round_trip_many_rows(Context &c)
{
    round_trip(c, 256, 4096, 1);
}

void data_round_trip_many_regions(Context &c)
{
    round_trip(c, 64, 8192, 8);
}

void data_round_trip_large_rows(Context &c)
{
    if (c.open().caps().max_object_bytes < (16u << 20))
        throw NotSupported("max_object_bytes is below 16 MiB");
    round_trip(c, 4, 16u << 20, 2);
}

void data_round_trip_batch_10000(Context &c)
{
    auto d = c.open();
    if (d.caps().max_rows_per_op < 10000) throw NotSupported("max_rows_per_op is below 10,000");
    round_trip(c, 10000, 512, 1);
}

void data_round_trip_multi_span(Context &c)
{
    auto d = c.open();
    if (d.caps().max_spans_per_row < 3) throw NotSupported("max_spans_per_row is below 3");
    GuardedBuffer a(3000), b(3000), out(9000);
    fill_pattern(a.data(), 3000, 1);
    fill_pattern(b.data(), 3000, 2);
    auto ra = c.reg(d, a), rb = c.reg(d, b), ro = c.reg(d, out);
    auto k = c.key("m");
    expect(c.run_one(d, OpKind::put, k,
                     {make_span(ra, 0, 3000), make_span(rb, 0, 3000), make_span(ra, 1000, 1000)}) ==
               KVBLOB_ROW_READY,
           "R-ROW-1", "multi-span put not READY");
    expect(c.run_one(d, OpKind::get, k, {make_span(ro, 0, 7000)}) == KVBLOB_ROW_READY, "R-ROW-1",
           "single-span get of a multi-span object not READY");
    expect(std::memcmp(out.data(), a.data(), 3000) == 0 &&
               std::memcmp(out.data() + 3000, b.data(), 3000) == 0 &&
               std::memcmp(out.data() + 6000, a.data() + 1000, 1000) == 0,
           "R-ROW-1", "the object is not the concatenation of the spans, in order");
}

// Other checks read a get that is not READY as proof that nothing was
// stored (Context::require_absent_not_ready): this one judges that
// behaviour, and they are blocked by it when it is broken.
void data_miss_untouched(Context &c)
{
    auto d = c.open();
    GuardedBuffer dst(4096);
    std::memset(dst.data(), 0xA7, 4096);
    auto r = c.reg(d, dst);
    auto res = c.run_one(d, OpKind::get, c.key("absent"), {make_span(r, 0, 4096)});
    const std::string answered =
        std::string("a get of a key never put answered ") + kvblob_row_result_name(res);
    if (d.has(KVBLOB_CAP_ABSENT_IS_MISS))
        expect(res == KVBLOB_ROW_MISS, "R-ROW-4",
               answered + "; R-ROW-4 wants MISS from a driver that declares absent_is_miss");
    expect(res != KVBLOB_ROW_READY, "R-ROW-6",
           answered + "; R-ROW-6 wants no READY for bytes the driver did not verify (none exist)");
    if (res == KVBLOB_ROW_MISS)
        for (size_t i = 0; i < 4096; ++i)
            expect(dst.data()[i] == 0xA7, "R-ROW-3",
                   "a get answered MISS and wrote its destination at byte " + std::to_string(i) +
                       "; R-ROW-3 wants the destination untouched");
}

void data_absent_is_miss(Context &c)
{
    auto d = c.open();
    GuardedBuffer dst(64);
    auto r = c.reg(d, dst);
    auto res = c.run_one(d, OpKind::get, c.key("none"), {make_span(r, 0, 64)});
    expect(res == KVBLOB_ROW_MISS, "R-ROW-4",
           std::string("get of an absent key answered ") + kvblob_row_result_name(res) +
               "; R-ROW-4 wants MISS");
    if (d.has(KVBLOB_CAP_PROBE)) {
        res = c.run_one(d, OpKind::probe, c.key("none"));
        expect(res == KVBLOB_ROW_MISS, "R-ROW-4",
               std::string("probe of an absent key answered ") + kvblob_row_result_name(res) +
                   "; R-ROW-4 wants MISS");
    }
}

void data_put_existing_unchanged(Context &c)
{
    auto d = c.open();
    GuardedBuffer a(2048), b(2048), out(2048);
    fill_pattern(a.data(), 2048, 10);
    fill_pattern(b.data(), 2048, 11);
    auto ra = c.reg(d, a), rb = c.reg(d, b), ro = c.reg(d, out);
    auto k = c.key("twice");
    expect(c.run_one(d, OpKind::put, k, {make_span(ra, 0, 2048)}) == KVBLOB_ROW_READY, "R-ROW-1",
           "first put not READY");
    expect(c.run_one(d, OpKind::put, k, {make_span(rb, 0, 2048)}) == KVBLOB_ROW_READY, "R-ROW-7",
           "a put of an existing key is not READY");
    expect(c.run_one(d, OpKind::get, k, {make_span(ro, 0, 2048)}) == KVBLOB_ROW_READY, "R-ROW-1",
           "get not READY");
    expect(std::memcmp(out.data(), a.data(), 2048) == 0, "R-ROW-7",
           "the second put rewrote the stored object");
}

void data_wrong_size_fault(Context &c)
{
    auto d = c.open();
    GuardedBuffer src(4096), dst(8192);
    fill_pattern(src.data(), 4096, 3);
    std::memset(dst.data(), 0x3C, 8192);
    auto rs = c.reg(d, src), rd = c.reg(d, dst);
    auto k = c.key("sized");
    expect(c.run_one(d, OpKind::put, k, {make_span(rs, 0, 4096)}) == KVBLOB_ROW_READY, "R-ROW-1",
           "put not READY");
    auto res = c.run_one(d, OpKind::get, k, {make_span(rd, 0, 1024)});
    expect(res == KVBLOB_ROW_FAULT, "R-ROW-5",
           std::string("a get into a row shorter than the object answered ") +
               kvblob_row_result_name(res) + "; R-ROW-5 wants FAULT");
    for (size_t i = 0; i < 8192; ++i)
        expect(dst.data()[i] == 0x3C, "R-ROW-5",
               "an object longer than the row was written into it (byte " + std::to_string(i) + ")");
    res = c.run_one(d, OpKind::get, k, {make_span(rd, 0, 8192)});
    expect(res == KVBLOB_ROW_FAULT, "R-ROW-5",
           std::string("a get into a row longer than the object answered ") +
               kvblob_row_result_name(res) + "; R-ROW-5 wants FAULT");
}

void data_corrupt_never_ready(Context &c)
{
    auto d = c.open();
    GuardedBuffer src(4096), dst(4096);
    fill_pattern(src.data(), 4096, 4);
    auto rs = c.reg(d, src), rd = c.reg(d, dst);
    auto k = c.key("rot");
    expect(c.run_one(d, OpKind::put, k, {make_span(rs, 0, 4096)}) == KVBLOB_ROW_READY, "R-ROW-1",
           "put not READY");
    c.stage(d, "stage_corrupt", k, "R-ROW-6");
    auto res = c.run_one(d, OpKind::get, k, {make_span(rd, 0, 4096)});
    expect(res == KVBLOB_ROW_FAULT, "R-ROW-6",
           std::string("a corrupted object is ") + kvblob_row_result_name(res) + ", not FAULT");
}

void data_failed_put_leaves_nothing(Context &c)
{
    auto d = c.open();
    GuardedBuffer buf(2048);
    auto r = c.reg(d, buf);
    auto k = c.key("declined");
    c.stage(d, "stage_full_pool", "R-ROW-8");
    auto put = c.run_one(d, OpKind::put, k, {make_span(r, 0, 2048)});
    c.stage(d, "release_staged", "R-ROW-8");
    if (put == KVBLOB_ROW_READY) throw NotSupported("the staged full pool did not stop the put");
    auto get = c.run_one(d, OpKind::get, k, {make_span(r, 0, 2048)});
    expect(get != KVBLOB_ROW_READY, "R-ROW-8",
           std::string("a put answered ") + kvblob_row_result_name(put) +
               " left an object that a get reads as READY");
}

void data_binary_keys(Context &c)
{
    auto d = c.open();
    const std::string base = c.key("bin");
    const std::vector<std::string> keys = {
        base,                               // a prefix of all the others
        base + std::string("\0a", 2),       // NUL inside
        base + std::string("\0b", 2),       // ... differing only in the last byte
        base + std::string(1, '\0'),        // ending in NUL
        base + "\xff",                      // a byte that is not text
        base + std::string("\xff\0", 2),    // a prefix of it with a NUL more
    };
    constexpr uint64_t n = 256;
    if (d.caps().max_rows_per_op < keys.size()) throw NotSupported("max_rows_per_op is below 6");
    GuardedBuffer src(keys.size() * n), dst(keys.size() * n);
    fill_pattern(src.data(), src.size(), 61);
    auto rs = c.reg(d, src), rd = c.reg(d, dst);
    Batch put, get;
    for (size_t i = 0; i < keys.size(); ++i) {
        put.row(keys[i], {make_span(rs, i * n, n)});
        get.row(keys[i], {make_span(rd, i * n, n)});
    }
    auto pr = c.run(d, OpKind::put, put);  // one batch: the keys are distinct (R-ADM-4)
    auto gr = c.run(d, OpKind::get, get);
    for (size_t i = 0; i < keys.size(); ++i) {
        expect(pr[i].result == KVBLOB_ROW_READY, "R-ROW-6",
               "put of binary key " + std::to_string(i) + " is " +
                   kvblob_row_result_name(pr[i].result));
        expect(gr[i].result == KVBLOB_ROW_READY &&
                   std::memcmp(src.data() + i * n, dst.data() + i * n, n) == 0,
               "R-ROW-6",
               "get of binary key " + std::to_string(i) + " is " +
                   kvblob_row_result_name(gr[i].result) + " or holds another key's bytes");
    }
}

void data_results_stable(Context &c)
{
    auto d = c.open();
    GuardedBuffer src(64 * 100);
    auto r = c.reg(d, src);
    Batch b;
    for (int i = 0; i < 100; ++i) b.row(c.key(std::to_string(i)), {make_span(r, i * 64, 64)});
    auto op = c.admit(d, OpKind::put, b);
    expect(c.settle(d, op), "R-ACC-2", "put did not settle");
    auto first = c.results(d, op, 100);
    std::this_thread::sleep_for(20ms);
    auto second = c.results(d, op, 100);
    for (int i = 0; i < 100; ++i)
        expect(first[i].result == second[i].result, "R-ROW-1",
               "row " + std::to_string(i) + " changed after the operation was final");
}

}  // namespace

// The checks of this file, in run order.
void add_data_checks(std::vector<Check> &out)
{
    const Check checks[] = {
        {"data.round-trip.one-row", {"R-ROW-1", "R-ROW-6"}, Level::must, 0, {},
         "one row of 4 KiB put and got back byte for byte",
         data_round_trip_one_row},
        {"data.round-trip.many-rows", {"R-ROW-1", "R-ROW-6"}, Level::must, 0, {},
         "256 rows of 4 KiB in one operation",
         data_round_trip_many_rows},
        {"data.round-trip.many-regions", {"R-ROW-1", "R-ROW-6", "R-REG-1"}, Level::must, 0, {},
         "64 rows spread over 8 regions",
         data_round_trip_many_regions},
        {"data.round-trip.large-rows", {"R-ROW-1", "R-ROW-6"}, Level::must, 0, {},
         "4 rows of 16 MiB",
         data_round_trip_large_rows},
        {"data.round-trip.batch-10000", {"R-ROW-1", "R-ADM-10"}, Level::must, 0, {},
         "one batch of 10,000 rows of 512 bytes",
         data_round_trip_batch_10000},
        {"data.round-trip.multi-span", {"R-ROW-1", "R-ADM-5"}, Level::must, KVBLOB_CAP_MULTI_SPAN, {},
         "a row of three spans in two regions stores their concatenation",
         data_round_trip_multi_span},
        {"data.miss.untouched", {"R-ROW-3", "R-ROW-4", "R-ROW-6"}, Level::must, 0, {},
         "a get of an absent key is not READY (MISS with absent_is_miss), and MISS leaves the "
         "destination byte for byte",
         data_miss_untouched},
        {"data.absent-is-miss", {"R-ROW-4"}, Level::must, KVBLOB_CAP_ABSENT_IS_MISS, {},
         "with absent_is_miss, absent keys are MISS for get and probe",
         data_absent_is_miss},
        {"data.put-existing.unchanged", {"R-ROW-7"}, Level::must, 0, {},
         "a second put of a key is READY and leaves the first object",
         data_put_existing_unchanged},
        {"data.wrong-size.fault", {"R-ROW-5"}, Level::must, 0, {},
         "a get whose spans are shorter or longer than the object is FAULT; a longer object writes nothing",
         data_wrong_size_fault},
        {"data.corrupt.never-ready", {"R-ROW-6"}, Level::must, 0, {"stage_corrupt"},
         "an object corrupted at rest is FAULT, never READY with wrong bytes",
         data_corrupt_never_ready},
        {"data.failed-put.leaves-nothing", {"R-ROW-8"}, Level::must, 0, {"stage_full_pool", "release_staged"},
         "a put the driver could not complete leaves no object a reader can get",
         data_failed_put_leaves_nothing},
        {"data.binary-keys", {"R-ROW-6", "R-ADM-4", "R-ADM-10"}, Level::must, 0, {},
         "keys are bytes: with NULs inside and at the end, differing only in their last byte, or "
         "prefixes of each other, each names its own object",
         data_binary_keys},
        {"data.key-space", {"R-KEY-1"}, Level::must, 0, {},
         "keys are compared whole, byte for byte: keys ending in each of the 256 byte values, pairs "
         "that differ only in ASCII case, and pairs that differ only in their last byte at lengths past "
         "250 bytes up to max_key_bytes each name their own object",
         data_key_space},
        {"data.results.stable", {"R-ROW-1"}, Level::must, 0, {},
         "a final operation has one valid result per row, and they never change",
         data_results_stable},
    };
    out.insert(out.end(), std::begin(checks), std::end(checks));
}

}  // namespace kvblob::conformance
