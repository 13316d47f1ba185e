// A deep copy of a batch the host gave, for a Break to rewrite (keys,
// spans, hint) before the reference sees it, or to keep past the call.
#pragma once

#include <kvblob/kvblob.h>

#include <string>
#include <vector>

namespace kvblob::breaking {

// A deep copy of a batch, to rewrite before the reference sees it.
struct BatchCopy {
    kvblob_batch_t batch{};
    kvblob_hint_t hint{};
    std::vector<kvblob_row_t> rows;
    std::vector<std::string> keys;
    std::vector<std::vector<kvblob_span_t>> spans;
    explicit BatchCopy(const kvblob_batch_t &b) : batch(b), rows(b.rows, b.rows + (b.rows ? b.row_count : 0))
    {
        keys.reserve(rows.size());
        spans.reserve(rows.size());
        for (auto &r : rows) {
            keys.emplace_back(r.key ? reinterpret_cast<const char *>(r.key) : "", r.key ? r.key_len : 0);
            spans.emplace_back(r.spans, r.spans + (r.spans ? r.span_count : 0));
        }
        if (b.hint) hint = *b.hint;
    }
    // The batch, pointing into this copy.
    const kvblob_batch_t *get()
    {
        for (size_t i = 0; i < rows.size(); ++i) {
            rows[i].key = keys[i].empty() ? nullptr : reinterpret_cast<const uint8_t *>(keys[i].data());
            rows[i].key_len = keys[i].size();
            rows[i].spans = spans[i].empty() ? nullptr : spans[i].data();
            rows[i].span_count = static_cast<uint32_t>(spans[i].size());
        }
        batch.rows = rows.empty() ? batch.rows : rows.data();
        batch.hint = batch.hint ? &hint : nullptr;
        return &batch;
    }
};

}  // namespace kvblob::breaking
