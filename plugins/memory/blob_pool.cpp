#include "blob_pool.hpp"

#include <algorithm>
#include <bit>

namespace kvblob::memory {

size_t BlobPool::size_class(size_t size)
{
    if (size <= 4096) return 4096;
    const size_t step = std::bit_floor(size) / 4;
    return (size + step - 1) / step * step;
}

// Under mu_: an idle buffer of that capacity, or none.
BlobBytes BlobPool::take_idle(size_t capacity)
{
    auto it = idle_.find(capacity);
    if (it == idle_.end() || it->second.empty()) return {};
    BlobBytes bytes = std::move(it->second.back());
    it->second.pop_back();
    idle_bytes_ -= capacity;
    return bytes;
}

// Under mu_: kept while the idle bound allows, else freed with bytes.
void BlobPool::keep_idle(BlobBytes bytes, size_t capacity)
{
    if (idle_bytes_ + capacity > max_idle_bytes_) return;
    idle_[capacity].push_back(std::move(bytes));
    idle_bytes_ += capacity;
}

namespace {

// Uninitialised: no zeroing pass.
BlobBytes fresh(size_t capacity)
{
    return BlobBytes(static_cast<uint8_t *>(::operator new[](capacity, blob_alignment)));
}

}  // namespace

BlobBytes BlobPool::take(size_t size)
{
    const size_t capacity = size_class(size);
    BlobBytes bytes;
    {
        std::lock_guard lock(mu_);
        bytes = take_idle(capacity);
    }
    return bytes ? std::move(bytes) : fresh(capacity);
}

void BlobPool::take(const std::vector<size_t> &sizes, std::vector<BlobBytes> &out)
{
    out.resize(sizes.size());
    {
        std::lock_guard lock(mu_);
        // The rows of an operation mostly share one size: one look-up in
        // idle_ per run of a size class.
        std::vector<BlobBytes> *idle = nullptr;
        size_t idle_capacity = 0;
        for (size_t i = 0; i < sizes.size(); ++i) {
            if (!sizes[i]) continue;
            const size_t capacity = size_class(sizes[i]);
            if (capacity != idle_capacity) {
                auto it = idle_.find(capacity);
                idle = it == idle_.end() ? nullptr : &it->second;
                idle_capacity = capacity;
            }
            if (!idle || idle->empty()) continue;
            out[i] = std::move(idle->back());
            idle->pop_back();
            idle_bytes_ -= capacity;
        }
    }
    for (size_t i = 0; i < sizes.size(); ++i)
        if (sizes[i] && !out[i]) out[i] = fresh(size_class(sizes[i]));
}

std::shared_ptr<Blob> BlobPool::wrap(BlobBytes bytes, size_t size)
{
    return std::make_shared<Blob>(std::move(bytes), size, size_class(size), weak_from_this());
}

void BlobPool::give_back(std::vector<BlobBytes> &buffers, const std::vector<size_t> &sizes)
{
    // Mostly every row used its buffer: then no lock.
    if (std::none_of(buffers.begin(), buffers.end(), [](const BlobBytes &b) { return bool(b); })) {
        buffers.clear();
        return;
    }
    std::lock_guard lock(mu_);
    for (size_t i = 0; i < buffers.size(); ++i)
        if (buffers[i]) keep_idle(std::move(buffers[i]), size_class(sizes[i]));
    buffers.clear();
}

Blob::~Blob()
{
    if (auto pool = pool_.lock()) pool->give_back(std::move(bytes_), capacity_);
}

void BlobPool::give_back(BlobBytes bytes, size_t capacity)
{
    std::lock_guard lock(mu_);
    keep_idle(std::move(bytes), capacity);
}

}  // namespace kvblob::memory
