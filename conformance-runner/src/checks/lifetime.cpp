// lifetime.*: regions, access, cancel, drain and close, and the order in
// which poll and access may be asked.
#include <algorithm>
#include <atomic>
#include <cstring>

#include "access_wait.hpp"
#include "common.hpp"
#include "held_calls.hpp"
#include "kvblob/host/keep_alive.hpp"
#include "starvation.hpp"

namespace kvblob::conformance {

namespace {

void lifetime_access_ended_untouched(Context &c)
{
    auto d = c.open();
    GuardedBuffer src(64 * 1024), dst(64 * 1024);
    fill_pattern(src.data(), src.size(), 5);
    auto rs = c.reg(d, src), rd = c.reg(d, dst);
    auto rows = row_pairs(c, rs, rd, 16, 4096);
    c.run(d, OpKind::put, rows.put);
    src.revoke_for(50);  // a late touch faults: FAIL [R-REG-3]
    c.run(d, OpKind::get, rows.get);
    dst.revoke_for(50);
    expect(std::memcmp(src.data(), dst.data(), src.size()) == 0, "R-ROW-6", "bytes differ");
}

void lifetime_unregister_busy(Context &c)
{
    auto d = c.open();
    // Two slots: the held get's, and a second operation's, which ends while
    // the held one is still open.
    GuardedBuffer buf(2 * 4096);
    auto r = c.reg(d, buf);
    auto k = c.key("held"), other = c.key("other");
    expect(c.run_one(d, OpKind::put, k, {make_span(r, 0, 4096)}) == KVBLOB_ROW_READY, "R-ROW-1",
           "put not READY");
    expect(c.run_one(d, OpKind::put, other, {make_span(r, 4096, 4096)}) == KVBLOB_ROW_READY, "R-ROW-1",
           "put not READY");
    c.stage(d, "stage_held_get", k, "R-REG-1");
    Batch b;
    b.row(k, {make_span(r, 0, 4096)});
    auto op = c.admit(d, OpKind::get, b);
    // Held: its access is open from admission on, started or not.
    if (d.table().access(d.handle(), op) == KVBLOB_ACCESS_OPEN) {
        expect(c.unreg(d, r) != KVBLOB_OK, "R-REG-1",
               "unregister succeeded while a get naming the region had access open");
        expect(d.table().release(d.handle(), op) != KVBLOB_OK, "R-OPS-1",
               "release succeeded before the operation ended");
        // Every operation naming the region counts, not the last to end.
        expect(c.run_one(d, OpKind::get, other, {make_span(r, 4096, 4096)}) == KVBLOB_ROW_READY, "R-ROW-1",
               "a get beside the held one was not READY");
        if (d.table().access(d.handle(), op) == KVBLOB_ACCESS_OPEN)
            expect(c.unreg(d, r) != KVBLOB_OK, "R-REG-1",
                   "unregister succeeded once a second operation naming the region ended, while the held get "
                   "naming it still had access open: the region's users are not counted one by one");
    }
    c.stage(d, "release_staged", "R-REG-1");
    expect(c.settle(d, op), "R-ACC-2", "the released get did not settle");
    expect(d.table().release(d.handle(), op) == KVBLOB_OK, "R-OPS-1", "release refused after settle");
    expect(c.unreg(d, r) == KVBLOB_OK, "R-REG-1",
           "unregister refused once no operation names the region");
}

void lifetime_unprovable_pins(Context &c)
{
    auto d = c.open();
    auto *buf = new GuardedBuffer(4096);  // kept alive for good: access never proven
    buf->leak();
    kvblob::keep_alive_for_good(buf);
    c.note("kept 4096 bytes of caller memory alive on purpose: the driver never proved its access "
           "ended (R-REG-2)");
    auto r = c.reg(d, *buf);
    auto k = c.key("u");
    c.stage(d, "stage_unprovable", k, "R-REG-2");
    Batch b;
    b.row(k, {make_span(r, 0, 4096)});
    auto op = c.admit(d, OpKind::put, b);
    const auto deadline = std::chrono::steady_clock::now() + c.op_timeout;
    while (d.table().access(d.handle(), op) == KVBLOB_ACCESS_OPEN &&
           std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(1ms);
    expect(d.table().access(d.handle(), op) == KVBLOB_ACCESS_UNPROVABLE, "R-REG-2",
           "the staged operation did not report unprovable access");
    auto st = c.unreg(d, r);
    expect(st != KVBLOB_OK, "R-REG-2", "a region named by an unprovable operation was unregistered");
    expect(st == KVBLOB_E_UNPROVABLE, "R-REG-2",
           std::string("unregister of a pinned region answered ") + kvblob_status_name(st) +
               ", not KVBLOB_E_UNPROVABLE");
    st = d.table().release(d.handle(), op);
    expect(st != KVBLOB_OK, "R-OPS-1", "an operation with unprovable access was released");
    expect(st == KVBLOB_E_UNPROVABLE, "R-OPS-1",
           std::string("release of an operation with unprovable access answered ") +
               kvblob_status_name(st) + ", not KVBLOB_E_UNPROVABLE");
    auto t0 = std::chrono::steady_clock::now();
    st = d.table().drain(d.handle(), 10'000'000'000ull);
    expect(st != KVBLOB_OK, "R-DRN-2", "drain succeeded with an unprovable operation");
    expect(st == KVBLOB_E_UNPROVABLE, "R-DRN-2",
           std::string("drain with an unprovable operation answered ") + kvblob_status_name(st) +
               ", not KVBLOB_E_UNPROVABLE");
    expect(c.unreg(d, r) == KVBLOB_E_UNPROVABLE, "R-REG-2",
           "after drain, unregister of a pinned region no longer answers KVBLOB_E_UNPROVABLE");
    expect(std::chrono::steady_clock::now() - t0 < 2s, "R-DRN-2",
           "drain did not fail at once with an unprovable operation");
}

void lifetime_cancel(Context &c)
{
    auto d = c.open();
    const uint64_t rows = std::min<uint64_t>(d.caps().max_rows_per_op, 4000);
    GuardedBuffer buf(rows * 256), seen(rows * 256);
    auto r = c.reg(d, buf), rs = c.reg(d, seen);
    // Cancel is best effort: try until some rows really were
    // cancelled, so there is something to verify.
    bool saw_cancelled = false;
    for (int attempt = 0; attempt < 10 && !saw_cancelled; ++attempt) {
        auto key = [&](uint64_t i) { return c.key(std::to_string(attempt) + "/" + std::to_string(i)); };
        Batch b;
        for (uint64_t i = 0; i < rows; ++i) b.row(key(i), {make_span(r, i * 256, 256)});
        auto op = c.admit(d, OpKind::put, b);
        expect(d.table().cancel(d.handle(), op) == KVBLOB_OK, "R-CAN-1", "cancel answered an error");
        expect(c.settle(d, op), "R-ACC-2", "a cancelled operation did not settle");
        auto res = c.results(d, op, rows);
        // The CANCELLED rows are looked up in one get, not one by
        // one: a store that takes a while per operation still
        // ends in time (an access-end bound, a network).
        Batch look;
        std::vector<uint64_t> cancelled;
        for (uint64_t i = 0; i < rows; ++i) {
            if (res[i].result == KVBLOB_ROW_CANCELLED) {
                look.row(key(i), {make_span(rs, cancelled.size() * 256, 256)});
                cancelled.push_back(i);
            } else {
                expect(res[i].result == KVBLOB_ROW_READY, "R-CAN-1",
                       "row " + std::to_string(i) + " is " + kvblob_row_result_name(res[i].result));
            }
        }
        saw_cancelled = !cancelled.empty();
        if (!saw_cancelled) continue;
        c.require_absent_not_ready(d, "a CANCELLED put row stored nothing");
        const auto stored = c.run(d, OpKind::get, look);
        for (size_t n = 0; n < cancelled.size(); ++n)
            expect(stored[n].result != KVBLOB_ROW_READY, "R-CAN-1",
                   "row " + std::to_string(cancelled[n]) +
                       " is CANCELLED, and a get of its key answered READY; R-CAN-1 wants a "
                       "cancelled put to store nothing");
    }
}

void lifetime_drain_concurrent(Context &c)
{
    auto d = c.open();
    // Rows large enough that work is still queued when drain is called.
    constexpr uint64_t row = 64 * 1024;
    GuardedBuffer buf(4 * row);
    auto r = c.reg(d, buf);
    std::atomic<bool> stop{false}, draining{false}, drained{false};
    std::atomic<int> admitted_after_drain{0};
    std::mutex mu;
    std::vector<kvblob_op_t *> admitted;
    CheckThreads submitters(4, [&](int t) {
        for (int i = 0; !stop; ++i) {
            const bool after_drain = drained.load();
            Batch b;
            b.row(c.key(std::to_string(t) + "/" + std::to_string(i)), {make_span(r, t * row, row)});
            kvblob_status st;
            kvblob_op_t *op = c.submit(d, OpKind::put, b, &st);
            if (!op) {
                if (after_drain) break;
                // The in-flight limit: keep the load on. Refused while drain
                // waits, more slowly: the battery's own wakeups would
                // otherwise crowd a loaded machine's run queue and read as
                // the machine starving the check (starvation.hpp).
                std::this_thread::sleep_for(draining ? 2ms : 100us);
                continue;
            }
            if (after_drain) ++admitted_after_drain;
            std::lock_guard lock(mu);
            admitted.push_back(op);
        }
    });
    std::this_thread::sleep_for(20ms);
    // Up to the in-flight limit of 64 KiB rows may be queued: a slow
    // machine (a sanitizer, other work) needs more than a fixed 10 s
    // to finish them, so half the check's time, at least 10 s.
    const auto drain_wait = std::max<std::chrono::nanoseconds>(10s, c.op_timeout / 2);
    draining = true;
    const WaitWatch watch;  // what the machine gave this process while drain waited (starvation.hpp)
    auto st = d.table().drain(d.handle(), static_cast<uint64_t>(drain_wait.count()));
    const WaitFigures waited = watch.figures();
    drained = true;
    // Read at once: a drain that returned OK has nothing left in flight.
    size_t unsettled = 0;
    {
        std::lock_guard lock(mu);
        for (auto *op : admitted) {
            uint32_t fin = 0;
            d.table().poll(d.handle(), op, &fin);
            if (!fin || d.table().access(d.handle(), op) != KVBLOB_ACCESS_ENDED) ++unsettled;
        }
    }
    stop = true;
    submitters.join();
    if (st == KVBLOB_E_TIMEOUT) {
        // Closed at once: the close's own drain would wait as long again
        // for what never came, and the verdict after it.
        d.shutdown(std::chrono::nanoseconds(0));
        fail_after_wait(waited, "R-DRN-1", "drain answered KVBLOB_E_TIMEOUT after " + ms_text(drain_wait));
    }
    expect(st == KVBLOB_OK, "R-DRN-1", std::string("drain answered ") + kvblob_status_name(st));
    expect(unsettled == 0, "R-DRN-1",
           "drain returned OK while " + std::to_string(unsettled) +
               " admitted operation(s) were not final with access ended");
    expect(admitted_after_drain == 0, "R-ADM-2",
           std::to_string(admitted_after_drain.load()) + " operation(s) admitted after drain returned");
}

// As many rows as the driver moves in a quarter of the check's time,
// over the twelve long operations of lifetime.drain-waits-for-calls (at
// most 20,000): a long call is a wide window, and a slow store still ends
// in time.
uint64_t rows_for_long_calls(Context &c)
{
    auto d = c.open();
    constexpr uint64_t probe_rows = 256;
    if (d.caps().max_rows_per_op < probe_rows) throw NotSupported("max_rows_per_op is below 256");
    GuardedBuffer buf(probe_rows * 16);
    auto r = c.reg(d, buf);
    Batch b;
    for (uint64_t i = 0; i < probe_rows; ++i)
        b.row(c.key("pace/" + std::to_string(i)), {make_span(r, i * 16, 16)});
    const auto t0 = std::chrono::steady_clock::now();
    c.run(d, OpKind::put, b);
    // A store that writes behind (a write-back stack: READY once its
    // top tier stored the rows) moves them only by the time drain
    // returns, and the check's long operations go at that pace once its
    // queue is full: the pace counts the drain.
    d.table().drain(d.handle(), 30'000'000'000ull);
    const double per_row =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / probe_rows;
    const double budget = std::chrono::duration<double>(c.op_timeout).count() / 4 / 12;
    return std::clamp<uint64_t>(static_cast<uint64_t>(budget / std::max(per_row, 1e-9)), probe_rows,
                                std::min<uint64_t>(d.caps().max_rows_per_op, 20000));
}

void lifetime_drain_waits_for_calls(Context &c)
{
    drain_during_held_calls(c);  // every run, whatever the timing
    // The batch is valid for the duration of the call, and drain
    // waits for calls in progress (R-DRN-3): once drain returned, no
    // driver reads the batch again. So the battery rewrites every key
    // of the batch then (its last byte), and looks for the rewritten
    // keys: a put that stored one, or a get that delivered one (its
    // object stored beforehand), read the batch after drain returned.
    const uint64_t rows = rows_for_long_calls(c);
    {
        auto d = c.open();
        c.require_absent_not_ready(d, "a put stored none of the keys rewritten after drain returned");
    }
    // Three rounds of each kind at least, then more while an eighth of
    // the check's time allows (16 at most): on a loaded machine the
    // drain may often come too late to find a call still in progress.
    const auto more_until = std::chrono::steady_clock::now() + c.op_timeout / 8;
    for (int round = 0; round < 16 && (round < 6 || std::chrono::steady_clock::now() < more_until);
         ++round) {
        const OpKind kind = round % 2 ? OpKind::get : OpKind::put;
        auto d = c.open();
        auto other = c.open();
        GuardedBuffer buf(rows * 16), seen(rows * 16);
        fill_pattern(buf.data(), buf.size(), 71);
        std::memset(seen.data(), 0, seen.size());
        auto r = c.reg(d, buf);
        auto ro = c.reg(other, seen);
        const std::string tag = to_string(kind) + std::to_string(round);
        auto original = [&](uint64_t i) { return c.key(tag + "/" + std::to_string(i)); };
        auto rewritten = [&](uint64_t i) {
            std::string k = original(i);
            k.front() = '~';
            return k;
        };
        if (kind == OpKind::get) {  // only the rewritten keys exist
            fill_pattern(seen.data(), seen.size(), 72);
            Batch stored;
            for (uint64_t i = 0; i < rows; ++i) stored.row(rewritten(i), {make_span(ro, i * 16, 16)});
            c.run(other, OpKind::put, stored);
        }
        Batch b;
        for (uint64_t i = 0; i < rows; ++i) b.row(original(i), {make_span(r, i * 16, 16)});
        if (kind == OpKind::get) std::memset(buf.data(), 0, buf.size());
        const kvblob_batch_t *raw = &b.get();
        if (kind == OpKind::put) c.wrote(*raw);  // called below through the table itself
        auto slot = kind == OpKind::put ? d.table().put : d.table().get;
        std::atomic<bool> calling{false};
        kvblob_op_t *op = nullptr;
        CheckThreads caller(1, [&](int) {
            char err[256];
            calling = true;
            slot(d.handle(), raw, &op, err, sizeof err);
        });
        while (!calling) std::this_thread::yield();
        const auto st = d.table().drain(d.handle(), 30'000'000'000ull);
        for (uint64_t i = 0; i < rows; ++i)  // the driver must be done with these
            const_cast<uint8_t *>(raw->rows[i].key)[0] = '~';
        caller.join();
        if (op) {
            expect(c.settle(d, op), "R-ACC-2", "the admitted operation did not settle");
            d.table().release(d.handle(), op);
        }
        uint64_t late = 0;
        if (kind == OpKind::put) {
            Batch look;
            for (uint64_t i = 0; i < rows; ++i) look.row(rewritten(i), {make_span(ro, i * 16, 16)});
            for (const auto &res : c.run(other, OpKind::get, look)) late += res.result == KVBLOB_ROW_READY;
        } else {
            for (uint64_t i = 0; i < rows; ++i)
                late += std::memcmp(buf.data() + i * 16, seen.data() + i * 16, 16) == 0;
        }
        expect(late == 0, "R-DRN-3",
               "drain returned (" + std::string(kvblob_status_name(st)) + ") while a " +
                   to_string(kind) +
                   " call was still reading its batch: " + std::to_string(late) +
                   " row(s) used keys rewritten after drain returned");
    }
}

void lifetime_close_order(Context &c)
{
    // Leaked on purpose: once closed, the handle is dead and no
    // destructor may touch it again.
    auto &d = *new Driver(c.open());
    kvblob::keep_alive_for_good(&d);
    expect(d.table().close(d.handle()) != KVBLOB_OK, "R-CLS-1",
           "close succeeded before drain (no region registered)");
    GuardedBuffer buf(64);
    auto r = c.reg(d, buf);
    expect(d.table().drain(d.handle(), 5'000'000'000ull) == KVBLOB_OK, "R-DRN-1", "drain failed");
    expect(d.table().close(d.handle()) != KVBLOB_OK, "R-CLS-1",
           "close succeeded with a region registered");
    expect(c.unreg(d, r) == KVBLOB_OK, "R-REG-1", "unregister failed");
    expect(d.table().close(d.handle()) == KVBLOB_OK, "R-CLS-1",
           "close refused after drain with no region registered");
}

void lifetime_answers_any_order(Context &c)
{
    auto d = c.open();
    GuardedBuffer buf(4096);
    auto r = c.reg(d, buf);
    auto k = c.key("asked");
    c.run_one(d, OpKind::put, k, {make_span(r, 0, 4096)});
    c.stage(d, "stage_held_get", k, "R-ACC-1");
    Batch b;
    b.row(k, {make_span(r, 0, 4096)});
    auto op = c.admit(d, OpKind::get, b);
    auto ask = [&](bool access_first) {
        uint32_t fin = 2;
        kvblob_access access = 0;
        kvblob_status st = KVBLOB_OK;
        if (access_first) access = d.table().access(d.handle(), op);
        st = d.table().poll(d.handle(), op, &fin);
        if (!access_first) access = d.table().access(d.handle(), op);
        expect(st == KVBLOB_OK && fin <= 1, "R-ACC-1",
               std::string("poll answered ") + kvblob_status_name(st) + " / " + std::to_string(fin));
        expect(access <= KVBLOB_ACCESS_UNPROVABLE, "R-ACC-1",
               "access answered " + std::to_string(access) + (fin ? "" : " before results were final"));
    };
    for (int i = 0; i < 50; ++i) ask(i % 2 == 0);  // held: in progress
    c.stage(d, "release_staged", "R-ACC-1");
    expect(c.settle(d, op), "R-ACC-2", "the released get did not settle");
    for (int i = 0; i < 10; ++i) ask(i % 2 == 0);  // settled
}

}  // namespace

// The checks of regions, access, cancel, drain and close, in run order.
void add_lifetime_checks(std::vector<Check> &out)
{
    const Check checks[] = {
        {"lifetime.access-ended.untouched", {"R-REG-3", "R-ACC-2"}, Level::must, 0, {},
         "after access ended, the driver never touches the spans (pages revoked for a grace period)",
         lifetime_access_ended_untouched},
        {"lifetime.unregister-busy", {"R-REG-1", "R-OPS-1"}, Level::must, 0,
         {"stage_held_get", "release_staged"},
         "unregister and release are refused while an operation's access is open",
         lifetime_unregister_busy},
        {"lifetime.unprovable-pins", {"R-REG-2", "R-DRN-2", "R-OPS-1"}, Level::must, 0,
         {"stage_unprovable"},
         "unprovable access pins the region, is never released, and fails drain at once",
         lifetime_unprovable_pins},
        {"lifetime.cancel", {"R-CAN-1"}, Level::must, 0, {},
         "after cancel, CANCELLED rows stored nothing; the rest have their real result",
         lifetime_cancel},
        {"lifetime.drain-concurrent", {"R-DRN-1", "R-DRN-3", "R-ADM-2"}, Level::must, 0, {},
         "drain while other threads submit: waits for them, then refuses new work",
         lifetime_drain_concurrent},
        {"lifetime.drain-waits-for-calls", {"R-DRN-3"}, Level::must, 0, {},
         "drain called while a long put or get call is in progress returns only after that call did: "
         "the driver never reads the call's batch after drain returned",
         lifetime_drain_waits_for_calls},
        {"lifetime.close-order", {"R-CLS-1"}, Level::must, 0, {},
         "close is refused before drain and while a region is registered",
         lifetime_close_order},
    };
    out.insert(out.end(), std::begin(checks), std::end(checks));
}

// Run after the scenario and remove checks (battery.cpp), as they always were.
void add_lifetime_answer_checks(std::vector<Check> &out)
{
    const Check checks[] = {
        {"lifetime.answers-any-order", {"R-ACC-1"}, Level::must, 0, {"stage_held_get", "release_staged"},
         "poll and access may be asked at any time, in either order, and each answers validly",
         lifetime_answers_any_order},
    };
    out.insert(out.end(), std::begin(checks), std::end(checks));
}

}  // namespace kvblob::conformance
