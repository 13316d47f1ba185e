#include "store.hpp"

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <tuple>
#include <utility>

namespace kvblob::memory {

std::shared_ptr<Store> Store::named(const std::string &name, uint64_t capacity)
{
    static std::mutex mu;
    static std::map<std::string, std::weak_ptr<Store>> stores;
    std::lock_guard lock(mu);
    if (auto existing = stores[name].lock()) return existing;
    std::shared_ptr<Store> store(new Store(capacity));
    stores[name] = store;
    return store;
}

// Buffers of removed objects kept for reuse: at most this much, and at most
// the store's capacity when it has one.
constexpr uint64_t max_idle_bytes = 1ull << 30;

Store::Store(uint64_t capacity)
    : pool_(std::make_shared<BlobPool>(capacity ? std::min(capacity, max_idle_bytes) : max_idle_bytes)),
      capacity_(capacity)
{
}

Store::Lookup Store::find(const KeyRef &key) const
{
    const Shard &s = shard(key);
    std::lock_guard lock(s.mu);
    auto it = s.map.find(key);
    if (it == s.map.end()) return {};
    if (!it->second.complete()) return {State::writing, nullptr};
    return {State::complete, it->second.object};
}

Store::Reservation Store::reserve(const KeyRef &key, uint64_t bytes, Claim &claim)
{
    Shard &s = shard(key);
    std::lock_guard lock(s.mu);
    // One lookup that claims the key, given back if the bytes do not fit.
    // Built in its node (from the shard's spares) before the look-up: a
    // key already there gives the node back.
    auto [it, claimed] = s.map.emplace(std::piecewise_construct, std::forward_as_tuple(key.text, key.hash),
                                       std::forward_as_tuple(false, bytes));
    if (!claimed) return it->second.complete() ? Reservation::exists : Reservation::writing;
    if (capacity_) {
        uint64_t used = used_.load();
        do {
            if (bytes > capacity_ || used > capacity_ - bytes) {
                s.map.erase(it);
                return Reservation::full;
            }
        } while (!used_.compare_exchange_weak(used, used + bytes));
    }
    claim = {&it->second};
    return Reservation::reserved;
}

void Store::commit(const Claim &claim, Object object)
{
    claim.entry->object = std::move(object);
    claim.entry->committed.store(true, std::memory_order_release);
}

void Store::abandon(const KeyRef &key)
{
    Shard &s = shard(key);
    std::lock_guard lock(s.mu);
    auto it = s.map.find(key);
    if (it == s.map.end() || it->second.complete() || it->second.foreign) return;
    if (capacity_) used_.fetch_sub(it->second.reserved);
    s.map.erase(it);
}

Store::Removal Store::remove(const KeyRef &key)
{
    Shard &s = shard(key);
    std::lock_guard lock(s.mu);
    auto it = s.map.find(key);
    if (it == s.map.end()) return Removal::absent;
    if (!it->second.complete()) return Removal::writing;
    if (capacity_) used_.fetch_sub(it->second.reserved);
    s.map.erase(it);
    return Removal::removed;
}

bool Store::hold_for_foreign_writer(const KeyRef &key)
{
    Shard &s = shard(key);
    std::lock_guard lock(s.mu);
    return s.map
        .emplace(std::piecewise_construct, std::forward_as_tuple(key.text, key.hash), std::forward_as_tuple(true, 0))
        .second;
}

void Store::drop_foreign_writer(const KeyRef &key)
{
    Shard &s = shard(key);
    std::lock_guard lock(s.mu);
    auto it = s.map.find(key);
    if (it != s.map.end() && it->second.foreign && !it->second.complete()) s.map.erase(it);
}

bool Store::corrupt(const KeyRef &key)
{
    Shard &s = shard(key);
    std::lock_guard lock(s.mu);
    auto it = s.map.find(key);
    if (it == s.map.end() || !it->second.complete() || it->second.object->empty()) return false;
    const Blob &stored = *it->second.object;
    auto damaged = pool_->make(stored.size());
    std::memcpy(damaged->data(), stored.data(), stored.size());
    damaged->data()[0] ^= 0xFF;  // the first payload byte: only the checksum can tell
    it->second.object = std::move(damaged);
    return true;
}

}  // namespace kvblob::memory
