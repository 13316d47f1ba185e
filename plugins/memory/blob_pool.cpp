#include "blob_pool.hpp"

#include <bit>

namespace kvblob::memory {

size_t BlobPool::size_class(size_t size)
{
    if (size <= 4096) return 4096;
    const size_t step = std::bit_floor(size) / 4;
    return (size + step - 1) / step * step;
}

std::shared_ptr<Blob> BlobPool::make(size_t size)
{
    const size_t capacity = size_class(size);
    BlobBytes bytes;
    {
        std::lock_guard lock(mu_);
        auto it = idle_.find(capacity);
        if (it != idle_.end() && !it->second.empty()) {
            bytes = std::move(it->second.back());
            it->second.pop_back();
            idle_bytes_ -= capacity;
        }
    }
    if (!bytes)  // uninitialised: no zeroing pass
        bytes.reset(static_cast<uint8_t *>(::operator new[](capacity, blob_alignment)));
    return std::make_shared<Blob>(std::move(bytes), size, capacity, weak_from_this());
}

Blob::~Blob()
{
    if (auto pool = pool_.lock()) pool->give_back(std::move(bytes_), capacity_);
}

void BlobPool::give_back(BlobBytes bytes, size_t capacity)
{
    std::lock_guard lock(mu_);
    if (idle_bytes_ + capacity > max_idle_bytes_) return;  // freed with bytes
    idle_[capacity].push_back(std::move(bytes));
    idle_bytes_ += capacity;
}

}  // namespace kvblob::memory
