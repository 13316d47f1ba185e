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

    // Lease ends are kept rounded up to this: a key read again and again
    // within one tick is remembered once, not once per read (each entry
    // cost a string copy, and a key read 10,000 times a second held
    // 100,000 of them through a 10 s lease: 5-7 us of a 64 KiB x 8 get,
    // docs/notes/2026-12-04-performance-experiments.md). A lease is waited for at most this much longer.
    static constexpr std::chrono::milliseconds tick{1};

    // A call that may have leased key returned now: the lease it took, if
    // any, runs out by now + ttl (the master granted it before answering),
    // rounded up to a tick.
    void took(const std::string &key);
    // When the lease this driver's own calls took on key runs out, at the
    // latest; none when it took none, or it has run out.
    std::optional<Clock::time_point> until(const std::string &key);
    // Lease ends remembered, stale ones included (for tests: what the
    // rounding to a tick saves).
    size_t remembered();

private:
    void forget_expired(Clock::time_point now);

    const std::chrono::milliseconds ttl_;
    const size_t capacity_;
    std::mutex mu_;
    std::unordered_map<std::string, Clock::time_point> until_;
    // Keys in the order their leases run out, once per tick a call leased
    // them in; an entry is stale when until_ holds a later time. An entry
    // points at its key in until_'s node, which outlives it: the entry
    // that erases a key is its latest, so every earlier one left first.
    std::deque<std::pair<Clock::time_point, const std::string *>> order_;
};

}  // namespace kvblob::mooncake
