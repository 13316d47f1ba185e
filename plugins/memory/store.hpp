// The in-process object store behind the memory driver. Drivers opened with
// the same store name share one Store; it lives while any of them is open.
//
// Sharded by key hash so that no lock is global on the data path, and no
// lock is ever held across a copy: objects are immutable buffers handed out
// by shared_ptr, built outside the lock and swapped in.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "blob_pool.hpp"
#include "store_nodes.hpp"
#include "kvblob/support/key_hash.hpp"

namespace kvblob::memory {

using Object = std::shared_ptr<const Blob>;

// A key with its hash (support::key_hash), which picks the shard and the
// map's bucket. The driver passes the hash its admission computed
// (Row::key_hash); other callers let it be computed here. The store takes
// it by reference: passed by value, it was written as three words and read
// back by one wider load that the core could not forward from its store
// buffer, a quarter of a get row's own time (perf annotate).
struct KeyRef {
    KeyRef(std::string_view key) : text(key), hash(support::key_hash(key)) {}
    KeyRef(const std::string &key) : KeyRef(std::string_view(key)) {}
    KeyRef(std::string_view key, uint64_t key_hash) : text(key), hash(key_hash) {}
    std::string_view text;
    uint64_t hash;
};

class Store {
public:
    // The store of that name, created with capacity (0: no limit) by its
    // first opener; later openers share it as it is.
    static std::shared_ptr<Store> named(const std::string &name, uint64_t capacity);

    enum class State { absent, writing, complete };
    struct Lookup {
        State state = State::absent;
        Object object;
    };
    Lookup find(const KeyRef &key) const;

    enum class Reservation { reserved, exists, writing, full };
    struct Entry;
    struct Shard;
    // Where a reserved key's entry lies: its commit reaches it without
    // hashing and looking the key up again. The entry stays put (map nodes
    // do not move) and no one else erases it until it is committed.
    struct Claim {
        Entry *entry = nullptr;
    };
    // Claims key for a writer that will store bytes (payload and trailer);
    // accounts them against the capacity, where the store has one.
    // Reserved: claim says where.
    Reservation reserve(const KeyRef &key, uint64_t bytes, Claim &claim);
    // Publishes a reserved key's object: from here readers see it whole.
    // Takes no lock (Entry::committed).
    void commit(const Claim &claim, Object object);
    // Gives up a reservation whose object could not be built (R-ROW-8).
    void abandon(const KeyRef &key);
    // Buffers for the objects of an operation's rows, of sizes bytes each
    // (payload and trailer; 0: none), taken at once; a row's buffer made
    // its object; those no row used given back at once (BlobPool).
    void take_buffers(const std::vector<size_t> &sizes, std::vector<BlobBytes> &out) { pool_->take(sizes, out); }
    std::shared_ptr<Blob> object_in(BlobBytes bytes, size_t size) { return pool_->wrap(std::move(bytes), size); }
    void give_back(std::vector<BlobBytes> &buffers, const std::vector<size_t> &sizes)
    {
        pool_->give_back(buffers, sizes);
    }

    enum class Removal { removed, absent, writing };
    Removal remove(const KeyRef &key);

    // Scenario hooks: another client holds key uncommitted; an object is
    // corrupted at rest.
    bool hold_for_foreign_writer(const KeyRef &key);
    void drop_foreign_writer(const KeyRef &key);
    bool corrupt(const KeyRef &key);

    uint64_t capacity() const { return capacity_; }

    struct Entry {
        Entry(bool held_by_foreign, uint64_t bytes) : foreign(held_by_foreign), reserved(bytes) {}
        // Whether readers may take object. Until then the entry's writer
        // alone touches object, and no one erases the entry but that
        // writer (abandon): so its commit writes object unlocked and then
        // sets committed (release); a reader, under the shard's lock, reads
        // committed (acquire) before object.
        bool complete() const { return committed.load(std::memory_order_acquire); }
        Object object;
        std::atomic<bool> committed{false};
        const bool foreign;  // held by a staged foreign writer
        const uint64_t reserved;
    };
    struct StoredHash {
        using is_transparent = void;
        size_t operator()(const StoredKey &k) const noexcept { return static_cast<size_t>(k.hash); }
        size_t operator()(const KeyRef &k) const noexcept { return static_cast<size_t>(k.hash); }
    };
    struct StoredEqual {
        using is_transparent = void;
        static std::string_view text(const StoredKey &k) { return k.text(); }
        static std::string_view text(const KeyRef &k) { return k.text; }
        template <class A, class B>
        bool operator()(const A &a, const B &b) const noexcept
        {
            return a.hash == b.hash && text(a) == text(b);
        }
    };
    using Map = std::unordered_map<StoredKey, Entry, StoredHash, StoredEqual,
                                   NodeAllocator<std::pair<const StoredKey, Entry>>>;
    struct Shard {
        Shard() : map(0, StoredHash{}, StoredEqual{}, Map::allocator_type(&nodes)) {}
        mutable std::mutex mu;
        NodeCache nodes;  // before map, which gives its nodes back to it as it goes
        Map map;
    };

private:
    explicit Store(uint64_t capacity);

    // A shard from the hash's top bits: its map's buckets come from the
    // same hash modulo a prime, and keys that share their low bits would
    // crowd them.
    Shard &shard(const KeyRef &key) { return shards_[key.hash >> shard_shift]; }
    const Shard &shard(const KeyRef &key) const { return shards_[key.hash >> shard_shift]; }

    // Declared before the shards: objects still stored when the store goes
    // give their buffers back to a live pool.
    std::shared_ptr<BlobPool> pool_;
    static constexpr size_t shard_count = 64;
    static constexpr unsigned shard_shift = 64 - 6;  // the hash's top log2(shard_count) bits
    static_assert(size_t{1} << (64 - shard_shift) == shard_count);
    std::array<Shard, shard_count> shards_;
    const uint64_t capacity_;
    // Bytes reserved against capacity_; not counted where there is none
    // (an atomic update less on every put and remove).
    std::atomic<uint64_t> used_{0};
};

}  // namespace kvblob::memory
