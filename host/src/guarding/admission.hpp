// The host's admission check, before anything is dispatched to a driver: a
// batch that breaks a declared limit or names memory the host does not know
// is refused here, and the driver is never called (R-ADM-3 .. R-ADM-7).
// Internal to the host library.
//
// It runs on every operation an engine submits, so a batch it admits costs
// no allocation per row: words are put together only for a refusal, and the
// check for repeated keys uses a table each thread keeps and reuses.
#pragma once

#include <kvblob/kvblob.h>

#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kvblob/host/types.hpp"

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
    // Each row's bytes (its spans' lengths) for the metrics: one figure when
    // every row has the same (a batch of equal KV blocks, the usual case,
    // costs no allocation), a list otherwise. Zero for probe and remove.
    uint64_t uniform_row_bytes = 0;
    std::vector<uint64_t> row_bytes;
};

// How admit finds a registration: any callable taking a region handle and
// returning its record, or null for a handle the host does not know. Holds
// a reference to the callable, which outlives the call (no std::function:
// nothing is copied or allocated per operation).
class RegionFinder {
public:
    template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, RegionFinder>>>
    RegionFinder(const F &find)  // NOLINT: converts from any callable, as std::function would
        : context_(&find), call_([](const void *c, kvblob_region_t *r) -> const RegionRecord * {
              return (*static_cast<const F *>(c))(r);
          })
    {
    }
    const RegionRecord *operator()(kvblob_region_t *r) const { return call_(context_, r); }

private:
    const void *context_;
    const RegionRecord *(*call_)(const void *, kvblob_region_t *);
};

// Checks batch against caps and the live registrations; keys_distinct: the
// caller vouched that no key repeats (Vouch::distinct_keys), which is not
// checked again.
AdmissionVerdict admit(const kvblob_caps_t &caps, OpKind kind, const kvblob_batch_t &batch, RegionFinder find,
                       bool keys_distinct = false);

}  // namespace kvblob
