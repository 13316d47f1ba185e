// Breaks of a driver's lifetime, made at the table: unregister_region,
// drain and close answer what the reference did not (R-REG-1, R-REG-2,
// R-DRN-1, R-DRN-2, R-CLS-1).
#include "hook.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <set>

namespace kvblob::breaking {

namespace {

template <class B>
std::unique_ptr<Break> make()
{
    return std::make_unique<B>();
}

// A Break that rewrites one status of one slot into another.
template <kvblob_status From, kvblob_status To>
struct UnregisterSays : Break {
    kvblob_status unregister_region(Hooked &h, kvblob_region_t *region) override
    {
        kvblob_status st = h.next->unregister_region(h.inner, region);
        return st == From ? To : st;  // the region stays registered
    }
};
template <kvblob_status From, kvblob_status To>
struct DrainSays : Break {
    kvblob_status drain(Hooked &h, uint64_t timeout_ns) override
    {
        kvblob_status st = h.next->drain(h.inner, timeout_ns);
        return st == From ? To : st;
    }
};

// lifetime.unprovable-pins: a pinned region's unregister says OK.
const Registered pins("lifetime.unprovable-pins", make<UnregisterSays<KVBLOB_E_UNPROVABLE, KVBLOB_OK>>);
// m.reg2.unregister-busy-status: a pinned region's unregister says BUSY, as if it could end.
const Registered pins_busy("m.reg2.unregister-busy-status",
                           make<UnregisterSays<KVBLOB_E_UNPROVABLE, KVBLOB_E_BUSY>>);
// lifetime.unregister-busy: a region in use says gone.
const Registered busy("lifetime.unregister-busy", make<UnregisterSays<KVBLOB_E_BUSY, KVBLOB_OK>>);

// lifetime.unregister-racing: counts an operation out of its regions (the
// reference ended its access, so its unregister succeeds) before it records
// the access ended (access() here still says OPEN). So that an unregister
// meets that window in every run, not by luck of scheduling, the record
// waits on one where one is waiting: an operation naming a region whose
// unregister was refused BUSY stays OPEN here until one of its regions is
// unregistered, and then until the thread that unregistered it asked once
// more (the check asks at once); where none comes, it records the end after
// 100 ms, so lifetime.unregister-busy, which asks while the get is held and
// again only after it settled, passes.
struct AccessRecordedLate : Break {
    struct Late {
        std::chrono::steady_clock::time_point since;
        std::thread::id let_go_by;  // the thread whose unregister met the window
        bool told = false;          // that thread was told OPEN after it
    };
    std::mutex mu;
    std::map<kvblob_op_t *, std::set<kvblob_region_t *>> named;  // each live operation's regions
    std::set<kvblob_region_t *> wanted;                          // an unregister was refused BUSY
    std::map<kvblob_op_t *, Late> late;  // ended in the reference, not yet here
    std::set<kvblob_op_t *> recorded;    // said ENDED here

    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        const kvblob_status st = h.submit(kind, batch, out, err, cap);
        if (st != KVBLOB_OK) return st;
        std::lock_guard lock(mu);
        auto &regions = named[*out];
        for (uint64_t r = 0; r < batch->row_count; ++r)
            for (uint32_t s = 0; s < batch->rows[r].span_count; ++s) regions.insert(batch->rows[r].spans[s].region);
        return st;
    }
    // Under mu: whether op waits on an unregister here.
    bool waits(kvblob_op_t *op) const
    {
        auto it = named.find(op);
        if (it == named.end()) return false;
        return std::any_of(it->second.begin(), it->second.end(), [&](kvblob_region_t *r) { return wanted.count(r); });
    }
    // Under mu: whether op's end is recorded late (every operation's here).
    virtual bool late_for(kvblob_op_t *) const { return true; }
    kvblob_access access(Hooked &h, kvblob_op_t *op) override
    {
        const kvblob_access a = h.access(op);
        if (a != KVBLOB_ACCESS_ENDED) return a;
        std::lock_guard lock(mu);
        if (recorded.count(op) || !late_for(op)) return a;
        auto [it, fresh] = late.try_emplace(op);
        Late &w = it->second;
        if (fresh) w.since = std::chrono::steady_clock::now();
        if (w.let_go_by == std::this_thread::get_id() && !w.told) {
            w.told = true;
            return KVBLOB_ACCESS_OPEN;
        }
        // Waiting: on an unregister, or on the thread whose unregister met
        // the window to ask (another thread's poll may ask first).
        const bool waiting = !w.told && (w.let_go_by != std::thread::id() || waits(op));
        if (waiting && std::chrono::steady_clock::now() - w.since < std::chrono::milliseconds(100))
            return KVBLOB_ACCESS_OPEN;
        late.erase(it);
        recorded.insert(op);
        return a;
    }
    kvblob_status unregister_region(Hooked &h, kvblob_region_t *region) override
    {
        const kvblob_status st = h.next->unregister_region(h.inner, region);
        std::lock_guard lock(mu);
        if (st == KVBLOB_E_BUSY) wanted.insert(region);
        if (st != KVBLOB_OK) return st;
        wanted.erase(region);
        for (const auto &[op, regions] : named) {
            if (!regions.count(region) || recorded.count(op) || !late_for(op) || h.access(op) != KVBLOB_ACCESS_ENDED)
                continue;
            auto [it, fresh] = late.try_emplace(op);
            if (fresh) it->second.since = std::chrono::steady_clock::now();
            if (it->second.let_go_by == std::thread::id()) it->second.let_go_by = std::this_thread::get_id();
        }
        return st;
    }
    kvblob_status release(Hooked &h, kvblob_op_t *op) override
    {
        const kvblob_status st = Break::release(h, op);
        if (st == KVBLOB_OK) {
            std::lock_guard lock(mu);
            named.erase(op);
            late.erase(op);
            recorded.erase(op);
        }
        return st;
    }
};
const Registered busy_racing("lifetime.unregister-racing", make<AccessRecordedLate>);

// m.reg1.cancel-recorded-late: the same, on the cancel path alone: an
// operation that ends because it was cancelled is counted out of its
// regions before its end is recorded; one that runs to its end is not.
struct CancelRecordedLate : AccessRecordedLate {
    std::set<kvblob_op_t *> cancelled;  // under mu
    bool late_for(kvblob_op_t *op) const override { return cancelled.count(op) != 0; }
    kvblob_status cancel(Hooked &h, kvblob_op_t *op) override
    {
        {
            std::lock_guard lock(mu);
            cancelled.insert(op);
        }
        return Break::cancel(h, op);
    }
    kvblob_status release(Hooked &h, kvblob_op_t *op) override
    {
        const kvblob_status st = AccessRecordedLate::release(h, op);
        if (st == KVBLOB_OK) {
            std::lock_guard lock(mu);
            cancelled.erase(op);
        }
        return st;
    }
};
const Registered cancel_racing("m.reg1.cancel-recorded-late", make<CancelRecordedLate>);

// admission.unregistered-region: says gone, stays usable.
struct UnregisterForgets : Break {
    kvblob_status unregister_region(Hooked &, kvblob_region_t *) override { return KVBLOB_OK; }
};
const Registered stays("admission.unregistered-region", make<UnregisterForgets>);

// m.drn2.drain-ok-with-unprovable / m.drn2.drain-timeout-status: the wrong answer to unprovable access.
const Registered drain_ok("m.drn2.drain-ok-with-unprovable", make<DrainSays<KVBLOB_E_UNPROVABLE, KVBLOB_OK>>);
const Registered drain_timeout("m.drn2.drain-timeout-status",
                               make<DrainSays<KVBLOB_E_UNPROVABLE, KVBLOB_E_TIMEOUT>>);
// m.drn1.drain-ok-on-timeout: a drain that timed out says OK.
const Registered timeout_ok("m.drn1.drain-ok-on-timeout", make<DrainSays<KVBLOB_E_TIMEOUT, KVBLOB_OK>>);

// m.drn2.drain-waits-on-unprovable: waits out the whole timeout before saying UNPROVABLE.
struct DrainWaitsOnUnprovable : Break {
    kvblob_status drain(Hooked &h, uint64_t timeout_ns) override
    {
        kvblob_status st = h.next->drain(h.inner, timeout_ns);
        if (st == KVBLOB_E_UNPROVABLE)
            std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<uint64_t>(timeout_ns, uint64_t(1) << 62)));
        return st;
    }
};
const Registered waits_on_unprovable("m.drn2.drain-waits-on-unprovable", make<DrainWaitsOnUnprovable>);

