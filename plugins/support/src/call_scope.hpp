// Counts a put/get/probe/remove call (or a poll running queued work) in
// progress, so that drain waits for it to return (R-DRN-3). Internal to the
// support library: driver_base.cpp, admission.cpp and answers.cpp share it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace kvblob::support {

// Keeps the count of put/get/probe/remove calls in progress, so that drain
// waits for them to return (R-DRN-3).
class CallScope {
public:
    CallScope(std::atomic<uint64_t> &calls, std::mutex &mu, std::condition_variable &cv)
        : calls_(calls), mu_(mu), cv_(cv)
    {
        calls_.fetch_add(1);
    }
    ~CallScope()
    {
        // Counted out under the lock drain judges by: a drain that sees the
        // last call gone may return and the driver be closed, so nothing of
        // it may be touched after the lock is let go.
        std::lock_guard lock(mu_);
        if (calls_.fetch_sub(1) == 1) cv_.notify_all();
    }

private:
    std::atomic<uint64_t> &calls_;
    std::mutex &mu_;
    std::condition_variable &cv_;
};

}  // namespace kvblob::support
