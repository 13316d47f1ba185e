// Breaks of R-CAP-2 where a driver decides by a record's size, not by the
// negotiated ABI version.
#include "hook.hpp"

#include <algorithm>
#include <cstring>

namespace kvblob::breaking {

namespace {

// m.cap2.notify-by-record-size: at 1.0, declares notify (a 1.1 bit) and
// announces through the services record's notify whenever the record is
// large enough to hold it: the reference opened as for 1.1, lent the
// host's notify (read within the record's struct_size), and the host told
// of notify.
struct NotifyByRecordSize : Break {
    kvblob_status open(Hooked &h, const kvblob_open_args_t *args, kvblob_caps_t *caps, char *err,
                       uint32_t cap) override
    {
        constexpr size_t covers_notify =
            offsetof(kvblob_host_services_t, notify) + sizeof(kvblob_host_services_t::notify);
        if (h.abi_version >= KVBLOB_ABI_1_1 || !args->host || args->host->struct_size < covers_notify ||
            !h.host.notify)
            return Break::open(h, args, caps, err, cap);
        kvblob_open_args_t a = *args;
        a.abi_version = KVBLOB_ABI_1_1;
        a.host = &h.lent;  // its notify forwards to the host's (hook.cpp)
        kvblob_caps_t full{};
        full.struct_size = sizeof full;
        const kvblob_status st = h.next->open(&a, &full, &h.inner, err, cap);
        if (st != KVBLOB_OK) return st;
        full.flags &= KVBLOB_CAP_KNOWN_MASK_1_0 | KVBLOB_CAP_NOTIFY;
        full.struct_size = caps->struct_size;
        std::memcpy(caps, &full, std::min<size_t>(caps->struct_size, sizeof full));
        h.caps = *caps;
        return st;
    }
};
const Registered by_size("m.cap2.notify-by-record-size", [] { return std::make_unique<NotifyByRecordSize>(); });

}  // namespace

}  // namespace kvblob::breaking
