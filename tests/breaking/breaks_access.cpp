// Breaks of the second answer, access (R-ACC-2, R-REG-3), made at the table:
// access reported ENDED late or never, or the host's memory touched after
// the reference said it ended.
#include "hook.hpp"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <set>

namespace kvblob::breaking {

namespace {

template <class B>
std::unique_ptr<Break> make()
{
    return std::make_unique<B>();
}

// lifetime.access-bound: access ends 1.5 s past the access-end bound declared
// (the reference opened with a delay 1.5 s longer than the one it declares).
struct PastTheBound : Break {
    kvblob_status open(Hooked &h, const kvblob_open_args_t *args, kvblob_caps_t *caps, char *err,
                       uint32_t cap) override
    {
        const char *given = option_value(*args, "access_delay_ms");
        const long long declared = given ? std::atoll(given) : 0;
        const std::string longer = std::to_string(declared + 1500);
        std::vector<kvblob_option_t> options;
        for (uint64_t i = 0; i < args->option_count; ++i)
            if (!args->options[i].key || std::string(args->options[i].key) != "access_delay_ms")
                options.push_back(args->options[i]);
        options.push_back({sizeof(kvblob_option_t), 0, "access_delay_ms", longer.c_str()});
        kvblob_open_args_t a = *args;
        a.options = options.data();
        a.option_count = options.size();
        kvblob_status st = Break::open(h, &a, caps, err, cap);
        if (st == KVBLOB_OK && (caps->flags & KVBLOB_CAP_ACCESS_BOUND))
            caps->access_end_bound_ns = static_cast<uint64_t>(declared) * 1'000'000ull;
        h.caps = *caps;
        return st;
    }
};
const Registered access_bound("lifetime.access-bound", make<PastTheBound>);

// Operations whose access is never (or not yet) reported ended: access OPEN,
// release BUSY, their ACCESS announcement kept back.
struct Withholds : Break {
    std::mutex mu;
    std::set<kvblob_op_t *> withheld;
    std::map<kvblob_op_t *, bool> announced_later;  // an ACCESS announcement kept back
    bool held(kvblob_op_t *op)
    {
        std::lock_guard lock(mu);
        return withheld.count(op) != 0;
    }
    kvblob_access access(Hooked &h, kvblob_op_t *op) override
    {
        return held(op) ? KVBLOB_ACCESS_OPEN : h.access(op);
    }
    kvblob_status release(Hooked &h, kvblob_op_t *op) override
    {
        if (held(op)) return KVBLOB_E_BUSY;
        kvblob_status st = h.next->release(h.inner, op);
        std::lock_guard lock(mu);
        if (st == KVBLOB_OK) announced_later.erase(op);
        return st;
    }
    void notify(Hooked &h, kvblob_op_t *op, kvblob_notify_event event) override
    {
        if (event == KVBLOB_NOTIFY_ACCESS && held(op)) {
            std::lock_guard lock(mu);
            announced_later[op] = true;
            return;
        }
        h.notify(op, event);
    }
    // Reports op's access as the reference does from here on.
    void let_go(Hooked &h, kvblob_op_t *op)
    {
        bool announce = false;
        {
            std::lock_guard lock(mu);
            withheld.erase(op);
            auto it = announced_later.find(op);
            if (it != announced_later.end()) announce = it->second, announced_later.erase(it);
        }
        if (announce) h.notify(op, KVBLOB_NOTIFY_ACCESS);
    }
};

// m.acc2.remove-access-never-ends: operations without spans never end their access.
struct RemoveAccessNeverEnds : Withholds {
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        kvblob_status st = h.submit(kind, batch, out, err, cap);
        // Its announcements reach notify only once this returned (hook.cpp).
        std::lock_guard lock(mu);
        if (st == KVBLOB_OK && kind == Kind::remove) withheld.insert(*out);
        return st;
    }
};
const Registered remove_never_ends("m.acc2.remove-access-never-ends", make<RemoveAccessNeverEnds>);

// m.acc2.access-ends-at-next-op: a get's access is published only when a later operation is submitted.
struct AccessEndsAtNextOp : Withholds {
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        std::vector<kvblob_op_t *> earlier;
        {
            std::lock_guard lock(mu);
            earlier.assign(withheld.begin(), withheld.end());
        }
        for (kvblob_op_t *op : earlier) let_go(h, op);
        kvblob_status st = h.submit(kind, batch, out, err, cap);
        std::lock_guard lock(mu);
        if (st == KVBLOB_OK && kind == Kind::get) withheld.insert(*out);
        return st;
    }
};
const Registered at_next_op("m.acc2.access-ends-at-next-op", make<AccessEndsAtNextOp>);

// m.acc2.cancel-never-ends-access: a cancelled operation whose rows all
// ended CANCELLED never reports access ended.
struct CancelNeverEndsAccess : Withholds {
    kvblob_status cancel(Hooked &h, kvblob_op_t *op) override
    {
        {
            std::lock_guard lock(mu);
            withheld.insert(op);
        }
        kvblob_status st = h.next->cancel(h.inner, op);
        OpInfo info;
        if (!h.info(op, info)) return st;
        std::vector<kvblob_row_status_t> rows(info.rows);
        for (auto &r : rows) r.struct_size = sizeof r;
        h.results(op, 0, rows.size(), rows.data());
        bool all_cancelled = !rows.empty();
        for (const auto &r : rows) all_cancelled = all_cancelled && r.result == KVBLOB_ROW_CANCELLED;
        if (!all_cancelled) let_go(h, op);
        return st;
    }
};
const Registered cancel_never_ends("m.acc2.cancel-never-ends-access", make<CancelNeverEndsAccess>);

// lifetime.access-ended.untouched: keeps reading a put's source for 300 ms
// after saying access ended (from another thread, however late it is asked).
struct TouchesAfterEnd : Break {
    std::mutex mu;
    std::map<kvblob_op_t *, const volatile uint8_t *> sources;
    std::vector<std::thread> touching;
    ~TouchesAfterEnd() override
    {
        for (auto &t : touching) t.join();
    }
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        kvblob_status st = h.submit(kind, batch, out, err, cap);
        if (st != KVBLOB_OK || kind != Kind::put || !batch->rows[0].span_count) return st;
        std::lock_guard lock(mu);
        if (const uint8_t *at = h.address(batch->rows[0].spans[0])) sources[*out] = at;
        return st;
    }
    // Starts touching op's source, once.
    void touch(kvblob_op_t *op)
    {
        std::lock_guard lock(mu);
        auto it = sources.find(op);
        if (it == sources.end()) return;
        const volatile uint8_t *at = it->second;
        sources.erase(it);
        touching.emplace_back([at] {
            for (int i = 0; i < 60; ++i) {
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
                [[maybe_unused]] uint8_t byte = *at;
            }
        });
    }
    kvblob_access access(Hooked &h, kvblob_op_t *op) override
    {
        kvblob_access a = h.access(op);
        if (a == KVBLOB_ACCESS_ENDED) touch(op);
        return a;
    }
    void notify(Hooked &h, kvblob_op_t *op, kvblob_notify_event event) override
    {
        h.notify(op, event);
        if (event == KVBLOB_NOTIFY_ACCESS) touch(op);
    }
    kvblob_status release(Hooked &h, kvblob_op_t *op) override
    {
        kvblob_status st = h.next->release(h.inner, op);
        if (st == KVBLOB_OK) touch(op);
        return st;
    }
};
const Registered untouched("lifetime.access-ended.untouched", make<TouchesAfterEnd>);

}  // namespace

}  // namespace kvblob::breaking
