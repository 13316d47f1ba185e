// R-ADM-9 for refusals by a declared limit: an operation refused because it
// exceeds max_rows_per_op, max_spans_per_row, max_object_bytes or
// max_ops_in_flight leaves the store and every span as they were. The rows
// before the one over a limit are valid, so a driver that acts on each row
// as it checks it, and counts rows, spans, bytes or operations last, has
// already stored, written or removed something when it refuses.
//
// The battery calls the driver's table itself (Context::submit): the host's
// guarded API would refuse these batches before the driver saw them.
#include <cstring>

#include "common.hpp"
#include "reserved_space.hpp"

namespace kvblob::conformance {

namespace {

constexpr uint64_t object = 512;  // the size of the witness objects
constexpr uint64_t filler = 8;    // the span of each row that only fills an operation
// How far each limit can be exceeded here (as the admission.* checks do).
constexpr uint64_t rows_reach = 100000;
constexpr uint64_t spans_reach = 4096;
constexpr uint64_t object_reach = 1ull << 44;
constexpr uint64_t in_flight_reach = 4096;

// A buffer the refused calls may name, and its bytes before them.
struct Watched {
    const GuardedBuffer *buffer;
    std::vector<uint8_t> before;
    std::string role;
};

// The store and the memory before the refusals, and the judge of each.
// Stored: a key whose object every refusal must leave whole. Fresh: a key
// the refused puts name first and nobody stores, so it must answer as a key
// never named does.
class Witness {
public:
    Witness(Context &c, Driver &d)
        : stored(c.key("stored")), fresh(c.key("fresh")), c_(c), d_(d), src_(2 * object), dst_(object),
          check_(object)
    {
        fill_pattern(src_.data(), object, 51);
        fill_pattern(src_.data() + object, object, 52);
        std::memset(dst_.data(), 0x5A, dst_.size());
        src = c.reg(d, src_);
        dst = c.reg(d, dst_);
        check_region_ = c.reg(d, check_);
        const auto put = c.run_one(d, OpKind::put, stored, {make_span(src, 0, object)});
        expect(put == KVBLOB_ROW_READY, "R-ROW-1",
               std::string("a put of one row of ") + std::to_string(object) + " bytes answered " +
                   kvblob_row_result_name(put));
        original_ = std::vector<uint8_t>(src_.data(), src_.data() + object);
        never_ = c.run_one(d, OpKind::get, c.key("never"), {make_span(check_region_, 0, object)});
        if (never_ == KVBLOB_ROW_READY)
            throw Blocked("data.miss.untouched",
                          "a get of a key never put answered READY, so this check cannot read a get that is not "
                          "READY as proof that a refused call stored nothing");
        never_probed_ = d.has(KVBLOB_CAP_PROBE) ? c.run_one(d, OpKind::probe, c.key("never")) : KVBLOB_ROW_PENDING;
        watch(src_, "a put's source");
        watch(dst_, "a get's destination");
    }

    kvblob_region_t *src = nullptr, *dst = nullptr;
    const std::string stored, fresh;

    // A buffer whose bytes the refused calls must leave as they are now,
    // until unwatch (before it goes).
    void watch(const GuardedBuffer &b, const std::string &role) { watched_.push_back({&b, snapshot(b), role}); }
    void unwatch(const GuardedBuffer &b)
    {
        std::erase_if(watched_, [&](const Watched &w) { return w.buffer == &b; });
    }

    // Submits batch, which exceeds a limit the driver declares (what says
    // how), and requires a refusal. An admission is judged by the check of
    // that limit (by): this one cannot see what a refusal left.
    void submit_refused(OpKind kind, Batch &batch, const std::string &what, const std::string &by)
    {
        kvblob_status st = KVBLOB_OK;
        std::string why;
        kvblob_op_t *op = c_.submit(d_, kind, batch, &st, &why);
        if (!op) return;
        // The driver may be using the spans: its access ends first (bounded).
        if (c_.settle(d_, op)) d_.table().release(d_.handle(), op);
        throw Blocked(by, what + " was admitted, so this check cannot see what its refusal leaves behind");
    }

