#include "copy_buffers.hpp"

#include <utility>

namespace kvblob::tiered {

Bytes CopyBuffers::take(uint64_t size)
{
    Bytes out;
    {
        std::lock_guard lock(mu_);
        size_t best = kept_.size();
        for (size_t i = 0; i < kept_.size(); ++i)
            if (kept_[i].capacity() >= size && (best == kept_.size() || kept_[i].capacity() < kept_[best].capacity()))
                best = i;
        if (best != kept_.size()) {
            out = std::move(kept_[best]);
            kept_[best] = std::move(kept_.back());
            kept_.pop_back();
            kept_bytes_ -= out.capacity();
        }
    }
    out.resize(size);  // within a kept buffer's capacity: no allocation, nothing written
    return out;
}

void CopyBuffers::give_back(Bytes bytes)
{
    bytes.clear();  // keeps the capacity
    std::lock_guard lock(mu_);
    if (bytes.capacity() == 0 || kept_bytes_ + bytes.capacity() > max_kept_) return;  // freed on return
    kept_bytes_ += bytes.capacity();
    kept_.push_back(std::move(bytes));
}

uint64_t CopyBuffers::kept_bytes() const
{
    std::lock_guard lock(mu_);
    return kept_bytes_;
}

}  // namespace kvblob::tiered
