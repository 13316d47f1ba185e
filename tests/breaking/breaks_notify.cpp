// Breaks of the announcements (R-NTF-1, R-NTF-2, R-NTF-3, R-CAP-2), made
// between the reference and the host's notify: announcements dropped,
// doubled, made at admission before the state they announce, or made late,
// after release may have returned; KVBLOB_CAP_NOTIFY misdeclared.
#include "hook.hpp"

#include <chrono>
#include <cstring>

namespace kvblob::breaking {

namespace {

template <class B>
std::unique_ptr<Break> make()
{
    return std::make_unique<B>();
}

bool final_event(kvblob_notify_event e) { return e == KVBLOB_NOTIFY_FINAL; }

// Drops the announcements Skip(kind, event) names.
template <bool (*Skip)(Kind, kvblob_notify_event)>
struct Drops : Break {
    void notify(Hooked &h, kvblob_op_t *op, kvblob_notify_event event) override
    {
        OpInfo info;
        h.info(op, info);
        if (!Skip(info.kind, event)) h.notify(op, event);
    }
};

bool all(Kind, kvblob_notify_event) { return true; }
bool probe_remove(Kind k, kvblob_notify_event) { return k == Kind::probe || k == Kind::remove; }
bool probe(Kind k, kvblob_notify_event) { return k == Kind::probe; }
bool remove_access(Kind k, kvblob_notify_event e) { return k == Kind::remove && !final_event(e); }
bool access(Kind, kvblob_notify_event e) { return !final_event(e); }
bool gets(Kind k, kvblob_notify_event) { return k == Kind::get; }

// notify.announced: declares notify, never announces.
const Registered announced("notify.announced", make<Drops<all>>);
const Registered not_probe_remove("notify.probe-remove", make<Drops<probe_remove>>);
const Registered not_probe("m.ntf1.probe-not-announced", make<Drops<probe>>);
const Registered not_remove_access("m.ntf1.remove-access-not-announced", make<Drops<remove_access>>);
const Registered not_access("m.ntf1.access-never-announced", make<Drops<access>>);
const Registered not_gets("m.ntf1.gets-not-announced", make<Drops<gets>>);

// Announces At(kind) as soon as it admits, before any row ran, and not when it happens.
template <kvblob_notify_event Event, bool GetsOnly>
struct AtAdmission : Break {
    bool moved(Kind k) const { return !GetsOnly || k == Kind::get; }
    kvblob_status submit(Hooked &h, Kind kind, const kvblob_batch_t *batch, kvblob_op_t **out, char *err,
                         uint32_t cap) override
    {
        kvblob_status st = h.submit(kind, batch, out, err, cap);
        if (st == KVBLOB_OK && (h.caps.flags & KVBLOB_CAP_NOTIFY) && moved(kind)) h.notify(*out, Event);
        return st;
    }
    void notify(Hooked &h, kvblob_op_t *op, kvblob_notify_event event) override
    {
        OpInfo info;
        h.info(op, info);
        if (event != Event || !moved(info.kind)) h.notify(op, event);
    }
};
const Registered final_at_admission("notify.after-state", make<AtAdmission<KVBLOB_NOTIFY_FINAL, false>>);
const Registered get_final_at_admission("m.ntf2.get-final-at-admission",
                                        make<AtAdmission<KVBLOB_NOTIFY_FINAL, true>>);
const Registered access_at_admission("m.ntf2.access-at-admission", make<AtAdmission<KVBLOB_NOTIFY_ACCESS, false>>);

// Announces Event again, Times(rows) more times.
template <kvblob_notify_event Event, bool PerRow>
struct Repeats : Break {
    void notify(Hooked &h, kvblob_op_t *op, kvblob_notify_event event) override
    {
        OpInfo info;
        h.info(op, info);
        h.notify(op, event);
        if (event != Event) return;
        const uint64_t again = PerRow ? info.rows - 1 : 1;
        for (uint64_t i = 0; i < again; ++i) h.notify(op, event);
    }
};
const Registered once("notify.once", make<Repeats<KVBLOB_NOTIFY_FINAL, false>>);
const Registered access_twice("m.ntf3.access-twice", make<Repeats<KVBLOB_NOTIFY_ACCESS, false>>);
const Registered final_per_row("m.ntf3.final-per-row", make<Repeats<KVBLOB_NOTIFY_FINAL, true>>);

// Announces late, from another thread 2 ms on, after release may have returned
// (op as an address only: it may be gone). IsLate(event, last) names which;
// Also: announced on time as well.
template <bool (*IsLate)(kvblob_notify_event, bool), bool Also>
struct Late : Break {
    std::mutex mu;
    std::vector<std::thread> late;
    ~Late() override
    {
        for (auto &t : late) t.join();
    }
    void notify(Hooked &h, kvblob_op_t *op, kvblob_notify_event event) override
    {
        OpInfo info;
        h.info(op, info);
        const bool last = info.announced == (KVBLOB_NOTIFY_FINAL | KVBLOB_NOTIFY_ACCESS);
        if (!IsLate(event, last)) return h.notify(op, event);
        if (Also) h.notify(op, event);
        std::lock_guard lock(mu);
        late.emplace_back([&h, op, event] {
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
            h.notify(op, event);
        });
    }
};
bool last(kvblob_notify_event, bool is_last) { return is_last; }
bool final_late(kvblob_notify_event e, bool) { return final_event(e); }
bool access_late(kvblob_notify_event e, bool) { return !final_event(e); }
const Registered after_release("notify.after-release", make<Late<last, false>>);
const Registered final_after_release("m.ntf3.final-after-release", make<Late<final_late, false>>);
const Registered access_after_release("m.ntf3.access-after-release", make<Late<access_late, false>>);
// m.ntf3.final-retried-late: final once more a little later, "in case the first was lost".
const Registered final_retried("m.ntf3.final-retried-late", make<Late<final_late, true>>);

// open.notify-unlent: at 1.1, notify declared from the version alone; never announces.
struct DeclaresUnlent : Break {
    kvblob_status open(Hooked &h, const kvblob_open_args_t *args, kvblob_caps_t *caps, char *err,
                       uint32_t cap) override
    {
        kvblob_status st = Break::open(h, args, caps, err, cap);
        if (st == KVBLOB_OK && h.abi_version >= KVBLOB_ABI_1_1 && !h.host.notify) caps->flags |= KVBLOB_CAP_NOTIFY;
        h.caps = *caps;
        return st;
    }
};
const Registered unlent("open.notify-unlent", make<DeclaresUnlent>);

// m.cap2.calls-unlent-notify: at 1.1, announces through whatever the record
// holds, NULL included (declaring notify only when it is lent).
struct CallsUnlent : Break {
    kvblob_status open(Hooked &h, const kvblob_open_args_t *args, kvblob_caps_t *caps, char *err,
                       uint32_t cap) override
    {
        if (h.abi_version >= KVBLOB_ABI_1_1 && !h.lent.notify) {
            h.lent.notify = [](void *context, kvblob_op_t *op, kvblob_notify_event event) {
                auto &hk = *static_cast<Hooked *>(context);
                hk.host.notify(hk.host.context, op, event);  // NULL when the host lent none
            };
            h.lent.struct_size = sizeof h.lent;
        }
        kvblob_status st = Break::open(h, args, caps, err, cap);
        if (st == KVBLOB_OK && !h.host.notify) caps->flags &= ~KVBLOB_CAP_NOTIFY;
        h.caps = *caps;
        return st;
    }
};
const Registered calls_unlent("m.cap2.calls-unlent-notify", make<CallsUnlent>);

// m.cap2.notify-past-services: copies the whole services record whatever its
// struct_size, and calls the notify it found there, declaring nothing: the
// reference is opened as for 1.1, lent a record whose notify is the one
// read past the host's 1.0 record, and the host is told only 1.0 bits.
struct NotifyPastServices : Break {
    kvblob_status open(Hooked &h, const kvblob_open_args_t *args, kvblob_caps_t *caps, char *err,
                       uint32_t cap) override
    {
        if (h.abi_version >= KVBLOB_ABI_1_1 || !args->host) return Break::open(h, args, caps, err, cap);
        std::memcpy(&h.host, args->host, sizeof h.host);  // past struct_size
        if (!h.host.notify) return Break::open(h, args, caps, err, cap);
        h.lent.struct_size = sizeof h.lent;
        h.lent.notify = [](void *context, kvblob_op_t *op, kvblob_notify_event event) {
            auto &hk = *static_cast<Hooked *>(context);
            hk.host.notify(hk.host.context, op, event);
        };
        kvblob_open_args_t a = *args;
        a.abi_version = KVBLOB_ABI_1_1;
        a.host = &h.lent;
        kvblob_caps_t full{};
        full.struct_size = sizeof full;
        kvblob_status st = h.next->open(&a, &full, &h.inner, err, cap);
        if (st != KVBLOB_OK) return st;
        full.flags &= KVBLOB_CAP_KNOWN_MASK_1_0;  // says nothing of notify
        full.struct_size = caps->struct_size;
        std::memcpy(caps, &full, std::min<size_t>(caps->struct_size, sizeof full));
        h.caps = *caps;
        return st;
    }
};
const Registered past_services("m.cap2.notify-past-services", make<NotifyPastServices>);

}  // namespace

}  // namespace kvblob::breaking
