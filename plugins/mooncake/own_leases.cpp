#include "own_leases.hpp"

namespace kvblob::mooncake {

void OwnLeases::took(const std::string &key)
{
    if (ttl_.count() <= 0) return;
    const auto now = Clock::now();
    const auto end = now + ttl_;
    std::lock_guard lock(mu_);
    forget_expired(now);
    while (order_.size() >= capacity_) {
        const auto &[t, k] = order_.front();
        if (auto it = until_.find(k); it != until_.end() && it->second == t) until_.erase(it);
        order_.pop_front();
    }
    until_[key] = end;
    order_.emplace_back(end, key);
}

std::optional<OwnLeases::Clock::time_point> OwnLeases::until(const std::string &key)
{
    const auto now = Clock::now();
    std::lock_guard lock(mu_);
    forget_expired(now);
    auto it = until_.find(key);
    if (it == until_.end()) return std::nullopt;
    return it->second;
}

void OwnLeases::forget_expired(Clock::time_point now)
{
    while (!order_.empty() && order_.front().first <= now) {
        const auto &[t, k] = order_.front();
        if (auto it = until_.find(k); it != until_.end() && it->second == t) until_.erase(it);
        order_.pop_front();
    }
}

}  // namespace kvblob::mooncake
