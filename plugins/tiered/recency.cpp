#include "recency.hpp"

#include <kvblob/support/address_sanitizer.hpp>
#include <kvblob/support/key_hash.hpp>

#include <algorithm>
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

// Erased entries kept at most (none under AddressSanitizer: recency.hpp).
constexpr size_t max_spare_entries = support::address_sanitizer ? 0 : 256;

}  // namespace

size_t Recency::slot_of(std::string_view key, uint64_t hash) const
{
    const size_t mask = slots_.size() - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
        const Entry *e = slots_[i].get();
        if (!e || (e->hash == hash && e->key == key)) return i;
    }
}

Recency::Entry *Recency::find(std::string_view key, uint64_t hash) const
{
    return slots_.empty() ? nullptr : slots_[slot_of(key, hash)].get();
}

void Recency::rehash(size_t size)
{
    std::vector<std::unique_ptr<Entry>> previous(size);
    previous.swap(slots_);  // slots_ the new table now, previous the entries
    for (auto &e : previous)
        if (e) slots_[slot_of(e->key, e->hash)] = std::move(e);
}

Recency::Entry &Recency::index(std::unique_ptr<Entry> entry)
{
    if (2 * (count_ + 1) > slots_.size()) rehash(std::max<size_t>(min_slots, 2 * slots_.size()));
    auto &slot = slots_[slot_of(entry->key, entry->hash)];  // the caller looked: the key is not there
    slot = std::move(entry);
    ++count_;
    return *slot;
}

std::unique_ptr<Recency::Entry> Recency::unindex(const Entry &entry)
{
    const size_t mask = slots_.size() - 1;
    size_t gap = slot_of(entry.key, entry.hash);
    std::unique_ptr<Entry> out = std::move(slots_[gap]);
    // Each entry after the gap, up to the first empty slot, moves back into
    // it unless its own first slot lies between the gap and it: a probe for
    // it starts past the gap, and still finds it.
    for (size_t i = (gap + 1) & mask; slots_[i]; i = (i + 1) & mask) {
        const size_t home = slots_[i]->hash & mask;
        if (((i - home) & mask) >= ((i - gap) & mask)) {
            slots_[gap] = std::move(slots_[i]);
            gap = i;
        }
    }
    --count_;
    // Down to a quarter full once an eighth full, so that a burst of keys
    // does not keep its table (up to twice max_keys slots) until close; the
    // entries do not move, only the pointers to them, so a walk of the
    // order (take_victims, trim) goes on across it. Half, then an eighth:
    // a table just grown or shrunk is a quarter full, and as many keys
    // again must come or go before it is rebuilt.
    if (slots_.size() > min_slots && 8 * count_ <= slots_.size()) {
        size_t size = min_slots;
        while (size < 4 * count_) size *= 2;
        rehash(size);
    }
    return out;
}

Recency::Entry &Recency::add(const Use &use)
{
    std::unique_ptr<Entry> entry;
    if (spare_.empty()) {
        entry = std::make_unique<Entry>();
    } else {
        entry = std::move(spare_.back());
        spare_.pop_back();
        std::string memory = std::move(entry->key);  // as new, in the erased key's memory
        *entry = Entry{};
        entry->key = std::move(memory);
    }
    entry->key.assign(*use.key);
    entry->hash = use.hash;
    return index(std::move(entry));
}

void Recency::hold_one(const Use &use, bool below)
{
    const uint64_t bytes = use.bytes;
    Entry *found = find(*use.key, use.hash);
    if (found) {
        bytes_ -= found->bytes;
        unlink(*found);
    }
    Entry &e = found ? *found : add(use);
    e.bytes = bytes;
    // Written below once stays written below (keys name content, R-ROW-7):
    // a second put of the key changes nothing there.
    e.below = e.below || below;
    link_newest(e);
    bytes_ += bytes;
}

void Recency::touch_one(const Use &use, bool below_unknown)
{
    Entry *e = find(*use.key, use.hash);
    if (!e) return hold_one(use, below_unknown);
    if (e == newest_) return;
    unlink(*e);
    link_newest(*e);
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
    std::unique_ptr<Entry> out = unindex(e);
    if (spare_.size() >= max_spare_entries) return;
    try {
        spare_.push_back(std::move(out));
    } catch (const std::bad_alloc &) {  // not kept: freed with out; the entry is gone either way
    }
}

void Recency::written_below(const std::string &key)
{
    std::lock_guard lock(mu_);
    if (Entry *e = find(key, support::key_hash(key))) e->below = true;
}

void Recency::forget(const std::string &key)
{
    std::lock_guard lock(mu_);
    if (Entry *e = find(key, support::key_hash(key))) erase(*e);
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
            out.push_back(e->key);
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
    return count_;
}

size_t Recency::slot_count() const
{
    std::lock_guard lock(mu_);
    return slots_.size();
}

std::vector<std::string> Recency::trim()
{
    std::vector<std::string> out;
    while (count_ > max_keys_) {
        // The oldest evictable key goes, from the tier too; with none
        // evictable, the oldest record goes and its object stays.
        Entry *e = oldest_;
        while (e && !e->below) e = e->newer;
        if (!e) e = oldest_;
        if (e->below) out.push_back(e->key);
        erase(*e);
    }
    return out;
}

}  // namespace kvblob::tiered
