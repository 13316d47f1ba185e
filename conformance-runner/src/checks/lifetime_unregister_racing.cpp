// lifetime.unregister-racing: R-REG-1 while an operation's access ends.
// lifetime.unregister-busy asks once, while a get is held; this check asks
// without pause as the get lets go. A driver that counts an operation out
// of its regions' users before it records the operation's access as ended
// lets an unregister through in between: the region is gone while access()
// still says OPEN, and a caller that trusts the unregister frees memory the
// driver says it may touch. One operation naming many regions keeps that
// window open while the driver counts it out of each. The get is let go
// both ways it can be, in turn: its hold released (its rows run), and
// cancelled (it ends at once); a driver ends an operation's access on each
// path in code of its own, and may count out early on one alone.
#include <atomic>
#include <chrono>
#include <latch>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common.hpp"
#include "kvblob/host/keep_alive.hpp"

namespace kvblob::conformance {

namespace {

// What the racer saw of one region it kept trying to unregister.
struct RacerSaw {
    bool gone = false;                                 // an unregister succeeded
    kvblob_access access_then = KVBLOB_ACCESS_ENDED;  // the get's access, asked at once after
    kvblob_status refused = KVBLOB_OK;                 // an answer other than BUSY before the end was seen
};

// Tries to unregister each of regions in turn, and after each success asks
// op's access with nothing in between (then notes the region gone, so the
// check's cleanup leaves it whatever happens next). Stops trying a region
// once it is gone, once it answers other than BUSY, or once ended is set
// (op settled, not yet released: a driver may refuse BUSY until the
// release, which comes after this returns). first counts down after the
// first try of each.
std::vector<RacerSaw> unregister_racing(Context &c, Driver &d, const std::vector<kvblob_region_t *> &regions,
                                        kvblob_op_t *op, std::latch &first, const std::atomic<bool> &ended)
{
    std::vector<RacerSaw> saw(regions.size());
    bool counted = false;
    for (bool trying = true; trying;) {
        trying = false;
        const bool after_end = ended.load();
        for (size_t i = 0; i < regions.size(); ++i) {
            RacerSaw &s = saw[i];
            if (s.gone || s.refused != KVBLOB_OK) continue;
            const kvblob_status st = d.table().unregister_region(d.handle(), regions[i]);
            if (st == KVBLOB_OK) {
                s.access_then = d.table().access(d.handle(), op);
                s.gone = true;
                c.unregistered(d, regions[i]);
            } else if (st != KVBLOB_E_BUSY && !after_end) {
                s.refused = st;
            } else if (!after_end) {
                trying = true;
            }
        }
        if (!std::exchange(counted, true)) first.count_down();
    }
    return saw;
}

// Sets flag when it goes, however the thread that holds it ends.
struct SetOnExit {
    std::atomic<bool> &flag;
    ~SetOnExit() { flag.store(true); }
};

void lifetime_unregister_racing(Context &c)
{
    auto d = c.open();
    if (!d.table().get) throw NotSupported("get is not offered by this driver");
    const uint64_t n = std::min<uint64_t>(64, d.caps().max_rows_per_op);
    if (n < 2) throw NotSupported("max_rows_per_op is 1: one get cannot name two regions");
    constexpr uint64_t row = 64;
    c.require_round_trip(d, row, "the racing gets read rows this check put");
    GuardedBuffer src(n * row);
    // The gets' destination: kept alive for good where a get's access ends
    // unprovable (R-REG-2), as the driver may touch it still.
    auto dst = std::make_unique<GuardedBuffer>(n * row);
    fill_pattern(src.data(), src.size(), 11);
    auto rs = c.reg(d, src);
    std::vector<std::string> keys;
    Batch put;
    for (uint64_t i = 0; i < n; ++i) {
        keys.push_back(c.key("racing-" + std::to_string(i)));
        put.row(keys.back(), {make_span(rs, i * row, row)});
    }
    for (const auto &r : c.run(d, OpKind::put, put))
        expect(r.result == KVBLOB_ROW_READY, "R-ROW-1", "a put of the get's rows was not READY");

    // Rounds go on for up to 100, as time allows (at least 2: one of each
    // way of letting go). Each: one region a row, the first row's key held
    // (stage_held_get holds the whole get), one thread trying the first
    // region and the last in turn (a driver may count out in either order;
    // one thread, not one a region, so that on two cores the thread that
    // ends the get's access runs beside it), and the get let go once it is
    // trying: its hold released in odd rounds, the get cancelled in even
    // ones (stage_held_get: a cancel ends a held get, R-CAN-1). Once the
    // get settled and was released, every region must unregister.
    const auto until = std::chrono::steady_clock::now() + c.op_timeout / 8;
    for (uint64_t round = 1; round <= 100 && (round <= 2 || std::chrono::steady_clock::now() < until); ++round) {
        const bool cancelled = round % 2 == 0;
        std::vector<kvblob_region_t *> regions;
        for (uint64_t i = 0; i < n; ++i) regions.push_back(c.reg(d, dst->data() + i * row, row));
        c.stage(d, "stage_held_get", keys[0], "R-REG-1");
        Batch get;
        for (uint64_t i = 0; i < n; ++i) get.row(keys[i], {make_span(regions[i], 0, row)});
        kvblob_op_t *op = c.admit(d, OpKind::get, get);
        const std::vector<kvblob_region_t *> raced = {regions.front(), regions.back()};
        std::vector<RacerSaw> saw;
        std::latch first(1);
        std::atomic<bool> ended{false};
        bool settled = false;
        kvblob_status cancel = KVBLOB_OK;
        CheckThreads(2, [&](int t) {
            if (t == 0) {
                saw = unregister_racing(c, d, raced, op, first, ended);
                return;
            }
            SetOnExit done{ended};
            first.wait();
            if (cancelled) cancel = d.table().cancel(d.handle(), op);
            else c.stage(d, "release_staged", "R-REG-1");
            settled = c.settle(d, op);
        }).join();
        // Nothing is held after a cancel; the hold itself ends here.
        if (cancelled) c.stage(d, "release_staged", "R-REG-1");
        expect(cancel == KVBLOB_OK, "R-CAN-1",
               std::string("cancel of the held get answered ") + kvblob_status_name(cancel));
        expect(settled, "R-ACC-2", cancelled ? "the cancelled get did not settle" : "the released get did not settle");
        if (d.table().access(d.handle(), op) == KVBLOB_ACCESS_UNPROVABLE) {
            // Its regions stay registered for good (R-REG-2, which
            // lifetime.unprovable-pins judges): no unregister can succeed.
            dst->leak();
            kvblob::keep_alive_for_good(dst.release());
            c.not_exercised(std::string(cancelled ? "the cancelled" : "the released") +
                            " get's access ended unprovable (R-REG-2), so its regions can never be "
                            "unregistered; kept " + std::to_string(n * row) + " bytes of caller memory alive on "
                            "purpose");
            return;
        }
        const std::string when = " (round " + std::to_string(round) + ", " + std::to_string(n) + " regions, the get " +
                                 (cancelled ? "cancelled" : "let go by release_staged") + ")";
        for (size_t t = 0; t < saw.size(); ++t) {
            const std::string which = std::string("the get's ") + (t == 0 ? "first" : "last") + " region";
            expect(saw[t].access_then != KVBLOB_ACCESS_OPEN, "R-REG-1",
                   which + " was unregistered while the get's access was open: access() said OPEN when asked "
                           "at once after the unregister succeeded" + when +
                           "; the operation is counted out of its regions before its access is recorded as "
                           "ended");
            expect(saw[t].refused == KVBLOB_OK, "R-REG-1",
                   "unregister of " + which + " while the get's access was open answered " +
                       kvblob_status_name(saw[t].refused) + ", not KVBLOB_E_BUSY" + when);
        }
        expect(d.table().release(d.handle(), op) == KVBLOB_OK, "R-OPS-1", "release refused after settle" + when);
        for (uint64_t i = 0; i < n; ++i) {
            if ((i == 0 && saw[0].gone) || (i + 1 == n && saw[1].gone)) continue;
            expect(c.unreg(d, regions[i]) == KVBLOB_OK, "R-REG-1",
                   "unregister refused once the get was released" + when);
        }
    }
}

}  // namespace

// Run after the lifetime family's first table (battery.cpp).
void add_lifetime_racing_checks(std::vector<Check> &out)
{
    const Check checks[] = {
        {"lifetime.unregister-racing", {"R-REG-1"}, Level::must, 0, {"stage_held_get", "release_staged"},
         "an unregister that succeeds as an operation's access ends finds that access already ended",
         lifetime_unregister_racing},
    };
    out.insert(out.end(), std::begin(checks), std::end(checks));
}

}  // namespace kvblob::conformance
