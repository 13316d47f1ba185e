// Completion notification (ABI 1.1, KVBLOB_CAP_NOTIFY; R-NTF-1..3): a driver
// that declares it announces each operation it admitted, final and access
// ended, each once, never before the state it announces, never after the
// operation's release. The driver is opened with an observer
// (Plugin::open's NotifySink) that records each announcement as it comes;
// the check judges the record from its own thread, never from inside the
// driver's call to notify (a host never calls back from there).
#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "common.hpp"

namespace kvblob::conformance {

namespace {

// What the observer saw, by operation handle.
class Announcements {
public:
    struct Seen {
        int final = 0, access = 0, other = 0;
    };

    NotifySink sink(std::shared_ptr<Announcements> self)
    {
        // Shared with the sink: a driver that cannot be closed keeps what the
        // host lent it (and so this) for good.
        return [self](kvblob_op_t *op, kvblob_notify_event event) {
            {
                std::lock_guard lock(self->mu_);
                if (self->released_.count(op)) {
                    ++self->late_;  // the check released op before this came
                    return;
                }
                auto &seen = self->seen_[op];
                (event == KVBLOB_NOTIFY_FINAL    ? seen.final
                 : event == KVBLOB_NOTIFY_ACCESS ? seen.access
                                                 : seen.other)++;
            }
            self->cv_.notify_all();
        };
    }

