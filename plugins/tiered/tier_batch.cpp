#include "tier_batch.hpp"

namespace kvblob::tiered {

const kvblob_batch_t *TierBatch::build(const support::Op &op, const std::vector<size_t> &rows, const Mapping &mapped)
{
    // Every span first, so that the rows can point into spans_ once it no
    // longer grows. Written in place over the kept capacity, and each span
    // looked for first in the region of the span before it (most spans of
    // an operation are in one region): a push_back a span and a row, and
    // a walk of the mapping a span, were a third of this (callgrind, 4 KiB
    // x 32 gets).
    size_t span_count = 0;
    for (size_t i : rows) span_count += op.rows[i].spans.size();
    spans_.resize(span_count);
    const std::pair<const support::Region *, kvblob_region_t *> *last = nullptr;
    const auto inside = [](const support::SpanRef &s, const support::Region &r) {
        return s.data >= r.base && s.data + s.length <= r.base + r.size;
    };
    kvblob_span_t *out = spans_.data();
    for (size_t i : rows)
        for (const support::SpanRef &s : op.rows[i].spans) {
            if (!last || !inside(s, *last->first)) {
                last = nullptr;
                for (const auto &m : mapped)
                    if (inside(s, *m.first)) {
                        last = &m;
                        break;
                    }
            }
            if (!last || !last->second) return nullptr;
            *out++ = kvblob_span_t{sizeof(kvblob_span_t), 0, last->second,
                                   static_cast<uint64_t>(s.data - last->first->base), s.length};
        }
    rows_.resize(rows.size());
    kvblob_span_t *first_span = spans_.data();
    for (size_t k = 0; k < rows.size(); ++k) {
        const support::Row &row = op.rows[rows[k]];
        const size_t n = row.spans.size();
        rows_[k] = kvblob_row_t{sizeof(kvblob_row_t), static_cast<uint32_t>(n),
                                reinterpret_cast<const uint8_t *>(row.key.data()), row.key.size(),
                                n ? first_span : nullptr};
        first_span += n;
    }
    hint_ = {sizeof(kvblob_hint_t), 0, op.hint.data(), op.hint.size()};
    batch_ = {sizeof(kvblob_batch_t), 0, rows_.data(), rows_.size(), op.hint.empty() ? nullptr : &hint_};
    return &batch_;
}

}  // namespace kvblob::tiered
