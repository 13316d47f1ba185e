#include "recency.hpp"

namespace kvblob::tiered {

std::vector<std::string> Recency::hold(const std::string &key, uint64_t bytes, bool below)
{
    return hold({{&key, bytes}}, below);
}

std::vector<std::string> Recency::touch(const std::string &key, uint64_t bytes, bool below_unknown)
{
    return touch({{&key, bytes}}, below_unknown);
}

std::vector<std::string> Recency::hold(const std::vector<Use> &uses, bool below)
{
    std::lock_guard lock(mu_);
    for (const Use &u : uses) hold_one(*u.key, u.bytes, below);
    return trim();
}

std::vector<std::string> Recency::touch(const std::vector<Use> &uses, bool below_unknown)
{
    std::lock_guard lock(mu_);
    for (const Use &u : uses) touch_one(*u.key, u.bytes, below_unknown);
    return trim();
}

void Recency::hold_one(const std::string &key, uint64_t bytes, bool below)
{
    auto it = entries_.find(key);
    if (it != entries_.end()) {
        bytes_ -= it->second.bytes;
        it->second.bytes = bytes;
        // Written below once stays written below (keys name content,
        // R-ROW-7): a second put of the key changes nothing there.
        it->second.below = it->second.below || below;
        order_.splice(order_.end(), order_, it->second.at);
    } else {
        order_.push_back(key);
        entries_.emplace(key, Entry{bytes, below, std::prev(order_.end())});
    }
    bytes_ += bytes;
}

void Recency::touch_one(const std::string &key, uint64_t bytes, bool below_unknown)
{
    auto it = entries_.find(key);
    if (it == entries_.end()) return hold_one(key, bytes, below_unknown);
    order_.splice(order_.end(), order_, it->second.at);
}

void Recency::written_below(const std::string &key)
{
    std::lock_guard lock(mu_);
    if (auto it = entries_.find(key); it != entries_.end()) it->second.below = true;
}

void Recency::forget(const std::string &key)
{
    std::lock_guard lock(mu_);
    if (auto it = entries_.find(key); it != entries_.end()) erase(it);
}

void Recency::erase(std::unordered_map<std::string, Entry>::iterator it)
{
    bytes_ -= it->second.bytes;
    order_.erase(it->second.at);
    entries_.erase(it);
}

std::vector<std::string> Recency::take_victims(uint64_t bytes)
{
    std::lock_guard lock(mu_);
    std::vector<std::string> out;
    uint64_t freed = 0;
    for (auto at = order_.begin(); at != order_.end() && freed < bytes;) {
        auto it = entries_.find(*at);
        ++at;
        if (!it->second.below) continue;
        freed += it->second.bytes;
        out.push_back(it->first);
        erase(it);
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
        auto at = order_.begin();
        while (at != order_.end() && !entries_.find(*at)->second.below) ++at;
        if (at == order_.end()) at = order_.begin();
        auto it = entries_.find(*at);
        if (it->second.below) out.push_back(it->first);
        erase(it);
    }
    return out;
}

}  // namespace kvblob::tiered
