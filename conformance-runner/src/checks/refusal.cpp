// R-ADM-9 for every operation kind: a refused call leaves the store and
// every span exactly as they were, even when the refusal comes at a row
// after others the driver already found valid.
#include <cstring>

#include "common.hpp"

namespace kvblob::conformance {

namespace {

bool unchanged(const GuardedBuffer &b, const std::vector<uint8_t> &before)
{
    return std::memcmp(b.data(), before.data(), before.size()) == 0;
}

// One refused call: a batch whose first row is valid and whose last is not.
struct Refusal {
    OpKind kind;
    std::string what;
    Batch batch;
};

void refusal_no_side_effects(Context &c)
{
    auto d = c.open();
    constexpr uint64_t n = 1024;
    GuardedBuffer src(4 * n), dst(4 * n), check(n);
    fill_pattern(src.data(), src.size(), 21);
    std::memset(dst.data(), 0x5A, dst.size());
    auto rs = c.reg(d, src), rd = c.reg(d, dst), rc = c.reg(d, check);
    const auto stored = c.key("stored"), fresh = c.key("fresh");
    expect(c.run_one(d, OpKind::put, stored, {make_span(rs, 0, n)}) == KVBLOB_ROW_READY, "R-ROW-1",
           "put not READY");
    const auto src0 = snapshot(src), dst0 = snapshot(dst);

    std::vector<Refusal> refusals;
    auto add = [&](OpKind kind, std::string what, auto &&build) {
        refusals.push_back({kind, std::move(what), {}});
        build(refusals.back().batch);
    };
    const auto span_out = make_span(rd, 4 * n - 8, 64);  // past the region's end
    // put: a new key (and the stored one with other bytes) before the refused row.
    add(OpKind::put, "a put refused at a span outside its region", [&](Batch &b) {
        b.row(fresh, {make_span(rs, n, n)}).row(stored, {make_span(rs, 2 * n, n)})
            .row(c.key("p3"), {span_out});
    });
    add(OpKind::put, "a put refused at a repeated key", [&](Batch &b) {
        b.row(fresh, {make_span(rs, n, n)}).row(fresh, {make_span(rs, 2 * n, n)});
    });
    // get: the stored key into dst before the refused row.
    add(OpKind::get, "a get refused at a span outside its region", [&](Batch &b) {
        b.row(stored, {make_span(rd, 0, n)}).row(c.key("g2"), {span_out});
    });
    add(OpKind::get, "a get refused at an empty key", [&](Batch &b) {
        b.row(stored, {make_span(rd, n, n)}).row("", {make_span(rd, 2 * n, n)});
    });
    add(OpKind::get, "a get refused at a repeated key", [&](Batch &b) {
        b.row(stored, {make_span(rd, 0, n)}).row(stored, {make_span(rd, 2 * n, n)});
    });
    if (d.has(KVBLOB_CAP_PROBE)) {
        add(OpKind::probe, "a probe refused at an empty key",
            [&](Batch &b) { b.row(stored).row(fresh).row(""); });
        add(OpKind::probe, "a probe refused at a repeated key",
            [&](Batch &b) { b.row(stored).row(stored); });
    }
    if (d.has(KVBLOB_CAP_REMOVE)) {
        add(OpKind::remove, "a remove refused at an empty key",
            [&](Batch &b) { b.row(stored).row(""); });
        add(OpKind::remove, "a remove refused at a repeated key",
            [&](Batch &b) { b.row(stored).row(stored); });
    }

    // A key no call ever named answers as every refused key must:
    // MISS, or whatever this store says of absence (R-ROW-4), never
    // NOT_READY or FAULT from a leftover of the refused call.
    const auto never = c.run_one(d, OpKind::get, c.key("never"), {make_span(rc, 0, n)});
    const auto never_probed = d.has(KVBLOB_CAP_PROBE) ? c.run_one(d, OpKind::probe, c.key("never"))
                                                      : KVBLOB_ROW_PENDING;
    // A get of a key never named that answers READY makes the
    // comparison below prove nothing.
    if (never == KVBLOB_ROW_READY)
        throw Blocked("data.miss.untouched",
                      "a get of a key never put answered READY, so this check cannot read a get "
                      "that is not READY as proof that a refused call stored nothing");
    for (auto &r : refusals) {
        kvblob_status st = KVBLOB_OK;
        kvblob_op_t *op = c.submit(d, r.kind, r.batch, &st);
        expect(op == nullptr && st != KVBLOB_OK, "R-ADM-9",
               r.what + " was admitted (" + kvblob_status_name(st) + ")");
        expect(unchanged(src, src0), "R-ADM-9", r.what + " changed the bytes of a put's source");
        expect(unchanged(dst, dst0), "R-ADM-9", r.what + " wrote a get's destination");
        // The store as it was: the stored object whole, the fresh key absent.
        auto got = c.run_one(d, OpKind::get, stored, {make_span(rc, 0, n)});
        expect(got == KVBLOB_ROW_READY && std::memcmp(check.data(), src0.data(), n) == 0, "R-ADM-9",
               r.what + " changed or removed a stored object (a get of it is " +
                   kvblob_row_result_name(got) + ")");
        got = c.run_one(d, OpKind::get, fresh, {make_span(rc, 0, n)});
        expect(got != KVBLOB_ROW_READY, "R-ADM-9",
               r.what + " stored a key it named: a get of it answered READY; R-ADM-9 wants " +
                   kvblob_row_result_name(never) + ", as a key never named answers");
        expect(got == never, "R-ADM-9",
               r.what + " left a key it named answering a get " + kvblob_row_result_name(got) +
                   ", where a key never named answers " + kvblob_row_result_name(never));
        if (d.has(KVBLOB_CAP_PROBE)) {
            got = c.run_one(d, OpKind::probe, fresh);
            expect(got == never_probed, "R-ADM-9",
                   r.what + " left a key it named answering a probe " +
                       kvblob_row_result_name(got) + ", where a key never named answers " +
                       kvblob_row_result_name(never_probed));
        }
    }
}

}  // namespace

// The checks of this file, in run order.
void add_refusal_checks(std::vector<Check> &out)
{
    const Check checks[] = {
        {"refusal.no-side-effects", {"R-ADM-9"}, Level::must, 0, {},
         "put, get, probe and remove refused at a later row leave the store and every span as they were",
         refusal_no_side_effects},
    };
    out.insert(out.end(), std::begin(checks), std::end(checks));
}

}  // namespace kvblob::conformance
