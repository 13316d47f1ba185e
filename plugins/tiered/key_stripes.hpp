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
// after it reads a MISS and promotes nothing.
//
// A holder takes all its stripes at once, under one mutex held only to
// count, or waits holding none: so holders never wait for each other in a
// circle, and a remove of many keys holds one lock, not one per stripe
// (a thread that holds dozens of mutexes at once is beyond what
// ThreadSanitizer's deadlock detector can follow). Readers are preferred,
// as with a default pthread rwlock: a waiting remove does not stop a
// promotion that could start.
#pragma once

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

namespace kvblob::tiered {

class KeyStripes {
public:
    static constexpr size_t count = 64;

    // The stripes of keys with these hashes (support::key_hash), held
    // until destroyed: Shared or Exclusive. waiting is called once, holding
    // nothing, before the first wait, where another holder has a stripe it
    // needs.
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
            std::unique_lock lock(stripes_.mutex_);
            const auto free = [&] { return stripes_.free<exclusive>(held_); };
            if (!free()) {
                if (waiting) {
                    lock.unlock();
                    waiting();
                    lock.lock();
                }
                stripes_.released_.wait(lock, free);
            }
            for (size_t s : held_) {
                if constexpr (exclusive) stripes_.writer_[s] = true;
                else ++stripes_.readers_[s];
            }
        }
        ~Held()
        {
            {
                const std::lock_guard lock(stripes_.mutex_);
                for (size_t s : held_) {
                    if constexpr (exclusive) stripes_.writer_[s] = false;
                    else --stripes_.readers_[s];
                }
            }
            stripes_.released_.notify_all();
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
    // Whether a holder of this kind could take all of these stripes now.
    template <bool exclusive>
    bool free(const std::vector<size_t> &stripes) const
    {
        return std::all_of(stripes.begin(), stripes.end(), [&](size_t s) {
            return !writer_[s] && (!exclusive || readers_[s] == 0);
        });
    }

    std::mutex mutex_;
    std::condition_variable released_;
    std::array<uint32_t, count> readers_{};
    std::array<bool, count> writer_{};
};

}  // namespace kvblob::tiered
