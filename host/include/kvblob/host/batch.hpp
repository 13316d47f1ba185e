// Builds kvblob_batch_t values whose rows, keys and spans stay alive as long
// as the Batch object: for code that speaks to a driver's table directly (the
// conformance battery, tests, tools).
#pragma once

#include <kvblob/kvblob.h>

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace kvblob {

inline kvblob_span_t make_span(kvblob_region_t *region, uint64_t offset, uint64_t length)
{
    return kvblob_span_t{sizeof(kvblob_span_t), 0, region, offset, length};
}

class Batch {
public:
    Batch &row(std::string key, std::vector<kvblob_span_t> spans = {})
    {
        keys_.push_back(std::move(key));
        spans_.push_back(std::move(spans));
        return *this;
    }
    Batch &hint(std::string bytes)
    {
        hint_bytes_ = std::move(bytes);
        hint_ = {sizeof(kvblob_hint_t), 0, hint_bytes_.data(), hint_bytes_.size()};
        has_hint_ = true;
        return *this;
    }
    const kvblob_batch_t &get()
    {
        rows_.clear();
        for (size_t i = 0; i < keys_.size(); ++i)
            rows_.push_back({sizeof(kvblob_row_t), static_cast<uint32_t>(spans_[i].size()),
                             reinterpret_cast<const uint8_t *>(keys_[i].data()), keys_[i].size(),
                             spans_[i].empty() ? nullptr : spans_[i].data()});
        batch_ = {sizeof(kvblob_batch_t), 0, rows_.data(), rows_.size(), has_hint_ ? &hint_ : nullptr};
        return batch_;
    }
    size_t size() const { return keys_.size(); }

private:
    std::deque<std::string> keys_;
    std::deque<std::vector<kvblob_span_t>> spans_;
    std::vector<kvblob_row_t> rows_;
    std::string hint_bytes_;
    kvblob_hint_t hint_{};
    bool has_hint_ = false;
    kvblob_batch_t batch_{};
};

}  // namespace kvblob
