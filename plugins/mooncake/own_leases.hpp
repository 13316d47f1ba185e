// The leases this driver's own calls took. Mooncake's master grants a
// lease (its default_kv_lease_ttl, 10 s by default) to every object a get,
// is_exist or get_size finds complete, and refuses to remove the object
// (OBJECT_HAS_LEASE) until it runs out: the lease outlives the read that
// took it. A remove of a key this driver itself read waits out the lease
// that read took, and no other: a lease it did not take protects another
// client's read, and is answered NOT_READY (README.md in this folder).
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

namespace kvblob::mooncake {

class OwnLeases {
public:
    using Clock = std::chrono::steady_clock;

    // ttl: the master's default_kv_lease_ttl; capacity: the most keys
    // remembered (the oldest are forgotten first, and a forgotten lease is
    // simply not waited for).
    explicit OwnLeases(std::chrono::milliseconds ttl, size_t capacity = size_t(1) << 20)
        : ttl_(ttl), capacity_(capacity)
    {
    }

    // A call that may have leased key returned now: the lease it took, if
    // any, runs out by now + ttl (the master granted it before answering).
    void took(const std::string &key);
    // When the lease this driver's own calls took on key runs out, at the
    // latest; none when it took none, or it has run out.
    std::optional<Clock::time_point> until(const std::string &key);

private:
    void forget_expired(Clock::time_point now);

    const std::chrono::milliseconds ttl_;
    const size_t capacity_;
    std::mutex mu_;
    std::unordered_map<std::string, Clock::time_point> until_;
    // Keys in the order their leases run out (a key appears once per call
    // that leased it; an entry is stale when until_ holds a later time).
    std::deque<std::pair<Clock::time_point, std::string>> order_;
};

}  // namespace kvblob::mooncake
