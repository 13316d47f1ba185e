#include "tier_batch.hpp"

namespace kvblob::tiered {

const kvblob_batch_t *TierBatch::build(const support::Op &op, const std::vector<size_t> &rows, const Mapping &mapped)
{
    // Every span first, so that the rows can point into spans_ once it no
    // longer grows.
    spans_.clear();
    for (size_t i : rows)
        for (const support::SpanRef &s : op.rows[i].spans) {
            kvblob_region_t *h = nullptr;
            uint64_t offset = 0;
            for (const auto &[r, th] : mapped)
                if (s.data >= r->base && s.data + s.length <= r->base + r->size) {
                    h = th;
                    offset = static_cast<uint64_t>(s.data - r->base);
                    break;
                }
            if (!h) return nullptr;
            spans_.push_back(kvblob_span_t{sizeof(kvblob_span_t), 0, h, offset, s.length});
        }
    rows_.clear();
    size_t first_span = 0;
    for (size_t i : rows) {
        const support::Row &row = op.rows[i];
        const size_t n = row.spans.size();
        rows_.push_back(kvblob_row_t{sizeof(kvblob_row_t), static_cast<uint32_t>(n),
                                     reinterpret_cast<const uint8_t *>(row.key.data()), row.key.size(),
                                     n ? spans_.data() + first_span : nullptr});
        first_span += n;
    }
    hint_ = {sizeof(kvblob_hint_t), 0, op.hint.data(), op.hint.size()};
    batch_ = {sizeof(kvblob_batch_t), 0, rows_.data(), rows_.size(), op.hint.empty() ? nullptr : &hint_};
    return &batch_;
}

}  // namespace kvblob::tiered