// lifetime.drain-concurrent: claims done without waiting for anything.
struct DrainClaimsDone : Break {
    kvblob_status drain(Hooked &h, uint64_t) override
    {
        kvblob_status st = h.next->drain(h.inner, 0);  // stops admission, waits for nothing
        return st == KVBLOB_E_UNPROVABLE ? st : KVBLOB_OK;
    }
};
const Registered concurrent("lifetime.drain-concurrent", make<DrainClaimsDone>);

// lifetime.close-order: close says OK before a drain (and leaves the driver running).
struct CloseAnyTime : Break {
    kvblob_status close(Hooked &h) override
    {
        kvblob_status st = h.next->close(h.inner);
        if (st != KVBLOB_E_BUSY) return st;
        h.inner = nullptr;  // abandoned, never touched again
        return KVBLOB_OK;
    }
};
const Registered close_order("lifetime.close-order", make<CloseAnyTime>);

// m.cls1.close-when-idle: with nothing in flight, close drains by itself.
struct CloseWhenIdle : Break {
    kvblob_status close(Hooked &h) override
    {
        kvblob_status st = h.next->close(h.inner);
        if (st != KVBLOB_E_BUSY) return st;
        {
            std::lock_guard lock(h.ops_mu);
            for (const auto &[op, info] : h.ops) {
                uint32_t final = 0;
                if (h.poll(op, &final) != KVBLOB_OK || !final || h.access(op) != KVBLOB_ACCESS_ENDED)
                    return st;
            }
        }
        h.next->drain(h.inner, 0);
        return h.next->close(h.inner);
    }
};
const Registered when_idle("m.cls1.close-when-idle", make<CloseWhenIdle>);

