#include "notifier.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include "watch.hpp"

namespace kvblob {

Notifier::Notifier() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

Notifier::~Notifier()
{
    if (fd_ >= 0) ::close(fd_);
}

int Notifier::fd()
{
    fd_wanted_.store(true);
    return fd_;
}

void Notifier::announce() noexcept
{
    // seq_cst on both sides (here: bump, then look for sleepers; in
    // wait_past: count in, then look at the generation): either this sees
    // the sleeper, or the sleeper sees the bump and does not sleep.
    generation_.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) != 0) {
        // The time only a waiter that slept reads (wait_took), stored before
        // the wake: a sleeper this wakes reads this announcement's time or a
        // later one's. Read on every announcement, the clock was four reads
        // an operation through a tiered driver with none asleep.
        announced_.store(std::chrono::steady_clock::now().time_since_epoch().count(), std::memory_order_relaxed);
        try {
            std::lock_guard lock(mu_);  // a sleeper between its check and its sleep is not missed
        } catch (...) {                 // cannot lock: the sleeper's deadline still ends its wait
        }
        cv_.notify_all();
    }
    if (fd_ >= 0 && fd_wanted_.load(std::memory_order_relaxed)) {
        const uint64_t one = 1;
        // Non-blocking: a full counter (EAGAIN) is still readable.
        [[maybe_unused]] const auto written = ::write(fd_, &one, sizeof one);
    }
}

bool Notifier::wait_past(uint64_t seen, std::chrono::steady_clock::time_point deadline,
                         std::chrono::steady_clock::time_point watch_end)
{
    if (watch(std::min(deadline, watch_end), [&] { return current() != seen; })) return false;
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    // Slept: blocked on cv_ at least once. A waiter that finds the bump as it
    // counts itself in never sleeps, and its announcer may not have seen it
    // nor read the time for it.
    bool slept = false;
    {
        std::unique_lock lock(mu_);
        while (current() == seen) {
            slept = true;
            if (cv_.wait_until(lock, deadline) == std::cv_status::timeout) break;
        }
    }
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
    return slept;
}

}  // namespace kvblob
