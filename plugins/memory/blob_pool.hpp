// The memory store's object buffers. A store that takes fresh pages from
// the kernel for every object pays a page fault and a zeroing per 4 KiB
// before its copy even starts; objects here come from a pool that keeps
// the buffers of removed objects (up to a bound) and hands them out again,
// uninitialised, to objects of the same size class.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

namespace kvblob::memory {

// An object's buffer starts at a cache line: the copy-and-checksum's 64-byte
// stores and loads never straddle two lines (each that did would cost a
// second access).
constexpr std::align_val_t blob_alignment{64};
struct BlobBytesFree {
    void operator()(uint8_t *p) const { ::operator delete[](p, blob_alignment); }
};
using BlobBytes = std::unique_ptr<uint8_t[], BlobBytesFree>;

class BlobPool;

// An object's bytes: payload and trailer. Written once by the put that
// builds it, immutable once published. Its buffer goes back to the pool it
// came from when it goes (while that pool lives); built by make_shared, so
// an object costs one allocation for itself and its count, not two.
class Blob {
public:
    Blob(BlobBytes bytes, size_t size, size_t capacity, std::weak_ptr<BlobPool> pool)
        : bytes_(std::move(bytes)), size_(size), capacity_(capacity), pool_(std::move(pool))
    {
    }
    ~Blob();
    Blob(const Blob &) = delete;
    Blob &operator=(const Blob &) = delete;
    uint8_t *data() { return bytes_.get(); }
    const uint8_t *data() const { return bytes_.get(); }
    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }

private:
    BlobBytes bytes_;
    size_t size_, capacity_;
    std::weak_ptr<BlobPool> pool_;
};

class BlobPool : public std::enable_shared_from_this<BlobPool> {
public:
    explicit BlobPool(uint64_t max_idle_bytes) : max_idle_bytes_(max_idle_bytes) {}
    // A buffer of size bytes, contents unspecified; returned to this pool
    // when the last reference to it goes.
    std::shared_ptr<Blob> make(size_t size) { return wrap(take(size), size); }

    // For an operation's rows at once: take a buffer for each size with
    // one lock (a lock per row cost a put about a tenth of its time at
    // 4 KiB), wrap those a row uses, give back the others with one lock.
    // Each holds size_class(size) bytes; an empty size takes nothing.
    void take(const std::vector<size_t> &sizes, std::vector<BlobBytes> &out);
    std::shared_ptr<Blob> wrap(BlobBytes bytes, size_t size);
    void give_back(std::vector<BlobBytes> &buffers, const std::vector<size_t> &sizes);

    // Sizes are rounded up to one of four classes per power of two, so a
    // buffer is at most a quarter larger than asked.
    static size_t size_class(size_t size);

private:
    friend class Blob;
    BlobBytes take(size_t size);
    void give_back(BlobBytes bytes, size_t capacity);
    // Under mu_.
    BlobBytes take_idle(size_t capacity);
    void keep_idle(BlobBytes bytes, size_t capacity);

    const uint64_t max_idle_bytes_;
    std::mutex mu_;
    std::map<size_t, std::vector<BlobBytes>> idle_;
    uint64_t idle_bytes_ = 0;
};

}  // namespace kvblob::memory
