// Checks of admission: every refusal, its lack of side effects, and the
// converse (R-ADM-*).
#include <barrier>
#include <chrono>
#include <cstring>
#include <utility>

#include "common.hpp"
#include "reserved_space.hpp"
#include "starvation.hpp"

namespace kvblob::conformance {

namespace {

// Submits batch as a put and requires a refusal; then requires that none of
// keys is stored (R-ADM-9).
void expect_refused(Context &c, Driver &d, Batch &batch, const std::vector<std::string> &keys,
                    const std::string &rule, const std::string &what)
{
    if (!keys.empty()) c.require_absent_not_ready(d, "a refused put stored nothing");
    kvblob_status st = KVBLOB_OK;
    kvblob_op_t *op = c.submit(d, OpKind::put, batch, &st);
    if (op) {
        // Admitted against the rule: the driver may be reading the row's
        // memory, which the caller frees once this check fails. Its access
        // ends first (bounded), so the verdict is this FAIL, not a crash;
        // it rests on the admission, never on that wait, so a starved
        // machine (Starved) does not change it.
        try {
            if (c.settle(d, op)) d.table().release(d.handle(), op);
        } catch (const Starved &) {
        }
        expect(false, rule, what + " was admitted (" + kvblob_status_name(st) + ")");
    }
    expect(st == KVBLOB_E_REJECTED || st == KVBLOB_E_CLOSED, rule,
           what + " was refused with " + kvblob_status_name(st) + ", not KVBLOB_E_REJECTED or KVBLOB_E_CLOSED");
    GuardedBuffer probe(64);
    auto r = c.reg(d, probe);
    for (const auto &k : keys) {
        auto res = c.run_one(d, OpKind::get, k, {make_span(r, 0, 64)});
        expect(res != KVBLOB_ROW_READY, "R-ADM-9",
               what + " was refused, and a get of its key " + k +
                   " then answered READY; R-ADM-9 wants the key to answer as a key never named does");
    }
    // The probe's memory is unmapped on return: its registration must end
    // first, or a later mapping at the same address would be registered
    // over a live registration (a store may refuse overlap).
    expect(c.unreg(d, r) == KVBLOB_OK, "R-REG-1", "unregister of an idle region was refused");
}

// Every operation kind the driver offers.
std::vector<OpKind> kinds_of(const Driver &d)
{
    std::vector<OpKind> kinds{OpKind::put, OpKind::get};
    if (d.has(KVBLOB_CAP_PROBE)) kinds.push_back(OpKind::probe);
    if (d.has(KVBLOB_CAP_REMOVE)) kinds.push_back(OpKind::remove);
    return kinds;
}

// A one-row batch of kind on key (a span for put and get).
Batch one_row(OpKind kind, const std::string &key, kvblob_region_t *r, uint64_t length)
{
    Batch b;
    if (kind == OpKind::put || kind == OpKind::get) b.row(key, {make_span(r, 0, length)});
    else b.row(key);
    return b;
}

Check refusal(std::string id, std::string rule, std::string description,
              std::function<void(Context &, Driver &, GuardedBuffer &, kvblob_region_t *)> body)
{
    return {std::move(id), {rule, "R-ADM-9"}, Level::must, 0, {}, std::move(description),
            [body](Context &c) {
                auto d = c.open();
                GuardedBuffer buf(8192);
                auto r = c.reg(d, buf);
                body(c, d, buf, r);
            }};
}

void admission_no_rows(Context &c, Driver &d, GuardedBuffer &, kvblob_region_t *)
{
    Batch b;
    expect_refused(c, d, b, {}, "R-ADM-3", "an empty operation");
}

void admission_too_many_rows(Context &c, Driver &d, GuardedBuffer &, kvblob_region_t *r)
{
    const uint64_t limit = d.caps().max_rows_per_op;
    if (limit > 100000) throw NotSupported("max_rows_per_op is too large to exceed here");
    Batch b;
    std::vector<std::string> keys;
    for (uint64_t i = 0; i <= limit; ++i) {
        keys.push_back(c.key(std::to_string(i)));
        b.row(keys.back(), {make_span(r, 0, 8)});
    }
    keys.resize(std::min<size_t>(keys.size(), 8));
    expect_refused(c, d, b, keys, "R-ADM-3", "max_rows_per_op + 1 rows");
}

void admission_empty_key(Context &c, Driver &d, GuardedBuffer &, kvblob_region_t *r)
{
    Batch b;
    b.row(c.key("ok"), {make_span(r, 0, 8)}).row("", {make_span(r, 8, 8)});
    expect_refused(c, d, b, {c.key("ok")}, "R-ADM-4", "an empty key");
}

void admission_long_key(Context &c, Driver &d, GuardedBuffer &, kvblob_region_t *r)
{
    const uint64_t limit = d.caps().max_key_bytes;
    if (limit > (1u << 20)) throw NotSupported("max_key_bytes is too large to exceed here");
    Batch b;
    b.row(c.key("ok"), {make_span(r, 0, 8)}).row(std::string(limit + 1, 'k'), {make_span(r, 8, 8)});
    expect_refused(c, d, b, {c.key("ok")}, "R-ADM-4", "a key of max_key_bytes + 1");
}

void admission_duplicate_key(Context &c, Driver &d, GuardedBuffer &, kvblob_region_t *r)
{
    Batch b;
    b.row(c.key("dup"), {make_span(r, 0, 8)}).row(c.key("dup"), {make_span(r, 8, 8)});
    expect_refused(c, d, b, {c.key("dup")}, "R-ADM-4", "a duplicate key");
}

void admission_too_many_spans(Context &c, Driver &d, GuardedBuffer &, kvblob_region_t *r)
{
    const uint64_t limit = d.caps().max_spans_per_row;
    if (limit > 4096) throw NotSupported("max_spans_per_row is too large to exceed here");
    std::vector<kvblob_span_t> spans;
    for (uint64_t i = 0; i <= limit; ++i) spans.push_back(make_span(r, i % 8192, 1));
    Batch b;
    b.row(c.key("spans"), spans);
    expect_refused(c, d, b, {c.key("spans")}, "R-ADM-5", "max_spans_per_row + 1 spans");
}

void admission_object_too_large(Context &c, Driver &d, GuardedBuffer &, kvblob_region_t *)
{
    const uint64_t limit = d.caps().max_object_bytes;
    if (limit >= (1ull << 44)) throw NotSupported("max_object_bytes is too large to exceed here");
    ReservedSpace big(limit + 1);
    auto rb = c.reg(d, big.data(), limit + 1);
    Batch b;
    b.row(c.key("big"), {make_span(rb, 0, limit + 1)});
    expect_refused(c, d, b, {c.key("big")}, "R-ADM-5", "a row of max_object_bytes + 1");
    // The limit is the row's: spans each within it, over it together.
    if (d.caps().max_spans_per_row >= 2 && limit >= 2) {
        const uint64_t half = limit / 2 + 1;  // each span within the limit
        Batch two;
        two.row(c.key("big2"), {make_span(rb, 0, half), make_span(rb, half, limit + 1 - half)});
        expect_refused(c, d, two, {c.key("big2")}, "R-ADM-5",
                       "a row of two spans that together exceed max_object_bytes");
    }
}

void admission_span_outside(Context &c, Driver &d, GuardedBuffer &, kvblob_region_t *r)
{
    Batch b;
    b.row(c.key("out"), {make_span(r, 8000, 193)});
    expect_refused(c, d, b, {c.key("out")}, "R-ADM-6", "a span past the region's end");
    Batch wrap;
    wrap.row(c.key("wrap"), {make_span(r, UINT64_MAX - 10, 20)});
    expect_refused(c, d, wrap, {c.key("wrap")}, "R-ADM-6", "a span whose end wraps");
}

void admission_zero_length_span(Context &c, Driver &d, GuardedBuffer &, kvblob_region_t *r)
{
    Batch b;
    b.row(c.key("zero"), {make_span(r, 0, 0)});
    expect_refused(c, d, b, {c.key("zero")}, "R-ADM-6", "a zero-length span");
}

void admission_unregistered_region(Context &c, Driver &d, GuardedBuffer &, kvblob_region_t *)
{
    GuardedBuffer other(4096);
    auto gone = c.reg(d, other);
    expect(c.unreg(d, gone) == KVBLOB_OK, "R-REG-1",
           "unregister of an idle region was refused");
    Batch b;
    b.row(c.key("gone"), {make_span(gone, 0, 64)});
    expect_refused(c, d, b, {c.key("gone")}, "R-ADM-6", "a span in an unregistered region");
}

void admission_hint_gated(Context &c)
{
    auto d = c.open();
    if (d.has(KVBLOB_CAP_HINTS)) throw NotSupported("the driver declares hints");
    GuardedBuffer buf(64);
    auto r = c.reg(d, buf);
    Batch b;
    b.row(c.key("h"), {make_span(r, 0, 64)}).hint("placement=near");
    expect_refused(c, d, b, {c.key("h")}, "R-ADM-7", "a hint to a driver without hints");
    Batch empty;
    empty.row(c.key("h0"), {make_span(r, 0, 64)}).hint("");
    expect_refused(c, d, empty, {c.key("h0")}, "R-ADM-7", "an empty hint to a driver without hints");
    for (OpKind kind : kinds_of(d)) {
        if (kind == OpKind::put) continue;
        Batch other = one_row(kind, c.key("h"), r, 64);
        other.hint("placement=near");
        kvblob_status st = KVBLOB_OK;
        expect(c.submit(d, kind, other, &st) == nullptr, "R-ADM-7",
               std::string("a ") + to_string(kind) + " with a hint was admitted by a driver without hints");
    }
}

void admission_failures_are_rows(Context &c)
{
    auto d = c.open();
    GuardedBuffer src(3 * 1024), dst(3 * 1024);
    fill_pattern(src.data(), src.size(), 9);
    auto rs = c.reg(d, src), rd = c.reg(d, dst);
    auto rows = row_pairs(c, rs, rd, 3, 1024);
    c.run(d, OpKind::put, rows.put);
    c.stage(d, "stage_failing_read", c.key("1"), "R-ADM-1");
    auto res = c.run(d, OpKind::get, rows.get);
    expect(res[1].result == KVBLOB_ROW_FAULT, "R-ROW-4",
           std::string("the failing row is ") + kvblob_row_result_name(res[1].result));
    for (int i : {0, 2})
        expect(res[i].result == KVBLOB_ROW_READY &&
                   std::memcmp(src.data() + i * 1024, dst.data() + i * 1024, 1024) == 0,
               "R-ADM-1",
               "row " + std::to_string(i) + " is " + kvblob_row_result_name(res[i].result) +
                   " because another row of its operation failed");
}

void admission_device_refused(Context &c)
{
    auto d = c.open();
    if (d.has(KVBLOB_CAP_DEVICE_MEMORY)) throw NotSupported("the driver declares device_memory");
    GuardedBuffer buf(4096);
    kvblob_region_desc_t desc{sizeof desc, KVBLOB_MEMORY_DEVICE, buf.data(), buf.size(), 0, 0};
    kvblob_region_t *region = nullptr;
    char err[256];
    auto st = d.table().register_region(d.handle(), &desc, &region, err, sizeof err);
    expect(st != KVBLOB_OK && region == nullptr, "R-ADM-8",
           "a DEVICE region was registered by a driver without device_memory");
    expect(st == KVBLOB_E_REJECTED, "R-ADM-8",
           std::string("a DEVICE region was refused with ") + kvblob_status_name(st) +
               ", not KVBLOB_E_REJECTED");
}

void admission_draining(Context &c)
{
    auto d = c.open();
    GuardedBuffer buf(64);
    auto r = c.reg(d, buf);
    expect(d.table().drain(d.handle(), 5'000'000'000ull) == KVBLOB_OK, "R-DRN-1",
           "drain of an idle driver did not answer KVBLOB_OK");
    for (OpKind k : kinds_of(d)) {
        Batch b = one_row(k, c.key("late"), r, 64);
        kvblob_status st = KVBLOB_OK;
        expect(c.submit(d, k, b, &st) == nullptr, "R-ADM-2",
               std::string(to_string(k)) + " admitted after drain");
    }
}

void admission_during_drain(Context &c)
{
    auto d = c.open();
    GuardedBuffer buf(1024);
    auto r = c.reg(d, buf);
    auto k = c.key("held");
    expect(c.run_one(d, OpKind::put, k, {make_span(r, 0, 1024)}) == KVBLOB_ROW_READY, "R-ROW-1",
           "put not READY");
    c.stage(d, "stage_held_get", k, "R-ADM-2");
    Batch held;
    held.row(k, {make_span(r, 0, 1024)});
    auto op = c.admit(d, OpKind::get, held);
    const auto st = d.table().drain(d.handle(), 50'000'000ull);
    expect(st == KVBLOB_E_TIMEOUT, "R-DRN-1",
           std::string("drain with a get held inside the store answered ") + kvblob_status_name(st) +
               ", not KVBLOB_E_TIMEOUT");
    for (OpKind kind : kinds_of(d)) {
        Batch b = one_row(kind, c.key("late"), r, 1024);
        kvblob_status refused = KVBLOB_OK;
        expect(c.submit(d, kind, b, &refused) == nullptr, "R-ADM-2",
               std::string(to_string(kind)) + " admitted after a drain that timed out");
        expect(refused == KVBLOB_E_CLOSED, "R-ADM-2",
               std::string(to_string(kind)) + " after drain was refused with " +
                   kvblob_status_name(refused) + ", not KVBLOB_E_CLOSED");
    }
    c.stage(d, "release_staged", "R-ADM-2");
    expect(c.settle(d, op), "R-ACC-2", "the held get did not settle once released");
    expect(d.table().release(d.handle(), op) == KVBLOB_OK, "R-OPS-1", "release refused");
}

void admission_malformed_region(Context &c)
{
    auto d = c.open();
    GuardedBuffer buf(4096);
    struct Case {
        const char *what;
        kvblob_region_desc_t desc;
    };
    const Case cases[] = {
        {"a region of zero bytes", {sizeof(kvblob_region_desc_t), KVBLOB_MEMORY_HOST, buf.data(), 0, 0, 0}},
        {"a region at NULL", {sizeof(kvblob_region_desc_t), KVBLOB_MEMORY_HOST, nullptr, 4096, 0, 0}},
        {"a region of memory kind 0", {sizeof(kvblob_region_desc_t), 0, buf.data(), 4096, 0, 0}},
        {"a region of memory kind 77", {sizeof(kvblob_region_desc_t), 77, buf.data(), 4096, 0, 0}},
        {"a region that wraps the address space",
         {sizeof(kvblob_region_desc_t), KVBLOB_MEMORY_HOST, buf.data(), UINT64_MAX - 16, 0, 0}},
    };
    for (const auto &each : cases) {
        kvblob_region_t *region = nullptr;
        std::string why;
        const auto st = c.try_register(d, each.desc, &region, &why);
        expect(st != KVBLOB_OK && region == nullptr, "R-ADM-8",
               std::string(each.what) + " was registered");
        expect(st == KVBLOB_E_REJECTED, "R-ADM-8",
               std::string(each.what) + " was refused with " + kvblob_status_name(st) +
                   ", not KVBLOB_E_REJECTED");
    }
}

// Gets of key k held in flight (stage_held_get staged on k), count of
// them, the i-th into slot i of rows bytes each in region r: each fills its
// own slot, since gets sharing one destination would race with each other,
// not with the rule under test.
std::vector<kvblob_op_t *> held_gets(Context &c, Driver &d, const std::string &k, kvblob_region_t *r, uint64_t count,
                                     uint64_t row)
{
    std::vector<kvblob_op_t *> held;
    for (uint64_t i = 0; i < count; ++i) {
        Batch b;
        b.row(k, {make_span(r, i * row, row)});
        held.push_back(c.admit(d, OpKind::get, b));
    }
    return held;
}

// Lets the staged gets go (release_staged), and ends and releases each.
void end_held(Context &c, Driver &d, const std::vector<kvblob_op_t *> &held, const std::string &rule)
{
    c.stage(d, "release_staged", rule);
    for (auto *op : held) {
        expect(c.settle(d, op), "R-ACC-2", "a held get did not settle once released");
        expect(d.table().release(d.handle(), op) == KVBLOB_OK, "R-OPS-1", "release refused");
    }
}

void admission_ops_in_flight(Context &c)
{
    auto d = c.open();
    const uint64_t limit = d.caps().max_ops_in_flight;
    if (limit > 4096) throw NotSupported("max_ops_in_flight is too large to reach here");
    GuardedBuffer buf(1024), dst(1024);
    std::memset(dst.data(), 0x33, dst.size());
    auto r = c.reg(d, buf), rd = c.reg(d, dst);
    auto k = c.key("held");
    expect(c.run_one(d, OpKind::put, k, {make_span(r, 0, 1024)}) == KVBLOB_ROW_READY, "R-ROW-1",
           "put not READY");
    c.stage(d, "stage_held_get", k, "R-ADM-10");
    GuardedBuffer held_dst(1024 * limit);
    auto rh = c.reg(d, held_dst);
    const std::vector<kvblob_op_t *> held = held_gets(c, d, k, rh, limit, 1024);
    Batch over;
    over.row(k, {make_span(rd, 0, 1024)});
    kvblob_status st = KVBLOB_OK;
    auto *extra = c.submit(d, OpKind::get, over, &st);
    expect(extra == nullptr, "R-ADM-10",
           "operation " + std::to_string(limit + 1) + " was admitted with max_ops_in_flight " +
               std::to_string(limit) + " in flight");
    expect(st == KVBLOB_E_REJECTED, "R-ADM-10",
           std::string("an operation over max_ops_in_flight was refused with ") +
               kvblob_status_name(st) + ", not KVBLOB_E_REJECTED");
    end_held(c, d, held, "R-ADM-10");
    for (size_t i = 0; i < dst.size(); ++i)
        expect(dst.data()[i] == 0x33, "R-ADM-9", "the refused get wrote its destination");
    expect(c.run_one(d, OpKind::get, k, {make_span(rd, 0, 1024)}) == KVBLOB_ROW_READY, "R-ADM-10",
           "once the operations in flight ended, a get is not READY");
}

// admission.ops-in-flight-racing: the limit of admission.ops-in-flight
// under contention. With one operation short of the limit held in flight,
// four threads meet at a barrier and submit a get each at once: exactly one
// is admitted. A driver that checks the limit and counts an admission as
// two steps admits each submit that checks before another counts (a limit
// of 16 held 17 or more). The submits reach the driver's table directly:
// any lock of the battery's around them would space them out. Rounds go on
// for up to 100, as time allows (at least 3).
void admission_ops_in_flight_racing(Context &c)
{
    auto d = c.open();
    const uint64_t limit = d.caps().max_ops_in_flight;
    if (limit > 4096) throw NotSupported("max_ops_in_flight is too large to reach here");
    if (!d.table().get) throw NotSupported("get is not offered by this driver");
    constexpr int racers = 4;
    constexpr uint64_t row = 1024;
    GuardedBuffer buf(row);
    auto r = c.reg(d, buf);
    auto k = c.key("held");
    expect(c.run_one(d, OpKind::put, k, {make_span(r, 0, row)}) == KVBLOB_ROW_READY, "R-ROW-1", "put not READY");
    // A slot each (held_gets): the held gets first, then the racers'.
    GuardedBuffer held_dst(row * (limit - 1 + racers));
    auto rh = c.reg(d, held_dst);
    std::vector<Batch> racing(racers);
    for (int t = 0; t < racers; ++t) racing[t].row(k, {make_span(rh, (limit - 1 + t) * row, row)});
    std::vector<kvblob_op_t *> admitted(racers, nullptr);
    std::vector<kvblob_status> answers(racers, KVBLOB_OK);
    uint64_t most = 0, rounds_with_none = 0, not_rejected = 0, rounds = 0;
    const auto until = std::chrono::steady_clock::now() + c.op_timeout / 8;
    while (rounds < 100 && (rounds < 3 || std::chrono::steady_clock::now() < until)) {
        ++rounds;
        c.stage(d, "stage_held_get", k, "R-ADM-10");
        std::vector<kvblob_op_t *> held = held_gets(c, d, k, rh, limit - 1, row);
        std::barrier meet(racers);
        CheckThreads(racers, [&](int t) {
            const kvblob_batch_t &raw = racing[t].get();
            char err[512] = {0};
            meet.arrive_and_wait();
            answers[t] = d.table().get(d.handle(), &raw, &admitted[t], err, sizeof err);
        }).join();
        uint64_t count = 0;
        for (int t = 0; t < racers; ++t) {
            if (answers[t] == KVBLOB_OK && admitted[t]) {
                ++count;
                held.push_back(std::exchange(admitted[t], nullptr));
            } else if (answers[t] != KVBLOB_E_REJECTED) {
                ++not_rejected;
            }
        }
        most = std::max(most, count);
        if (count == 0) ++rounds_with_none;
        end_held(c, d, held, "R-ADM-10");
        if (most > 1 || rounds_with_none || not_rejected) break;
    }
    expect(most <= 1, "R-ADM-10",
           std::to_string(most) + " of " + std::to_string(racers) + " gets submitted at once were admitted with " +
               std::to_string(limit - 1) + " in flight and max_ops_in_flight " + std::to_string(limit) +
               " (in round " + std::to_string(rounds) + "): the limit is checked and counted apart");
    expect(rounds_with_none == 0, "R-ADM-10",
           "none of " + std::to_string(racers) + " gets submitted at once was admitted with " +
               std::to_string(limit - 1) + " in flight and max_ops_in_flight " + std::to_string(limit));
    expect(not_rejected == 0, "R-ADM-10",
           "a get submitted over max_ops_in_flight was refused with a status other than KVBLOB_E_REJECTED");
}

void admission_converse(Context &c)
{
    auto d = c.open();
    const auto &caps = d.caps();
    const uint64_t key_len = std::min<uint64_t>(caps.max_key_bytes, 4096);
    const uint64_t rows = std::min<uint64_t>(caps.max_rows_per_op, 2048);
    const uint64_t spans = std::min<uint64_t>(caps.max_spans_per_row, 16);
    GuardedBuffer buf(rows * spans * 16);
    auto r = c.reg(d, buf);
    Batch b;
    for (uint64_t i = 0; i < rows; ++i) {
        std::string k = c.key(std::to_string(i));
        if (i == 0 && k.size() < key_len) k += std::string(key_len - k.size(), 'x');
        std::vector<kvblob_span_t> s;
        for (uint64_t j = 0; j < spans; ++j) s.push_back(make_span(r, (i * spans + j) * 16, 16));
        b.row(k, s);
    }
    c.run(d, OpKind::put, b);  // admit() inside fails the check on refusal
}

}  // namespace

// The admission checks that run before the hints family's (battery.cpp), in
// run order.
void add_admission_checks(std::vector<Check> &out)
{
    const Check checks[] = {
        refusal("admission.no-rows", "R-ADM-3", "an operation with no rows is refused",
                admission_no_rows),
        refusal("admission.too-many-rows", "R-ADM-3", "more rows than max_rows_per_op are refused",
                admission_too_many_rows),
        refusal("admission.empty-key", "R-ADM-4", "a row with an empty key is refused",
                admission_empty_key),
        refusal("admission.long-key", "R-ADM-4", "a key over max_key_bytes is refused",
                admission_long_key),
        refusal("admission.duplicate-key", "R-ADM-4", "a key twice in one operation is refused",
                admission_duplicate_key),
        refusal("admission.too-many-spans", "R-ADM-5", "a row with more spans than declared is refused",
                admission_too_many_spans),
        refusal("admission.object-too-large", "R-ADM-5", "a row over max_object_bytes is refused",
                admission_object_too_large),
        refusal("admission.span-outside", "R-ADM-6", "a span past its region's end is refused",
                admission_span_outside),
        refusal("admission.zero-length-span", "R-ADM-6", "a span of zero length is refused",
                admission_zero_length_span),
        refusal("admission.unregistered-region", "R-ADM-6", "a span in an unregistered region is refused",
                admission_unregistered_region),
        {"admission.hint-gated", {"R-ADM-7"}, Level::must, 0, {},
         "a driver without hints refuses an operation that carries one",
         admission_hint_gated},
    };
    out.insert(out.end(), std::begin(checks), std::end(checks));
}

// The admission checks that run after the hints family's, in run order: two
// tables, so the run order stays as it always was.
void add_admission_checks_after_hints(std::vector<Check> &out)
{
    const Check checks[] = {
        {"admission.failures-are-rows", {"R-ADM-1"}, Level::must, 0, {"stage_failing_read", "release_staged"},
         "after admission, one row's failure is that row's result; the operation never fails whole",
         admission_failures_are_rows},
        {"admission.device-refused", {"R-ADM-8"}, Level::must, 0, {},
         "a driver without device_memory refuses to register a DEVICE region",
         admission_device_refused},
        {"admission.draining", {"R-ADM-2", "R-DRN-1"}, Level::must, 0, {},
         "after drain, put, get, probe and remove are refused",
         admission_draining},
        {"admission.during-drain", {"R-ADM-2"}, Level::must, 0, {"stage_held_get", "release_staged"},
         "a drain that timed out still stops admission: put, get, probe and remove are refused after it",
         admission_during_drain},
        {"admission.malformed-region", {"R-ADM-8", "R-ADM-6"}, Level::must, 0, {},
         "a region of zero size, at NULL, of an unknown memory kind or wrapping the address space is "
         "refused with KVBLOB_E_REJECTED",
         admission_malformed_region},
        {"admission.ops-in-flight", {"R-ADM-10", "R-ADM-9"}, Level::must, 0,
         {"stage_held_get", "release_staged"},
         "max_ops_in_flight operations are admitted; one more is refused with KVBLOB_E_REJECTED and no "
         "effect; once they end, work is admitted again",
         admission_ops_in_flight},
        {"admission.ops-in-flight-racing", {"R-ADM-10"}, Level::must, 0,
         {"stage_held_get", "release_staged"},
         "with one operation short of max_ops_in_flight in flight, of four submitted at once exactly one is "
         "admitted",
         admission_ops_in_flight_racing},
        {"admission.converse", {"R-ADM-10"}, Level::must, 0, {},
         "operations at every declared limit are admitted",
         admission_converse},
    };
    out.insert(out.end(), std::begin(checks), std::end(checks));
}

}  // namespace kvblob::conformance
