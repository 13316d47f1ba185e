// The tiered driver's own record of what its top tier holds, least recently
// used first: the keys it put or promoted there and the gets it answered
// from there. Eviction takes its victims from here and removes them through
// the top tier's remove, so a hot set stays in memory where a plain memory
// tier would DECLINE the next put.
//
// Only a key safely held below is a victim: one the tiered driver wrote
// through (bottom first), promoted from below, or whose write=back copy the
// bottom tier stored. A write=back key not yet stored below, or never (its
// write failed), stays until it is written or removed.
//
// Bounded: at most max_keys keys are recorded. Past that, the oldest
// evictable keys are handed back as victims; when none is evictable the
// oldest record is dropped (its object stays in the tier, no longer a
// candidate), so the record never grows past max_keys.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace kvblob::tiered {

class Recency {
public:
    // budget: bytes the top tier may hold by this record (0: no budget,
    // eviction only when the tier DECLINES).
    Recency(size_t max_keys, uint64_t budget) : max_keys_(max_keys ? max_keys : 1), budget_(budget) {}

    // An operation's keys, each with its object's size, recorded together
    // in order under one lock (not each with a lock of its own).
    struct Use {
        const std::string *key;
        uint64_t hash;  // support::key_hash(*key): admission computed it already
        uint64_t bytes;
    };
    // Each key is in the top tier now, most recently used. below: safely
    // held below. Returns victims the key count pushed out.
    std::vector<std::string> hold(const std::vector<Use> &uses, bool below);
    // A get was answered from the top tier: each key is most recently used
    // (recorded as by hold(..., below_unknown) where it was not).
    std::vector<std::string> touch(const std::vector<Use> &uses, bool below_unknown);
    // The bottom tier stored key's write=back copy: it may be evicted now.
    void written_below(const std::string &key);
    void forget(const std::string &key);
    // Least recently used keys safely held below, oldest first, whose bytes
    // add up to at least bytes (fewer when there are not enough), taken out
    // of the record: the caller removes them from the tier.
    std::vector<std::string> take_victims(uint64_t bytes);
    // How many bytes must go before `incoming` more fit in the budget (0
    // without a budget or when they fit).
    uint64_t over_budget(uint64_t incoming) const;
    bool has_budget() const { return budget_ != 0; }
    uint64_t budget() const { return budget_; }
    size_t size() const;
    // The table's slots now (for tests: it grows and shrinks with the keys).
    size_t slot_count() const;

private:
    // A recorded key, with its hash (support::key_hash, the hash admission
    // gives each row: a key of an operation is looked up and recorded by
    // the hash its Use carries, never hashed again), its object's size,
    // and its place in the order: a list through the entries themselves,
    // oldest to newest.
    struct Entry {
        std::string key;
        uint64_t hash = 0;
        uint64_t bytes = 0;
        bool below = false;
        Entry *older = nullptr, *newer = nullptr;
    };
    // The entries by key: open addressing over their hashes, linear probing
    // in a power-of-two table at most half full, which owns them: a
    // std::unordered_map found a key by a division by its prime bucket
    // count, then again for each node it passed, and compared the bytes of
    // each key in the bucket. Here the hash is compared first, the bytes
    // only where it matches.
    std::vector<std::unique_ptr<Entry>> slots_;
    size_t count_ = 0;
    static constexpr size_t min_slots = 64;
    size_t slot_of(std::string_view key, uint64_t hash) const;  // its slot, or an empty one
    void rehash(size_t size);  // under mu_: the entries into a table of size slots
    // Under mu_: entry in the table (grown as needed), and out of it (the
    // entries after it moved back over the gap, so no probe stops short;
    // the table shrunk where it became sparse).
    Entry &index(std::unique_ptr<Entry> entry);
    std::unique_ptr<Entry> unindex(const Entry &entry);

    // Under mu_: Entry's place in the order.
    void link_newest(Entry &e);
    void unlink(Entry &e);
    void erase(Entry &e);
    // Under mu_: hold, or touch, without trim.
    void hold_one(const Use &use, bool below);
    void touch_one(const Use &use, bool below_unknown);
    std::vector<std::string> trim();  // under mu_: back to max_keys
    // Under mu_: a new entry for use's key, in a kept one where there is one.
    Entry &add(const Use &use);
    Entry *find(std::string_view key, uint64_t hash) const;

    const size_t max_keys_;
    const uint64_t budget_;
    mutable std::mutex mu_;
    // Erased entries, kept with their key's memory for the next new keys,
    // under mu_: a write=back put of 32 keys the bench removed in between
    // allocated an entry and a key for each and freed both again (perf:
    // Recency::hold a sixth of the stack's cost over the memory driver's
    // put of 64 KiB rows). None under AddressSanitizer, so that a touch of
    // an erased entry stays a use after free it reports.
    std::vector<std::unique_ptr<Entry>> spare_;
    Entry *oldest_ = nullptr, *newest_ = nullptr;
    uint64_t bytes_ = 0;
};

}  // namespace kvblob::tiered
