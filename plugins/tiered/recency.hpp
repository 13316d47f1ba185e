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
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
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

private:
    // A recorded key with its hash (KeyHash, below, says why it is kept).
    struct StoredKey {
        std::string text;
        uint64_t hash = 0;
    };
    // The order is a list through the entries themselves (oldest to
    // newest), so a key is stored once, in the map's node: recording a new
    // key is one allocation for the node (and one for a long key), where a
    // separate list of keys cost two more (measured with callgrind: about
    // 1,500 instructions a new key, a quarter of a write=back put's).
    struct Entry {
        uint64_t bytes = 0;
        bool below = false;
        const StoredKey *key = nullptr;  // the map's own key
        Entry *older = nullptr, *newer = nullptr;
    };
    // Keys are hashed with support::key_hash, the hash admission gives each
    // row, and kept with it: a key of an operation is looked up and
    // recorded by the hash it carries (a Use), never hashed again (std::hash
    // of the keys was two fifths of the record's time in a 4 KiB get,
    // measured with perf).
    struct Hashed {
        std::string_view key;
        uint64_t hash;
    };
    struct KeyHash {
        using is_transparent = void;
        size_t operator()(const StoredKey &key) const noexcept { return key.hash; }
        size_t operator()(const Hashed &key) const noexcept { return key.hash; }
    };
    struct KeyEqual {
        using is_transparent = void;
        bool operator()(const StoredKey &a, const StoredKey &b) const noexcept { return a.text == b.text; }
        bool operator()(const Hashed &a, const StoredKey &b) const noexcept { return a.key == b.text; }
        bool operator()(const StoredKey &a, const Hashed &b) const noexcept { return a.text == b.key; }
    };
    using Entries = std::unordered_map<StoredKey, Entry, KeyHash, KeyEqual>;
    // Under mu_: Entry's place in the order.
    void link_newest(Entry &e);
    void unlink(Entry &e);
    void erase(Entry &e);
    // Under mu_: hold, or touch, without trim.
    void hold_one(const Use &use, bool below);
    void touch_one(const Use &use, bool below_unknown);
    std::vector<std::string> trim();  // under mu_: back to max_keys
    // Under mu_: a new entry for use's key, in a kept node where there is one.
    Entries::iterator add(const Use &use);

    const size_t max_keys_;
    const uint64_t budget_;
    mutable std::mutex mu_;
    Entries entries_;
    // Nodes of erased entries, kept with their key's memory for the next
    // new keys, under mu_: a write=back put of 32 keys the bench removed
    // in between allocated a node and a key for each and freed both again
    // (perf: Recency::hold a sixth of the stack's cost over the memory
    // driver's put of 64 KiB rows). None under AddressSanitizer, so that a
    // touch of an erased entry stays a use after free it reports.
    std::vector<Entries::node_type> spare_;
    Entry *oldest_ = nullptr, *newest_ = nullptr;
    uint64_t bytes_ = 0;
};

}  // namespace kvblob::tiered