// m.cls1.close-with-regions: a drained driver closes with regions still registered.
struct CloseWithRegions : Break {
    std::mutex mu;
    std::set<kvblob_region_t *> regions;
    bool drained = false;
    kvblob_status drain(Hooked &h, uint64_t timeout_ns) override
    {
        kvblob_status st = h.next->drain(h.inner, timeout_ns);
        std::lock_guard lock(mu);
        drained = drained || st == KVBLOB_OK;
        return st;
    }
    kvblob_status register_region(Hooked &h, const kvblob_region_desc_t *desc, kvblob_region_t **out, char *err,
                                  uint32_t cap) override
    {
        kvblob_status st = h.next->register_region(h.inner, desc, out, err, cap);
        std::lock_guard lock(mu);
        if (st == KVBLOB_OK) regions.insert(*out);
        return st;
    }
    kvblob_status unregister_region(Hooked &h, kvblob_region_t *region) override
    {
        kvblob_status st = h.next->unregister_region(h.inner, region);
        std::lock_guard lock(mu);
        if (st == KVBLOB_OK) regions.erase(region);
        return st;
    }
    kvblob_status close(Hooked &h) override
    {
        std::lock_guard lock(mu);
        if (drained) {  // the host's regions are let go of with the driver
            for (kvblob_region_t *region : regions) h.next->unregister_region(h.inner, region);
            regions.clear();
        }
        return h.next->close(h.inner);
    }
};
const Registered with_regions("m.cls1.close-with-regions", make<CloseWithRegions>);

}  // namespace

}  // namespace kvblob::breaking

