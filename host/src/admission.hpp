// The host's admission check, before anything is dispatched to a driver: a
// batch that breaks a declared limit or names memory the host does not know
// is refused here, and the driver is never called (R-ADM-3 .. R-ADM-7).
// Internal to the host library.
#pragma once

#include <kvblob/kvblob.h>

#include <functional>
#include <string>
#include <vector>

#include "kvblob/host/driver.hpp"

namespace kvblob {

// What the host knows of a registration.
struct RegionRecord {
    const uint8_t *base = nullptr;
    uint64_t size = 0;
    kvblob_memory_kind kind = KVBLOB_MEMORY_HOST;
    uint64_t open_ops = 0;  // admitted operations naming it whose access has not ended
    bool pinned = false;    // named by an operation whose access is unprovable
};

struct AdmissionVerdict {
    std::string rule;  // empty when admitted
    std::string reason;
    std::vector<kvblob_region_t *> regions;  // distinct regions the batch names
};

// Checks batch against caps and the live registrations (find returns null
// for a handle the host does not know).
AdmissionVerdict admit(const kvblob_caps_t &caps, OpKind kind, const kvblob_batch_t &batch,
                       const std::function<const RegionRecord *(kvblob_region_t *)> &find);

}  // namespace kvblob
