// Declares a driver's access-end bound (R-ACC-2; KVBLOB_CAP_ACCESS_BOUND and
// kvblob_caps_t.access_end_bound_ns, ABI 1.1) where the negotiated version
// lays them out: a driver negotiated at 1.0 sets no 1.1 bit and writes no
// member past the 1.0 record (the host sized caps.struct_size for it).
#pragma once

#include <kvblob/kvblob.h>

#include <chrono>
#include <cstddef>

namespace kvblob::support {

inline void declare_access_bound(const kvblob_open_args_t &args, kvblob_caps_t &caps, std::chrono::nanoseconds bound)
{
    constexpr size_t covers = offsetof(kvblob_caps_t, access_end_bound_ns) + sizeof caps.access_end_bound_ns;
    if (args.abi_version < KVBLOB_ABI_1_1 || caps.struct_size < covers) return;
    caps.flags |= KVBLOB_CAP_ACCESS_BOUND;
    caps.access_end_bound_ns = static_cast<uint64_t>(bound.count());
}

}  // namespace kvblob::support