namespace kvblob::breaking {

namespace {

// concurrency.held-get: drain ignores its timeout (waits at least 5 s).
struct DrainAtLeast5s : Break {
    kvblob_status drain(Hooked &h, uint64_t timeout_ns) override
    {
        return h.next->drain(h.inner, std::max<uint64_t>(timeout_ns, 5'000'000'000ull));
    }
};
const Registered held_get("concurrency.held-get", make<DrainAtLeast5s>);

// m.con3.drain-waits-for-held: drain waits for held gets, whatever its timeout.
struct DrainNoDeadline : Break {
    kvblob_status drain(Hooked &h, uint64_t) override { return h.next->drain(h.inner, uint64_t(1) << 62); }
};
const Registered waits_for_held("m.con3.drain-waits-for-held", make<DrainNoDeadline>);

// m.con3.held-blocks-submit: a held get blocks the calling thread inside get.
struct HeldBlocksSubmit : Break {
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        kvblob_status st = h.submit(kind, batch, out, err, cap);
        if (st == KVBLOB_OK && kind == Kind::get) h.wait_final(*out);  // until the store lets go
        return st;
    }
};
const Registered held_blocks("m.con3.held-blocks-submit", make<HeldBlocksSubmit>);

// cancel.only-when-asked: drain cancels what is in flight to finish sooner.
struct DrainCancels : Break {
    kvblob_status drain(Hooked &h, uint64_t timeout_ns) override
    {
        std::vector<kvblob_op_t *> live;
        {
            std::lock_guard lock(h.ops_mu);
            for (const auto &[op, info] : h.ops) live.push_back(op);
        }
        for (kvblob_op_t *op : live) {
            uint32_t final = 0;
            if (h.poll(op, &final) == KVBLOB_OK && !final) h.next->cancel(h.inner, op);
        }
        return h.next->drain(h.inner, timeout_ns);
    }
};
const Registered only_when_asked("cancel.only-when-asked", make<DrainCancels>);

// m.reg2.pin-forgotten-after-drain: after a drain, a pinned region's unregister says OK.
struct PinsForgotten : Break {
    std::atomic<bool> drained{false};
    kvblob_status drain(Hooked &h, uint64_t timeout_ns) override
    {
        drained = true;
        return h.next->drain(h.inner, timeout_ns);
    }
    kvblob_status unregister_region(Hooked &h, kvblob_region_t *region) override
    {
        kvblob_status st = h.next->unregister_region(h.inner, region);
        return st == KVBLOB_E_UNPROVABLE && drained ? KVBLOB_OK : st;
    }
};
const Registered pin_forgotten("m.reg2.pin-forgotten-after-drain", make<PinsForgotten>);

// The regions named by the spans of batch.
std::set<kvblob_region_t *> regions_of(const kvblob_batch_t *batch)
{
    std::set<kvblob_region_t *> out;
    for (uint64_t r = 0; batch && batch->rows && r < batch->row_count; ++r)
        for (uint32_t s = 0; s < batch->rows[r].span_count && batch->rows[r].spans; ++s)
            out.insert(batch->rows[r].spans[s].region);
    return out;
}

// m.reg1.get-never-uncounted: a region a get named is BUSY for good.
struct GetsNeverUncounted : Break {
    std::mutex mu;
    std::set<kvblob_region_t *> named;
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        kvblob_status st = h.submit(kind, batch, out, err, cap);
        std::lock_guard lock(mu);
        if (st == KVBLOB_OK && kind == Kind::get) named.merge(regions_of(batch));
        return st;
    }
    kvblob_status unregister_region(Hooked &h, kvblob_region_t *region) override
    {
        {
            std::lock_guard lock(mu);
            if (named.count(region)) return KVBLOB_E_BUSY;
        }
        return h.next->unregister_region(h.inner, region);
    }
};
const Registered never_uncounted("m.reg1.get-never-uncounted", make<GetsNeverUncounted>);

// A Break that says a region in use is gone (its unregister answers OK)
// while the reference keeps it registered: the reference lets go of those
// regions at close, once nothing uses them.
struct SaysGoneEarly : Break {
    std::mutex mu;
    std::set<kvblob_region_t *> gone;  // under mu
    kvblob_status close(Hooked &h) override
    {
        std::lock_guard lock(mu);
        for (kvblob_region_t *region : gone) h.next->unregister_region(h.inner, region);
        gone.clear();
        return h.next->close(h.inner);
    }
};

// m.reg1.get-not-counted: a region only gets in flight name is let go of at
// once (the reference's unregister comes once they ended, or at close).
struct GetsNotCounted : SaysGoneEarly {
    std::map<kvblob_op_t *, std::set<kvblob_region_t *>> gets;
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        kvblob_status st = h.submit(kind, batch, out, err, cap);
        std::lock_guard lock(mu);
        if (st == KVBLOB_OK && kind == Kind::get) gets[*out] = regions_of(batch);
        return st;
    }
    kvblob_status release(Hooked &h, kvblob_op_t *op) override
    {
        kvblob_status st = h.next->release(h.inner, op);
        std::lock_guard lock(mu);
        if (st == KVBLOB_OK) gets.erase(op);
        return st;
    }
    kvblob_status unregister_region(Hooked &h, kvblob_region_t *region) override
    {
        kvblob_status st = h.next->unregister_region(h.inner, region);
        if (st != KVBLOB_E_BUSY) return st;
        std::lock_guard lock(mu);
        for (const auto &[op, named] : gets)
            if (named.count(region)) {
                gone.insert(region);  // "gone": its gets still write into it
                return KVBLOB_OK;
            }
        return st;
    }
};
const Registered not_counted("m.reg1.get-not-counted", make<GetsNotCounted>);

// m.reg1.users-a-flag: a region's users are a flag, not a count: the end
// (here, the release) of any operation naming it clears the flag, and the
// region is let go of while another operation naming it still has access
// open (the reference's unregister comes at close).
struct UsersAFlag : SaysGoneEarly {
    std::map<kvblob_op_t *, std::set<kvblob_region_t *>> ops;
    std::set<kvblob_region_t *> cleared;
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        kvblob_status st = h.submit(kind, batch, out, err, cap);
        std::lock_guard lock(mu);
        if (st != KVBLOB_OK) return st;
        ops[*out] = regions_of(batch);
        for (kvblob_region_t *region : ops[*out]) cleared.erase(region);
        return st;
    }
    kvblob_status release(Hooked &h, kvblob_op_t *op) override
    {
        kvblob_status st = Break::release(h, op);
        std::lock_guard lock(mu);
        if (st != KVBLOB_OK) return st;
        cleared.merge(ops[op]);
        ops.erase(op);
        return st;
    }
    kvblob_status unregister_region(Hooked &h, kvblob_region_t *region) override
    {
        kvblob_status st = h.next->unregister_region(h.inner, region);
        std::lock_guard lock(mu);
        if (st != KVBLOB_E_BUSY || !cleared.count(region)) return st;
        gone.insert(region);  // "gone": the open operation may still write into it
        return KVBLOB_OK;
    }
};
const Registered users_a_flag("m.reg1.users-a-flag", make<UsersAFlag>);

}  // namespace

}  // namespace kvblob::breaking