    // The store and every watched span as they were before what, which was
    // refused; named: other keys the refused call named, none of them stored.
    void judge(const std::string &what, const std::vector<std::string> &named = {})
    {
        for (const auto &w : watched_) {
            const uint8_t *now = w.buffer->data();
            for (size_t i = 0; i < w.before.size(); ++i)
                expect(now[i] == w.before[i], "R-ADM-9",
                       what + " was refused, and wrote " + w.role + " (byte " + std::to_string(i) + " of " +
                           std::to_string(w.before.size()) + ")");
        }
        std::memset(check_.data(), 0, object);
        auto got = c_.run_one(d_, OpKind::get, stored, {make_span(check_region_, 0, object)});
        expect(got == KVBLOB_ROW_READY, "R-ADM-9",
               what + " was refused, and a get of a key stored before it then answered " +
                   kvblob_row_result_name(got) + ": the refused call removed or spoiled it");
        expect(std::memcmp(check_.data(), original_.data(), object) == 0, "R-ADM-9",
               what + " was refused, and a key stored before it then held other bytes");
        std::vector<std::string> keys{fresh};
        keys.insert(keys.end(), named.begin(), named.end());
        for (const auto &k : keys) {
            got = c_.run_one(d_, OpKind::get, k, {make_span(check_region_, 0, object)});
            expect(got == never_, "R-ADM-9",
                   what + " was refused, and a key it named then answered a get " + kvblob_row_result_name(got) +
                       ", where a key never named answers " + kvblob_row_result_name(never_));
        }
        if (d_.has(KVBLOB_CAP_PROBE)) {
            got = c_.run_one(d_, OpKind::probe, fresh);
            expect(got == never_probed_, "R-ADM-9",
                   what + " was refused, and a key it named then answered a probe " + kvblob_row_result_name(got) +
                       ", where a key never named answers " + kvblob_row_result_name(never_probed_));
        }
    }

private:
    Context &c_;
    Driver &d_;
    GuardedBuffer src_, dst_, check_;
    kvblob_region_t *check_region_ = nullptr;
    std::vector<uint8_t> original_;
    kvblob_row_result never_ = KVBLOB_ROW_PENDING, never_probed_ = KVBLOB_ROW_PENDING;
    std::vector<Watched> watched_;
};

// The rows every refused put starts with: the fresh key, and the stored key
// with other bytes (which must not replace its object).
Batch &put_head(Batch &b, Witness &w)
{
    return b.row(w.fresh, {make_span(w.src, object, object)}).row(w.stored, {make_span(w.src, object, object)});
}

// max_rows_per_op + 1 rows of each kind, the witness keys first.
void over_rows(Context &c, Driver &d, Witness &w, uint64_t limit)
{
    const uint64_t rows = limit + 1;
    const auto filler_key = [&](uint64_t i) { return c.key("row-" + std::to_string(i)); };
    const std::vector<std::string> named{filler_key(2), filler_key(rows - 1)};
    const std::string what_rows = std::to_string(rows) + " rows (max_rows_per_op is " + std::to_string(limit) + ")";
    {
        Batch b;
        put_head(b, w);
        for (uint64_t i = 2; i < rows; ++i) b.row(filler_key(i), {make_span(w.src, object, filler)});
        w.submit_refused(OpKind::put, b, "a put of " + what_rows, "admission.too-many-rows");
        w.judge("a put of " + what_rows, named);
    }
    {
        GuardedBuffer out(rows * filler);
        std::memset(out.data(), 0x5B, out.size());
        auto ro = c.reg(d, out);
        w.watch(out, "the destination of a get's later rows");
        Batch b;
        b.row(w.stored, {make_span(w.dst, 0, object)});
        for (uint64_t i = 1; i < rows; ++i) b.row(filler_key(i), {make_span(ro, i * filler, filler)});
        w.submit_refused(OpKind::get, b, "a get of " + what_rows, "admission.too-many-rows");
        w.judge("a get of " + what_rows, named);
        w.unwatch(out);
        expect(c.unreg(d, ro) == KVBLOB_OK, "R-REG-1", "unregister of an idle region was refused");
    }
    for (OpKind kind : {OpKind::probe, OpKind::remove}) {
        if (!d.has(kind == OpKind::probe ? KVBLOB_CAP_PROBE : KVBLOB_CAP_REMOVE)) continue;
        Batch b;
        b.row(w.stored).row(w.fresh);
        for (uint64_t i = 2; i < rows; ++i) b.row(filler_key(i));
        const std::string what = std::string("a ") + to_string(kind) + " of " + what_rows;
        w.submit_refused(kind, b, what, "admission.too-many-rows");
        w.judge(what, named);
    }
}

// A row of max_spans_per_row + 1 spans after valid rows, in a put and a get.
void over_spans(Context &c, Driver &d, Witness &w, uint64_t limit)
{
    const uint64_t spans = limit + 1;
    const auto key = c.key("spans");
    const std::string what_row = "valid rows and then one of " + std::to_string(spans) +
                                 " spans (max_spans_per_row is " + std::to_string(limit) + ")";
    {
        std::vector<kvblob_span_t> many;
        for (uint64_t s = 0; s < spans; ++s) many.push_back(make_span(w.src, s % (2 * object), 1));
        Batch b;
        put_head(b, w).row(key, many);
        w.submit_refused(OpKind::put, b, "a put of " + what_row, "admission.too-many-spans");
        w.judge("a put of " + what_row, {key});
    }
    GuardedBuffer out(spans);
    std::memset(out.data(), 0x5B, out.size());
    auto ro = c.reg(d, out);
    w.watch(out, "the destination of the row over the limit");
    std::vector<kvblob_span_t> many;
    for (uint64_t s = 0; s < spans; ++s) many.push_back(make_span(ro, s, 1));
    Batch b;
    b.row(w.stored, {make_span(w.dst, 0, object)}).row(key, many);
    w.submit_refused(OpKind::get, b, "a get of " + what_row, "admission.too-many-spans");
    w.judge("a get of " + what_row, {key});
    w.unwatch(out);
    expect(c.unreg(d, ro) == KVBLOB_OK, "R-REG-1", "unregister of an idle region was refused");
}

// A row of max_object_bytes + 1 after valid rows, in a put and a get: its
// span lies in reserved address space no refusing driver touches.
void over_object(Context &c, Driver &d, Witness &w, uint64_t limit)
{
    ReservedSpace big(limit + 1);
    auto rb = c.reg(d, big.data(), big.size());
    const auto key = c.key("big");
    const std::string what_row = "valid rows and then one of " + std::to_string(limit + 1) +
                                 " bytes (max_object_bytes is " + std::to_string(limit) + ")";
    {
        Batch b;
        put_head(b, w).row(key, {make_span(rb, 0, limit + 1)});
        w.submit_refused(OpKind::put, b, "a put of " + what_row, "admission.object-too-large");
        w.judge("a put of " + what_row, {key});
    }
    {
        Batch b;
        b.row(w.stored, {make_span(w.dst, 0, object)}).row(key, {make_span(rb, 0, limit + 1)});
        w.submit_refused(OpKind::get, b, "a get of " + what_row, "admission.object-too-large");
        w.judge("a get of " + what_row, {key});
    }
    expect(c.unreg(d, rb) == KVBLOB_OK, "R-REG-1", "unregister of an idle region was refused");
}

void refusal_limits(Context &c)
{
    auto d = c.open();
    const auto &caps = d.caps();
    // Which limits this runner can exceed; the rest are said in a note.
    std::vector<std::string> beyond_reach;
    const bool rows = caps.max_rows_per_op <= rows_reach;
    const bool spans = caps.max_spans_per_row <= spans_reach;
    const bool bytes = caps.max_object_bytes < object_reach;
    if (!rows) beyond_reach.push_back("max_rows_per_op");
    if (!spans) beyond_reach.push_back("max_spans_per_row");
    if (!bytes) beyond_reach.push_back("max_object_bytes");
    if (!rows && !spans && !bytes)
        throw NotSupported("max_rows_per_op, max_spans_per_row and max_object_bytes are all too large to exceed here");
    for (const auto &limit : beyond_reach) c.note(limit + " too large to exceed here: not tried");
    Witness w(c, d);
    if (rows) over_rows(c, d, w, caps.max_rows_per_op);
    if (spans) over_spans(c, d, w, caps.max_spans_per_row);
    if (bytes) over_object(c, d, w, caps.max_object_bytes);
}

// One operation over max_ops_in_flight of each kind, each while the limit's
// worth of gets are held inside the store; judged once they let go.
void refusal_ops_in_flight(Context &c)
{
    auto d = c.open();
    const uint64_t limit = d.caps().max_ops_in_flight;
    if (limit > in_flight_reach) throw NotSupported("max_ops_in_flight is too large to reach here");
    Witness w(c, d);
    constexpr uint64_t held_size = 64;
    const auto held_key = c.key("held");
    expect(c.run_one(d, OpKind::put, held_key, {make_span(w.src, 0, held_size)}) == KVBLOB_ROW_READY, "R-ROW-1",
           "a put of one row of 64 bytes was not READY");
    // Each held get fills its own slot: gets sharing one destination would
    // race with each other, not with the rule under test.
    GuardedBuffer held_dst(held_size * limit);
    auto rh = c.reg(d, held_dst);
    const std::string what_over =
        " submitted with max_ops_in_flight (" + std::to_string(limit) + ") operations in flight";
    std::vector<OpKind> kinds{OpKind::put, OpKind::get};
    if (d.has(KVBLOB_CAP_PROBE)) kinds.push_back(OpKind::probe);
    if (d.has(KVBLOB_CAP_REMOVE)) kinds.push_back(OpKind::remove);
    for (OpKind kind : kinds) {
        c.stage(d, "stage_held_get", held_key, "R-ADM-9");
        std::vector<kvblob_op_t *> held;
        for (uint64_t i = 0; i < limit; ++i) {
            Batch b;
            b.row(held_key, {make_span(rh, i * held_size, held_size)});
            held.push_back(c.admit(d, OpKind::get, b));
        }
        Batch over;
        if (kind == OpKind::put) put_head(over, w);
        else if (kind == OpKind::get) over.row(w.stored, {make_span(w.dst, 0, object)});
        else over.row(w.stored).row(w.fresh);
        const std::string what = std::string("a ") + to_string(kind) + what_over;
        // Whatever the refusal's verdict, the held gets end before the
        // check does: their destination is the check's memory.
        std::exception_ptr refused_badly;
        try {
            w.submit_refused(kind, over, what, "admission.ops-in-flight");
        } catch (...) {
            refused_badly = std::current_exception();
        }
        c.stage(d, "release_staged", "R-ADM-9");
        for (auto *op : held) {
            expect(c.settle(d, op), "R-ACC-2", "a held get did not settle once released");
            expect(d.table().release(d.handle(), op) == KVBLOB_OK, "R-OPS-1", "release refused for a settled get");
        }
        if (refused_badly) std::rethrow_exception(refused_badly);
        w.judge(what);
    }
}

}  // namespace

// The checks of this file, in run order.
void add_refusal_limit_checks(std::vector<Check> &out)
{
    const Check checks[] = {
        {"refusal.limits", {"R-ADM-9"}, Level::must, 0, {},
         "put, get, probe and remove refused for more rows than max_rows_per_op, and put and get refused for a "
         "row over max_spans_per_row or max_object_bytes after valid rows, leave the store and every span as "
         "they were",
         refusal_limits},
        {"refusal.ops-in-flight", {"R-ADM-9"}, Level::must, 0, {"stage_held_get", "release_staged"},
         "put, get, probe and remove refused with max_ops_in_flight operations in flight leave the store and "
         "every span as they were",
         refusal_ops_in_flight},
    };
    out.insert(out.end(), std::begin(checks), std::end(checks));
}

}  // namespace kvblob::conformance
