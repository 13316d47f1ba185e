#include "recency.hpp"

#include <kvblob/support/address_sanitizer.hpp>
#include <kvblob/support/key_hash.hpp>

#include <new>

namespace kvblob::tiered {

std::vector<std::string> Recency::hold(const std::vector<Use> &uses, bool below)
{
    std::lock_guard lock(mu_);
    for (const Use &u : uses) hold_one(u, below);
    return trim();
}

std::vector<std::string> Recency::touch(const std::vector<Use> &uses, bool below_unknown)
{
    std::lock_guard lock(mu_);
    for (const Use &u : uses) touch_one(u, below_unknown);
    return trim();
}

namespace {

// Erased nodes kept at most (none under AddressSanitizer: recency.hpp).
constexpr size_t max_spare_nodes = support::address_sanitizer ? 0 : 256;

}  // namespace

Recency::Entries::iterator Recency::add(const Use &use)
{
    if (spare_.empty()) return entries_.try_emplace(StoredKey{*use.key, use.hash}).first;
    Entries::node_type node = std::move(spare_.back());
    spare_.pop_back();
    node.key().text.assign(*use.key);  // into the memory the erased key kept
    node.key().hash = use.hash;
    node.mapped() = Entry{};
    return entries_.insert(std::move(node)).position;  // the caller looked: the key is not there
}

void Recency::hold_one(const Use &use, bool below)
{
    const uint64_t bytes = use.bytes;
    auto it = entries_.find(Hashed{*use.key, use.hash});
    if (it == entries_.end()) {
        it = add(use);
        it->second.key = &it->first;
    } else {
        bytes_ -= it->second.bytes;
        unlink(it->second);
    }
    Entry &e = it->second;
    e.bytes = bytes;
    // Written below once stays written below (keys name content, R-ROW-7):
    // a second put of the key changes nothing there.
    e.below = e.below || below;
    link_newest(e);
    bytes_ += bytes;
}

void Recency::touch_one(const Use &use, bool below_unknown)
{
    auto it = entries_.find(Hashed{*use.key, use.hash});
    if (it == entries_.end()) return hold_one(use, below_unknown);
    unlink(it->second);
    link_newest(it->second);
}

void Recency::link_newest(Entry &e)
{
    e.older = newest_;
    e.newer = nullptr;
    (newest_ ? newest_->newer : oldest_) = &e;
    newest_ = &e;
}

void Recency::unlink(Entry &e)
{
    (e.older ? e.older->newer : oldest_) = e.newer;
    (e.newer ? e.newer->older : newest_) = e.older;
    e.older = e.newer = nullptr;
}

void Recency::erase(Entry &e)
{
    bytes_ -= e.bytes;
    unlink(e);
    auto node = entries_.extract(entries_.find(Hashed{e.key->text, e.key->hash}));
    if (spare_.size() >= max_spare_nodes) return;
    try {
        spare_.push_back(std::move(node));
    } catch (const std::bad_alloc &) {  // not kept: freed with node; the entry is gone either way
    }
}

void Recency::written_below(const std::string &key)
{
    std::lock_guard lock(mu_);
    if (auto it = entries_.find(Hashed{key, support::key_hash(key)}); it != entries_.end()) it->second.below = true;
}

void Recency::forget(const std::string &key)
{
    std::lock_guard lock(mu_);
    if (auto it = entries_.find(Hashed{key, support::key_hash(key)}); it != entries_.end()) erase(it->second);
}

std::vector<std::string> Recency::take_victims(uint64_t bytes)
{
    std::lock_guard lock(mu_);
    std::vector<std::string> out;
    uint64_t freed = 0;
    for (Entry *e = oldest_; e && freed < bytes;) {
        Entry *next = e->newer;
        if (e->below) {
            freed += e->bytes;
            out.push_back(e->key->text);
            erase(*e);
        }
        e = next;
    }
    return out;
}

uint64_t Recency::over_budget(uint64_t incoming) const
{
    if (!budget_) return 0;
    std::lock_guard lock(mu_);
    const uint64_t want = bytes_ + incoming;
    return want > budget_ ? want - budget_ : 0;
}

size_t Recency::size() const
{
    std::lock_guard lock(mu_);
    return entries_.size();
}

std::vector<std::string> Recency::trim()
{
    std::vector<std::string> out;
    while (entries_.size() > max_keys_) {
        // The oldest evictable key goes, from the tier too; with none
        // evictable, the oldest record goes and its object stays.
        Entry *e = oldest_;
        while (e && !e->below) e = e->newer;
        if (!e) e = oldest_;
        if (e->below) out.push_back(e->key->text);
        erase(*e);
    }
    return out;
}

}  // namespace kvblob::tiered