    Seen of(kvblob_op_t *op)
    {
        std::lock_guard lock(mu_);
        auto it = seen_.find(op);
        return it == seen_.end() ? Seen{} : it->second;
    }
    // Waits until op's record satisfies done, at most bound; the record then.
    template <class Done>
    Seen wait(kvblob_op_t *op, std::chrono::milliseconds bound, Done done)
    {
        std::unique_lock lock(mu_);
        cv_.wait_for(lock, bound, [&] { return done(seen_[op]); });
        return seen_[op];
    }
    // Takes op's record out: what it saw until now. A later announcement
    // naming the same handle starts a new record.
    Seen take(kvblob_op_t *op)
    {
        std::lock_guard lock(mu_);
        auto it = seen_.find(op);
        if (it == seen_.end()) return {};
        Seen s = it->second;
        seen_.erase(it);
        return s;
    }
    size_t left() const
    {
        std::lock_guard lock(mu_);
        return seen_.size();
    }
    // For a check that never reuses a handle after its release (one driver,
    // no admission after the first release): op's release returned
    // KVBLOB_OK, so any announcement naming it from now on came late.
    void mark_released(kvblob_op_t *op)
    {
        std::lock_guard lock(mu_);
        released_.insert(op);
        seen_.erase(op);
    }
    int late() const
    {
        std::lock_guard lock(mu_);
        return late_;
    }

private:
    mutable std::mutex mu_;
    std::set<kvblob_op_t *> released_;
    int late_ = 0;
    std::condition_variable cv_;
    std::map<kvblob_op_t *, Seen> seen_;
};

// How long an announcement may trail the state it announces: a correct
// driver announces at once, so this bounds only a driver that never does
// (the check fails by name, well inside the check's own timeout).
std::chrono::milliseconds announce_bound(const Context &c)
{
    return std::min<std::chrono::milliseconds>(c.op_timeout / 4, std::chrono::seconds(5));
}

struct Observed {
    std::shared_ptr<Announcements> seen = std::make_shared<Announcements>();
    CheckDriver d;
    explicit Observed(const Context &c) : d(c.open_observed(seen->sink(seen))) {}
    // Releases op and returns what was seen of it, forgotten from here: a
    // handle the driver reuses later starts a fresh record.
    Announcements::Seen release(kvblob_op_t *op)
    {
        expect(d.table().release(d.handle(), op) == KVBLOB_OK, "R-OPS-1", "release refused");
        return seen->take(op);
    }
};

std::string ms(std::chrono::milliseconds t) { return std::to_string(t.count()) + " ms"; }

// Settles op, then waits for both announcements; fails R-NTF-1 naming what
// never came. Returns the record.
Announcements::Seen settle_announced(Context &c, Observed &o, kvblob_op_t *op, const std::string &what)
{
    expect(c.settle(o.d, op), "R-ACC-2", what + " not final with access ended within " + ms(c.op_timeout));
    const auto bound = announce_bound(c);
    auto seen = o.seen->wait(op, bound, [](const Announcements::Seen &s) { return s.final && s.access; });
    expect(seen.final > 0, "R-NTF-1",
           what + " was final, but the driver, which declares notify, did not announce it within " + ms(bound));
    expect(seen.access > 0, "R-NTF-1",
           what + " ended its access, but the driver, which declares notify, did not announce it within " + ms(bound));
    return seen;
}

void notify_announced(Context &c)
{
    Observed o(c);
    GuardedBuffer src(8 * 1024), dst(8 * 1024);
    fill_pattern(src.data(), src.size(), 61);
    auto rs = c.reg(o.d, src), rd = c.reg(o.d, dst);
    auto rows = row_pairs(c, rs, rd, 8, 1024);
    for (OpKind kind : {OpKind::put, OpKind::get}) {
        auto op = c.admit(o.d, kind, kind == OpKind::put ? rows.put : rows.get);
        settle_announced(c, o, op, std::string("an 8-row ") + to_string(kind));
        o.release(op);
    }
    expect(std::memcmp(src.data(), dst.data(), src.size()) == 0, "R-ROW-1",
           "the get did not read back what the put stored");
    // Several in flight at once, announced whichever order they end in.
    std::vector<Batch> singles(8);
    std::vector<kvblob_op_t *> ops;
    for (size_t i = 0; i < singles.size(); ++i) {
        singles[i].row(c.key(std::to_string(i)), {make_span(rd, i * 1024, 1024)});
        ops.push_back(c.admit(o.d, OpKind::get, singles[i]));
    }
    for (size_t i = 0; i < ops.size(); ++i) {
        settle_announced(c, o, ops[i], "get " + std::to_string(i) + " of 8 in flight together");
    }
    for (auto *op : ops) {
        o.release(op);
    }
}

void notify_after_state(Context &c)
{
    Observed o(c);
    GuardedBuffer src(4 * 2048), dst(4 * 2048);
    fill_pattern(src.data(), src.size(), 62);
    auto rs = c.reg(o.d, src), rd = c.reg(o.d, dst);
    // An announcement seen before the state it announces stays seen,
    // and the state once visible stays so until release: the two are
    // compared from here, after the admitting call returned.
    auto judge = [&](kvblob_op_t *op, const std::string &what) {
        const auto seen = o.seen->of(op);
        uint32_t fin = 0;
        o.d.table().poll(o.d.handle(), op, &fin);
        const kvblob_access acc = o.d.table().access(o.d.handle(), op);
        expect(!seen.final || fin, "R-NTF-2", what + " was announced final while poll says not final");
        expect(!seen.access || acc != KVBLOB_ACCESS_OPEN, "R-NTF-2",
               what + " was announced access ended while access says OPEN");
    };
    auto rows = row_pairs(c, rs, rd, 4, 2048);
    for (OpKind kind : {OpKind::put, OpKind::get}) {
        const std::string what = std::string("a 4-row ") + to_string(kind);
        auto op = c.admit(o.d, kind, kind == OpKind::put ? rows.put : rows.get);
        judge(op, what);  // at once: nothing was announced that is not so
        // Woken by each announcement, judged at once.
        const auto bound = announce_bound(c);
        o.seen->wait(op, bound, [](const auto &s) { return s.final > 0; });
        judge(op, what);
        o.seen->wait(op, bound, [](const auto &s) { return s.access > 0; });
        judge(op, what);
        expect(c.settle(o.d, op), "R-ACC-2", what + " did not settle");
        judge(op, what);
        o.release(op);
    }
    const auto *hooks = o.d.scenarios();
    if (!hooks || !hooks->stage_held_get || !hooks->release_staged) {
        c.note("no stage_held_get: held operations not judged");
        return;
    }
    // Held inside the store: not final until the store lets go, so an
    // announcement of final before then is early, however late it looks.
    auto k = c.key("0");
    c.stage(o.d, "stage_held_get", k, "R-NTF-2");
    Batch held;
    held.row(k, {make_span(rd, 0, 2048)});
    auto op = c.admit(o.d, OpKind::get, held);
    judge(op, "a held get");
    // Another operation runs to the end meanwhile, announced: the
    // driver has had every chance to announce the held one wrongly.
    Batch other;
    other.row(c.key("1"), {make_span(rd, 2048, 2048)});
    auto op2 = c.admit(o.d, OpKind::get, other);
    settle_announced(c, o, op2, "a get beside a held one");
    judge(op, "a held get");
    uint32_t fin = 1;
    o.d.table().poll(o.d.handle(), op, &fin);
    expect(fin == 0, "R-CON-3", "a get held inside the store is final before the store let go");
    o.release(op2);
    c.stage(o.d, "release_staged", "R-NTF-2");
    settle_announced(c, o, op, "a held get after the store let go");
    judge(op, "a held get after the store let go");
    o.release(op);
}

void notify_probe_remove(Context &c)
{
    Observed o(c);
    GuardedBuffer src(1024);
    fill_pattern(src.data(), src.size(), 64);
    auto rs = c.reg(o.d, src);
    Batch put;
    put.row(c.key("0"), {make_span(rs, 0, 1024)});
    auto op = c.admit(o.d, OpKind::put, put);
    settle_announced(c, o, op, "a put");
    o.release(op);
    const std::pair<OpKind, const char *> steps[] = {
        {OpKind::probe, "a probe of a stored key"},
        {OpKind::remove, "a remove of a stored key"},
        {OpKind::probe, "a probe of a removed key"},
        {OpKind::remove, "a remove of an absent key"},
    };
    for (const auto &[kind, what] : steps) {
        Batch b;
        b.row(c.key("0"));
        op = c.admit(o.d, kind, b);
        settle_announced(c, o, op, what);
        o.release(op);
    }
}

void notify_after_release(Context &c)
{
    // Each round a fresh driver with every operation admitted before
    // the first release, so no handle is reused within a round; the
    // round ends with the driver closed, when no announcement can
    // still come.
    constexpr int rounds = 8, ops_per_round = 32;
    for (int round = 0; round < rounds; ++round) {
        GuardedBuffer buf(ops_per_round * 512);
        fill_pattern(buf.data(), buf.size(), 65);
        std::shared_ptr<Announcements> seen;
        {
            Observed o(c);
            seen = o.seen;
            auto r = c.reg(o.d, buf);
            const OpKind kind = round % 2 ? OpKind::get : OpKind::put;
            std::vector<Batch> singles(ops_per_round);
            std::vector<kvblob_op_t *> ops;
            for (int i = 0; i < ops_per_round; ++i) {
                singles[i].row(c.key(std::to_string(i)), {make_span(r, i * 512, 512)});
                ops.push_back(c.admit(o.d, kind, singles[i]));
            }
            for (auto *op : ops) {
                // Not waiting for the announcements: release as soon as
                // the state allows, so one still on its way must finish
                // before release returns.
                expect(c.settle(o.d, op), "R-ACC-2",
                       std::string("a ") + to_string(kind) + " did not settle");
                expect(o.d.table().release(o.d.handle(), op) == KVBLOB_OK, "R-OPS-1",
                       "release refused for a settled operation");
                seen->mark_released(op);
            }
        }  // closed here: the driver's threads are done
        const int late = seen->late();
        expect(late == 0, "R-NTF-3",
               std::to_string(late) + " announcement(s) of round " + std::to_string(round) +
                   " named an operation after its release returned KVBLOB_OK");
    }
}

void notify_once(Context &c)
{
    Observed o(c);
    GuardedBuffer src(32 * 512), dst(32 * 512);
    fill_pattern(src.data(), src.size(), 63);
    auto rs = c.reg(o.d, src), rd = c.reg(o.d, dst);
    // One thread submits and releases, so a handle the driver reuses
    // after a release is never confused with the released one.
    for (OpKind kind : {OpKind::put, OpKind::get}) {
        std::vector<Batch> singles(16);
        std::vector<kvblob_op_t *> ops;
        // Two rows each: an operation is announced once, not once per row.
        for (size_t i = 0; i < singles.size(); ++i) {
            for (size_t r = 0; r < 2; ++r)
                singles[i].row(c.key(std::to_string(2 * i + r)),
                               {make_span(kind == OpKind::put ? rs : rd, (2 * i + r) * 512, 512)});
            ops.push_back(c.admit(o.d, kind, singles[i]));
        }
        for (size_t i = 0; i < ops.size(); ++i) {
            const std::string what = to_string(kind) + std::string(" ") + std::to_string(i) + " of 16";
            settle_announced(c, o, ops[i], what);
            // Released: every announcement of it has returned (R-NTF-3).
            const auto seen = o.release(ops[i]);
            expect(seen.final == 1, "R-NTF-3",
                   what + " was announced final " + std::to_string(seen.final) + " times");
            expect(seen.access == 1, "R-NTF-3",
                   what + " was announced access ended " + std::to_string(seen.access) + " times");
            expect(seen.other == 0, "R-NTF-3", what + " was announced with an unknown event");
        }
    }
    expect(std::memcmp(src.data(), dst.data(), src.size()) == 0, "R-ROW-1",
           "the gets did not read back what the puts stored");
    // Nothing came for an operation after its release.
    expect(o.seen->left() == 0, "R-NTF-3",
           std::to_string(o.seen->left()) +
               " announcement(s) named an operation after its release succeeded");
}

}  // namespace

// The checks of this file, in run order.
void add_notify_checks(std::vector<Check> &out)
{
    const Check checks[] = {
        {"notify.announced", {"R-NTF-1"}, Level::must, KVBLOB_CAP_NOTIFY, {},
         "every operation of a notifying driver is announced final and access ended, a put, a get, a "
         "batch and operations in flight together alike",
         notify_announced},
        {"notify.after-state", {"R-NTF-2"}, Level::must, KVBLOB_CAP_NOTIFY, {},
         "an announcement comes only once poll (final) or access (ended) already says so; a get held "
         "inside the store (stage_held_get, when offered) is not announced final while held",
         notify_after_state},
        {"notify.probe-remove", {"R-NTF-1"}, Level::must,
         KVBLOB_CAP_NOTIFY | KVBLOB_CAP_PROBE | KVBLOB_CAP_REMOVE, {},
         "probes and removes are announced final and access ended like puts and gets: a probe of a "
         "present and of a removed key, a remove of a present and of an absent key",
         notify_probe_remove},
        {"notify.after-release", {"R-NTF-3"}, Level::must, KVBLOB_CAP_NOTIFY, {},
         "operations released the moment poll and access allow, while their announcements may still be "
         "on their way, are never announced after their release returned",
         notify_after_release},
        {"notify.once", {"R-NTF-3"}, Level::must, KVBLOB_CAP_NOTIFY, {},
         "each operation is announced final once and access ended once, and nothing is announced after "
         "its release",
         notify_once},
    };
    out.insert(out.end(), std::begin(checks), std::end(checks));
}

}  // namespace kvblob::conformance
