// Breaks that need a second reference driver on the same store
// (Hooked::open_spare): operations admitted where the first refuses them
// (R-ADM-2, R-DRN-3), a staged writer that outlives the driver that staged
// it (R-ROW-2), bytes delivered to a get that is then called CANCELLED
// (R-CAN-1); and drains that do not wait for calls in progress, because the
// batch is read before the reference counts the call (R-DRN-3).
#include "batch_copy.hpp"
#include "hook.hpp"

#include <atomic>

namespace kvblob::breaking {

namespace {

template <class B>
std::unique_ptr<Break> make()
{
    return std::make_unique<B>();
}

// Submits to the spare once Admits(state, kind) says the reference would refuse.
struct AdmitsElsewhere : Break {
    std::atomic<int> draining{0};      // drain calls in progress
    std::atomic<bool> drained{false};  // a drain was called
    std::atomic<bool> timed_out{false};  // a drain answered TIMEOUT
    virtual bool elsewhere(Kind kind) = 0;
    kvblob_status drain(Hooked &h, uint64_t timeout_ns) override
    {
        ++draining;
        kvblob_status st = h.next->drain(h.inner, timeout_ns);
        drained = true;
        timed_out = timed_out || st == KVBLOB_E_TIMEOUT;
        --draining;
        return st;
    }
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        return elsewhere(kind) ? h.submit_spare(kind, batch, out, err, cap) : h.submit(kind, batch, out, err, cap);
    }
};
// admission.draining: admits after drain.
struct AdmitsAfterDrain : AdmitsElsewhere {
    bool elsewhere(Kind) override { return drained; }
};
// m.adm2.probe-remove-while-draining: probe and remove are admitted after drain.
struct ProbeRemoveAfterDrain : AdmitsElsewhere {
    bool elsewhere(Kind kind) override { return drained && (kind == Kind::probe || kind == Kind::remove); }
};
// admission.during-drain: a drain that timed out reopens admission.
struct AdmitsAfterTimeout : AdmitsElsewhere {
    bool elsewhere(Kind) override { return timed_out; }
};
// m.drn3.draining-set-late: admission stops only once drain's wait is over.
struct AdmitsWhileDraining : AdmitsElsewhere {
    bool elsewhere(Kind) override { return draining > 0; }
};
const Registered after_drain("admission.draining", make<AdmitsAfterDrain>);
const Registered probe_remove("m.adm2.probe-remove-while-draining", make<ProbeRemoveAfterDrain>);
const Registered after_timeout("admission.during-drain", make<AdmitsAfterTimeout>);
const Registered set_late("m.drn3.draining-set-late", make<AdmitsWhileDraining>);

// m.drn1.drain-waits-for-calls-only: drain waits for calls in progress, not for operations in flight.
struct DrainIgnoresInFlight : Break {
    kvblob_status drain(Hooked &h, uint64_t timeout_ns) override
    {
        kvblob_status st = h.next->drain(h.inner, 0);
        (void)timeout_ns;
        return st == KVBLOB_E_TIMEOUT ? KVBLOB_OK : st;
    }
};
const Registered calls_only("m.drn1.drain-waits-for-calls-only", make<DrainIgnoresInFlight>);

// scenario.close-releases: a staged foreign writer outlives the driver that
// staged it (staged on the spare, which is never closed).
struct WriterOutlives : Break {
    const kvblob_scenarios_t *spare_hooks(Hooked &h)
    {
        if (!h.open_spare()) return nullptr;
        h.keep_spare = true;
        return static_cast<const kvblob_scenarios_t *>(h.next->get_extension(h.spare, KVBLOB_EXT_SCENARIOS));
    }
    kvblob_status stage_foreign_writer(Hooked &h, const uint8_t *key, uint64_t n) override
    {
        const kvblob_scenarios_t *s = spare_hooks(h);
        return s ? s->stage_foreign_writer(h.spare, key, n) : h.scenarios->stage_foreign_writer(h.inner, key, n);
    }
    kvblob_status release_staged(Hooked &h) override
    {
        if (const kvblob_scenarios_t *s = h.spare ? spare_hooks(h) : nullptr) s->release_staged(h.spare);
        return h.scenarios->release_staged(h.inner);
    }
};
const Registered close_releases("scenario.close-releases", make<WriterOutlives>);

// cancel.unstarted: a cancelled get that has not started delivers its bytes
// (read through the spare, which holds nothing), then says CANCELLED.
struct CancelDelivers : Break {
    std::mutex mu;
    std::map<kvblob_op_t *, std::unique_ptr<BatchCopy>> gets;
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        kvblob_status st = h.submit(kind, batch, out, err, cap);
        std::lock_guard lock(mu);
        if (st == KVBLOB_OK && kind == Kind::get) gets[*out] = std::make_unique<BatchCopy>(*batch);
        return st;
    }
    kvblob_status cancel(Hooked &h, kvblob_op_t *op) override
    {
        std::unique_ptr<BatchCopy> rows;
        {
            std::lock_guard lock(mu);
            auto it = gets.find(op);
            if (it != gets.end()) rows = std::move(it->second), gets.erase(it);
        }
        uint32_t final = 0;
        if (rows && h.poll(op, &final) == KVBLOB_OK && !final) {
            kvblob_op_t *read = nullptr;
            if (h.submit_spare(Kind::get, rows->get(), &read, nullptr, 0) == KVBLOB_OK) {
                h.wait_final(read);
                while (h.next->release(h.spare, read) == KVBLOB_E_BUSY) std::this_thread::yield();
                std::lock_guard lock(h.ops_mu);
                h.spare_ops.erase(read);
                std::erase_if(h.early, [read](const auto &e) { return e.first == read; });
            }
        }
        return h.next->cancel(h.inner, op);
    }
    kvblob_status release(Hooked &h, kvblob_op_t *op) override
    {
        kvblob_status st = h.next->release(h.inner, op);
        std::lock_guard lock(mu);
        if (st == KVBLOB_OK) gets.erase(op);
        return st;
    }
};
const Registered unstarted("cancel.unstarted", make<CancelDelivers>);

// Reads the batch (its keys, as a copy) before the reference counts the
// call in progress, for the kinds Early(kind) names: a drain meanwhile does
// not wait for it.
template <bool (*Early)(Kind)>
struct ReadsBeforeCounted : Break {
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        if (!batch || !Early(kind)) return h.submit(kind, batch, out, err, cap);
        BatchCopy copy(*batch);
        return h.submit(kind, copy.get(), out, err, cap);
    }
};
bool every_kind(Kind) { return true; }
bool all_but_put(Kind k) { return k != Kind::put; }
const Registered waits_for_calls("lifetime.drain-waits-for-calls", make<ReadsBeforeCounted<every_kind>>);
const Registered puts_only("m.drn3.drain-waits-puts-only", make<ReadsBeforeCounted<all_but_put>>);

}  // namespace

}  // namespace kvblob::breaking
