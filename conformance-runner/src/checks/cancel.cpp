// R-CAN-1, deterministically: a get held inside the store (stage_held_get)
// has not started (docs/contract.md, "Scenario hooks"), so a cancel of it
// must make its rows CANCELLED; a cancel after final changes nothing; and
// no row nobody cancelled ends CANCELLED, a drain's included.
#include <cstring>

#include "common.hpp"

namespace kvblob::conformance {

namespace {

kvblob_row_result result_of(Context &c, Driver &d, kvblob_op_t *op) { return c.results(d, op, 1).at(0).result; }

// Whether the plugin describes the option that opens its controlled mode:
// mode, a choice with the word controlled (docs/contract.md, "Scenario
// hooks and stages").
bool has_controlled_mode(const Context &c)
{
    for (const auto &o : c.plugin_options()) {
        if (!o.name || std::string(o.name) != "mode" || o.type != KVBLOB_OPTION_CHOICE || !o.choices) continue;
        const std::string choices = std::string("|") + o.choices + "|";
        if (choices.find("|controlled|") != std::string::npos) return true;
    }
    return false;
}

const char *stage_name(kvblob_stage s)
{
    switch (s) {
    case KVBLOB_STAGE_START: return "START";
    case KVBLOB_STAGE_TRANSFER_END: return "TRANSFER_END";
    case KVBLOB_STAGE_COMMIT: return "COMMIT";
    default: return "ACCESS_END";
    }
}

// R-CAN-1 where the cancel lands is chosen, not raced: each operation is
// cancelled at a stage the check let it reach, then let through the rest.
void cancel_started(Context &c)
{
    if (!has_controlled_mode(c))
        throw NotSupported("the driver describes no option mode with the choice controlled, which opens the "
                           "controlled mode advance works in");
    auto d = c.open_with({{"mode", "controlled"}}, {});
    auto pass = [&](kvblob_op_t *op, kvblob_stage stage) {
        const kvblob_status st = c.advance(d, op, stage);
        expect(st == KVBLOB_OK, "R-CAN-1",
               std::string("advance to ") + stage_name(stage) + " answered " + kvblob_status_name(st) +
                   " in the controlled mode");
    };
    // Cancelled once stage was passed; then through to its end and released.
    auto cancelled_at = [&](OpKind kind, Batch &b, kvblob_stage stage) {
        kvblob_op_t *op = c.admit(d, kind, b);
        if (stage) pass(op, stage);
        expect(d.table().cancel(d.handle(), op) == KVBLOB_OK, "R-CAN-1", "cancel answered an error");
        if (stage)
            for (kvblob_stage later = stage + 1; later <= KVBLOB_STAGE_ACCESS_END; ++later) pass(op, later);
        expect(c.settle(d, op), "R-CAN-1",
               std::string("a ") + to_string(kind) + " cancelled " +
                   (stage ? std::string("after ") + stage_name(stage) : std::string("before it started")) +
                   " was not final with access ended");
        const auto res = result_of(c, d, op);
        expect(d.table().release(d.handle(), op) == KVBLOB_OK, "R-OPS-1", "release refused for a settled operation");
        return res;
    };
    constexpr uint64_t n = 4096;
    GuardedBuffer src(n), dst(n);
    fill_pattern(src.data(), src.size(), 44);
    auto rs = c.reg(d, src), rd = c.reg(d, dst);
    const auto k = c.key("started");
    Batch put, get;
    put.row(k, {make_span(rs, 0, n)});
    get.row(k, {make_span(rd, 0, n)});
    auto untouched = [&] {
        for (size_t i = 0; i < dst.size(); ++i)
            if (dst.data()[i] != 0x6B) return false;
        return true;
    };
    // A put whose row started: it finishes, stored.
    auto res = cancelled_at(OpKind::put, put, KVBLOB_STAGE_START);
    expect(res == KVBLOB_ROW_READY, "R-CAN-1",
           std::string("a put cancelled after its row started (advance START) is ") + kvblob_row_result_name(res) +
               ": a started row finishes with its real result");
    // A get cancelled before it started: CANCELLED, its destination untouched.
    std::memset(dst.data(), 0x6B, dst.size());
    res = cancelled_at(OpKind::get, get, 0);
    expect(res == KVBLOB_ROW_CANCELLED && untouched(), "R-CAN-1",
           std::string("a get cancelled before it started is ") + kvblob_row_result_name(res) +
               (untouched() ? "" : ", and its destination was written"));
    // Gets whose row started, and whose bytes moved: READY, whole.
    for (kvblob_stage stage : {KVBLOB_STAGE_START, KVBLOB_STAGE_TRANSFER_END}) {
        std::memset(dst.data(), 0x6B, dst.size());
        res = cancelled_at(OpKind::get, get, stage);
        expect(res == KVBLOB_ROW_READY, "R-CAN-1",
               std::string("a get cancelled after ") + stage_name(stage) + " is " + kvblob_row_result_name(res) +
                   (untouched() ? "" : " after writing its destination") +
                   ": a started row finishes with its real result");
        expect(std::memcmp(dst.data(), src.data(), n) == 0, "R-ROW-6",
               std::string("a get cancelled after ") + stage_name(stage) + " is READY with other bytes");
    }
}

void cancel_unstarted(Context &c)
{
    auto d = c.open();
    GuardedBuffer src(2048), dst(2048);
    fill_pattern(src.data(), src.size(), 41);
    std::memset(dst.data(), 0x6B, dst.size());
    auto rs = c.reg(d, src), rd = c.reg(d, dst);
    auto k = c.key("held");
    expect(c.run_one(d, OpKind::put, k, {make_span(rs, 0, 2048)}) == KVBLOB_ROW_READY, "R-ROW-1",
           "put not READY");
    c.stage(d, "stage_held_get", k, "R-CAN-1");
    Batch b;
    b.row(k, {make_span(rd, 0, 2048)});
    auto op = c.admit(d, OpKind::get, b);
    expect(d.table().cancel(d.handle(), op) == KVBLOB_OK, "R-CAN-1", "cancel answered an error");
    expect(c.settle(d, op), "R-CAN-1",
           "a cancelled get that never started was not final with access ended within " +
               std::to_string(c.op_timeout.count()) + " ms (while the store still held it)");
    auto untouched = [&] {
        for (size_t i = 0; i < dst.size(); ++i)
            if (dst.data()[i] != 0x6B) return false;
        return true;
    };
    auto res = result_of(c, d, op);
    expect(res == KVBLOB_ROW_CANCELLED, "R-CAN-1",
           std::string("a get cancelled before it started is ") + kvblob_row_result_name(res));
    expect(untouched(), "R-CAN-1", "a CANCELLED get wrote its destination");
    c.stage(d, "release_staged", "R-CAN-1");
    // What the store does once it lets go must not reach a cancelled operation.
    expect(c.run_one(d, OpKind::get, k, {make_span(rs, 0, 2048)}) == KVBLOB_ROW_READY, "R-ROW-1",
           "a get after the release is not READY");
    res = result_of(c, d, op);
    expect(res == KVBLOB_ROW_CANCELLED && untouched(), "R-CAN-1",
           std::string("after the store let go, the cancelled get is ") +
               kvblob_row_result_name(res) + (untouched() ? "" : " and its destination was written"));
    expect(d.table().release(d.handle(), op) == KVBLOB_OK, "R-OPS-1",
           "release refused for a cancelled operation");
}

void cancel_after_final(Context &c)
{
    auto d = c.open();
    GuardedBuffer src(8 * 512), dst(8 * 512);
    fill_pattern(src.data(), src.size(), 42);
    auto rs = c.reg(d, src), rd = c.reg(d, dst);
    auto rows = row_pairs(c, rs, rd, 8, 512);
    for (OpKind kind : {OpKind::put, OpKind::get}) {
        Batch &b = kind == OpKind::put ? rows.put : rows.get;
        auto op = c.admit(d, kind, b);
        expect(c.settle(d, op), "R-ACC-2", std::string(to_string(kind)) + " did not settle");
        const auto before = c.results(d, op, 8);
        expect(d.table().cancel(d.handle(), op) == KVBLOB_OK, "R-CAN-1",
               "cancel of a final operation answered an error");
        const auto after = c.results(d, op, 8);
        for (size_t i = 0; i < 8; ++i)
            expect(before[i].result == after[i].result, "R-CAN-1",
                   std::string("a cancel after final turned ") + to_string(kind) + " row " +
                       std::to_string(i) + " from " + kvblob_row_result_name(before[i].result) +
                       " to " + kvblob_row_result_name(after[i].result));
        expect(d.table().release(d.handle(), op) == KVBLOB_OK, "R-OPS-1", "release refused");
    }
    std::memset(dst.data(), 0, dst.size());
    for (const auto &r : c.run(d, OpKind::get, rows.get))
        expect(r.result == KVBLOB_ROW_READY, "R-CAN-1",
               "an object put, then cancelled after final, is no longer stored");
    expect(std::memcmp(src.data(), dst.data(), src.size()) == 0, "R-CAN-1",
           "an object cancelled after final holds other bytes");
}

void cancel_only_when_asked(Context &c)
{
    auto d = c.open();
    GuardedBuffer src(2048), dst(2048);
    fill_pattern(src.data(), src.size(), 43);
    std::memset(dst.data(), 0, dst.size());
    auto rs = c.reg(d, src), rd = c.reg(d, dst);
    auto ka = c.key("a"), kb = c.key("b");
    Batch put;
    put.row(ka, {make_span(rs, 0, 1024)}).row(kb, {make_span(rs, 1024, 1024)});
    for (const auto &r : c.run(d, OpKind::put, put))
        expect(r.result == KVBLOB_ROW_READY, "R-ROW-1", "put not READY");
    c.stage(d, "stage_held_get", ka, "R-CAN-1");
    c.stage(d, "stage_held_get", kb, "R-CAN-1");
    Batch ga, gb;
    ga.row(ka, {make_span(rd, 0, 1024)});
    gb.row(kb, {make_span(rd, 1024, 1024)});
    auto a = c.admit(d, OpKind::get, ga), b = c.admit(d, OpKind::get, gb);
    expect(d.table().cancel(d.handle(), a) == KVBLOB_OK, "R-CAN-1", "cancel answered an error");
    // b is still held: the drain cannot finish, and must not cancel it to finish.
    // (What the drain answers is R-DRN-1's business, checked elsewhere.)
    d.table().drain(d.handle(), 50'000'000ull);
    c.stage(d, "release_staged", "R-CAN-1");
    expect(c.settle(d, a) && c.settle(d, b), "R-ACC-2", "the gets did not settle once released");
    const auto ra = result_of(c, d, a), rb = result_of(c, d, b);
    expect(ra == KVBLOB_ROW_CANCELLED, "R-CAN-1",
           std::string("a get cancelled before it started is ") + kvblob_row_result_name(ra));
    expect(rb == KVBLOB_ROW_READY, "R-CAN-1",
           std::string("a get nobody cancelled, held through a drain, is ") +
               kvblob_row_result_name(rb));
    expect(std::memcmp(dst.data() + 1024, src.data() + 1024, 1024) == 0, "R-ROW-6",
           "the get nobody cancelled is READY with other bytes");
    for (auto *op : {a, b})
        expect(d.table().release(d.handle(), op) == KVBLOB_OK, "R-OPS-1", "release refused");
}

}  // namespace

// The checks of this file, in run order.
void add_cancel_checks(std::vector<Check> &out)
{
    const Check checks[] = {
        {"cancel.unstarted", {"R-CAN-1"}, Level::must, 0, {"stage_held_get", "release_staged"},
         "a cancelled get that never started is CANCELLED, ends its access, and left its destination "
         "untouched, before and after the store lets go",
         cancel_unstarted},
        {"cancel.started", {"R-CAN-1"}, Level::must, 0, {"advance"},
         "in the driver's controlled mode, a row cancelled once it started (advance START, or "
         "TRANSFER_END for a get whose bytes moved) finishes READY; one cancelled before is CANCELLED "
         "with its destination untouched",
         cancel_started},
        {"cancel.after-final", {"R-CAN-1"}, Level::must, 0, {},
         "a cancel after an operation is final changes neither its results nor the store",
         cancel_after_final},
        {"cancel.only-when-asked", {"R-CAN-1"}, Level::must, 0, {"stage_held_get", "release_staged"},
         "rows nobody cancelled are never CANCELLED: not by a cancel of another operation, not by a drain",
         cancel_only_when_asked},
    };
    out.insert(out.end(), std::begin(checks), std::end(checks));
}

}  // namespace kvblob::conformance
