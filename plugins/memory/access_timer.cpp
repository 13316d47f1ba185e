#include "access_timer.hpp"

#include <kvblob/support/thread_name.hpp>

#include <utility>

namespace kvblob::memory {

void AccessTimer::at(Clock::time_point when, std::function<void()> end)
{
    {
        std::lock_guard lock(mu_);
        if (!stopping_) {
            due_.emplace(when, std::move(end));
            if (!thread_.joinable()) {
                thread_ = std::thread([this] { loop(); });
                support::name_thread(thread_, "kvblob-timer");
            }
            cv_.notify_one();
            return;
        }
    }
    end();  // stopped: at once
}

void AccessTimer::stop()
{
    std::thread joined;
    {
        std::lock_guard lock(mu_);
        stopping_ = true;
        cv_.notify_one();
        joined = std::move(thread_);
    }
    if (joined.joinable()) joined.join();
}

void AccessTimer::loop()
{
    std::unique_lock lock(mu_);
    for (;;) {
        if (due_.empty()) {
            if (stopping_) return;
            cv_.wait(lock);
            continue;
        }
        auto first = due_.begin();
        if (!stopping_ && Clock::now() < first->first) {
            cv_.wait_until(lock, first->first);
            continue;
        }
        auto end = std::move(first->second);
        due_.erase(first);
        lock.unlock();
        end();  // unlocked: it may complete an operation its caller releases at once
        lock.lock();
    }
}

}  // namespace kvblob::memory
