// The batch the tiered driver hands a tier for some rows of one of its own
// operations: each row's key and spans as admitted, each span named in the
// tier's registration of its region. The ABI's batch is valid only for the
// submit call (kvblob/driver.h), so it is built in place, over the rows'
// own keys, into arrays the operation keeps between uses: a get asks its
// top tier on every call, and a Batch of owned strings cost an allocation
// or three a row (measured with callgrind: a third of the driver's own
// instructions on a 4 KiB get the top tier answers).
#pragma once

#include <kvblob/kvblob.h>
#include <kvblob/support/driver_base.hpp>

#include <utility>
#include <vector>

namespace kvblob::tiered {

class TierBatch {
public:
    // Where a region of the operation is registered with the tier (null:
    // it is not).
    using Mapping = std::vector<std::pair<const support::Region *, kvblob_region_t *>>;

    // The batch of rows (indices into op.rows), with op's hint, valid
    // until the next build; null when a span's region is not registered
    // with the tier.
    const kvblob_batch_t *build(const support::Op &op, const std::vector<size_t> &rows, const Mapping &mapped);
    // An empty mapping for the next build, kept with the arrays.
    Mapping &mapping()
    {
        mapped_.clear();
        return mapped_;
    }

private:
    Mapping mapped_;
    std::vector<kvblob_row_t> rows_;
    std::vector<kvblob_span_t> spans_;
    kvblob_hint_t hint_{};
    kvblob_batch_t batch_{};
};

}  // namespace kvblob::tiered
