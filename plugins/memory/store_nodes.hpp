// What a memory store's shard map holds per key, built without an
// allocation of its own on a put: the key's bytes inline in the map's node
// (StoredKey), and the nodes of removed keys kept by their shard for the
// next put (NodeCache, NodeAllocator). A put of a new key allocated twice
// before (its node and a std::string of the key), and a remove freed both:
// each allocation that missed malloc's per-thread cache took an atomic
// operation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <string_view>
#include <vector>

namespace kvblob::memory {

// A stored key and its hash (support::key_hash), which the map takes as
// the key's hash: it never hashes a key, on a look-up, where it walks a
// bucket's neighbours, nor on a rehash. Keys up to inline_bytes live in
// the node; longer ones on the heap.
class StoredKey {
public:
    StoredKey(std::string_view text, uint64_t key_hash) : hash(key_hash), size_(text.size())
    {
        char *to = size_ <= inline_bytes ? inline_ : (heap_ = new char[size_]);
        std::memcpy(to, text.data(), size_);
    }
    ~StoredKey() { delete[] heap_; }
    StoredKey(const StoredKey &) = delete;
    StoredKey &operator=(const StoredKey &) = delete;

    std::string_view text() const { return {heap_ ? heap_ : inline_, size_}; }
    const uint64_t hash;

private:
    static constexpr size_t inline_bytes = 64;
    char *heap_ = nullptr;
    const size_t size_;
    char inline_[inline_bytes];
};

// A shard's spare map nodes, used only under the shard's lock (the map is
// changed only there, and destroyed after its last user). Nodes of one
// size: the first node allocated sets it (bucket arrays go to the heap).
class NodeCache {
public:
    NodeCache() = default;
    NodeCache(const NodeCache &) = delete;
    NodeCache &operator=(const NodeCache &) = delete;
    ~NodeCache()
    {
        for (void *node : spare_) ::operator delete(node, node_bytes_);
    }
    void *take(size_t bytes)
    {
        if (node_bytes_ == 0) node_bytes_ = bytes;
        if (bytes != node_bytes_ || spare_.empty()) return ::operator new(bytes);
        void *node = spare_.back();
        spare_.pop_back();
        return node;
    }
    void give_back(void *node, size_t bytes)
    {
        if (bytes == node_bytes_ && spare_.size() < max_spare) {
            spare_.push_back(node);
            return;
        }
        ::operator delete(node, bytes);
    }

private:
    // Per shard: enough for the puts that follow a batch's removes, and a
    // bound on what a store that shrank keeps (a node is about 128 bytes
    // with a key inline: some 32 KiB a shard, 2 MiB a store).
    static constexpr size_t max_spare = 256;
    size_t node_bytes_ = 0;
    std::vector<void *> spare_;
};

template <class T>
struct NodeAllocator {
    using value_type = T;
    explicit NodeAllocator(NodeCache *nodes) : cache(nodes) {}
    template <class U>
    NodeAllocator(const NodeAllocator<U> &other) : cache(other.cache)
    {
    }
    T *allocate(size_t n)
    {
        if (n == 1) return static_cast<T *>(cache->take(sizeof(T)));
        return static_cast<T *>(::operator new(n * sizeof(T)));
    }
    void deallocate(T *p, size_t n)
    {
        if (n == 1) return cache->give_back(p, sizeof(T));
        ::operator delete(p, n * sizeof(T));
    }
    template <class U>
    bool operator==(const NodeAllocator<U> &other) const
    {
        return cache == other.cache;
    }
    NodeCache *cache;
};

}  // namespace kvblob::memory
