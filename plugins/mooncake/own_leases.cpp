#include "own_leases.hpp"

namespace kvblob::mooncake {

void OwnLeases::took(const std::string &key)
{
    if (ttl_.count() <= 0) return;
    const auto now = Clock::now();
    const auto end = std::chrono::ceil<std::chrono::milliseconds>(now + ttl_);
    std::lock_guard lock(mu_);
    forget_expired(now);
    auto found = until_.find(key);
    if (found != until_.end() && found->second == end) return;  // remembered this tick
    while (order_.size() >= capacity_) {
        const auto [t, k] = order_.front();
        order_.pop_front();
        if (auto it = until_.find(*k); it != until_.end() && it->second == t) {
            if (it == found) found = until_.end();
            until_.erase(it);
        }
    }
    if (found == until_.end()) found = until_.emplace(key, end).first;
    found->second = end;
    order_.emplace_back(end, &found->first);
}

size_t OwnLeases::remembered()
{
    std::lock_guard lock(mu_);
    return order_.size();
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
        const auto [t, k] = order_.front();
        order_.pop_front();
        if (auto it = until_.find(*k); it != until_.end() && it->second == t) until_.erase(it);
    }
}

}  // namespace kvblob::mooncake
