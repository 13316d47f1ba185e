// Locks by key, striped by the key's hash, so that a remove never lands
// between a promotion's read of a row and its put of that row into the
// tiers above: the promotion would put a key back that a READY remove took
// out of every tier (R-RMV-1), and under write=back the next put of the key
// would then find the old object in the top tier (READY without a byte
// moved, R-ROW-7) and the writer would copy the old bytes below.
//
// A promotion holds its keys' stripes shared from its read until its last
// put; a remove holds its keys' stripes exclusively across its tiers. So a
// promotion that read first is removed by the remove, and one that reads
// after it reads a MISS and promotes nothing. Both lock the stripes they
// need in ascending order, each once, so they never wait for each other in
// a circle.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <shared_mutex>
#include <vector>

namespace kvblob::tiered {

class KeyStripes {
public:
    static constexpr size_t count = 64;

    // The stripes of keys with these hashes (support::key_hash), held
    // until destroyed: Shared or Exclusive. waiting is called once, before
    // the first wait, where another holder has a stripe it needs.
    template <bool exclusive>
    class Held {
    public:
        Held(KeyStripes &stripes, const std::vector<uint64_t> &key_hashes,
             const std::function<void()> &waiting = {})
            : stripes_(stripes)
        {
            for (uint64_t h : key_hashes) held_.push_back(static_cast<size_t>(h % count));
            std::sort(held_.begin(), held_.end());
            held_.erase(std::unique(held_.begin(), held_.end()), held_.end());
            bool waited = false;
            for (size_t s : held_) {
                std::shared_mutex &m = stripes_.locks_[s];
                if (exclusive ? m.try_lock() : m.try_lock_shared()) continue;
                if (!waited && waiting) waiting();
                waited = true;
                if constexpr (exclusive) m.lock();
                else m.lock_shared();
            }
        }
        ~Held()
        {
            for (auto s = held_.rbegin(); s != held_.rend(); ++s) {
                if constexpr (exclusive) stripes_.locks_[*s].unlock();
                else stripes_.locks_[*s].unlock_shared();
            }
        }
        Held(const Held &) = delete;
        Held &operator=(const Held &) = delete;

    private:
        KeyStripes &stripes_;
        std::vector<size_t> held_;
    };
    using Shared = Held<false>;
    using Exclusive = Held<true>;

private:
    std::array<std::shared_mutex, count> locks_;
};

}  // namespace kvblob::tiered
