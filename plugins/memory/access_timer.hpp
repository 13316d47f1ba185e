// Ends operations' access a set time after their results are final: the
// memory driver's access_delay_ms, a store whose transport lets go of the
// caller's memory only after it answered (an RDMA completion that trails
// the reply, say). It is how the battery's wait for a declared access-end
// bound (R-ACC-2, KVBLOB_CAP_ACCESS_BOUND) is exercised without such a store.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

namespace kvblob::memory {

class AccessTimer {
public:
    using Clock = std::chrono::steady_clock;

    AccessTimer() = default;
    ~AccessTimer() { stop(); }
    AccessTimer(const AccessTimer &) = delete;
    AccessTimer &operator=(const AccessTimer &) = delete;

    // Runs end at when, on the timer's own thread (started on first use).
    void at(Clock::time_point when, std::function<void()> end);
    // Runs what is still due at once, then joins the thread: nothing runs
    // after this returns.
    void stop();

private:
    void loop();

    std::mutex mu_;
    std::condition_variable cv_;
    std::multimap<Clock::time_point, std::function<void()>> due_;
    bool stopping_ = false;
    std::thread thread_;
};

}  // namespace kvblob::memory
