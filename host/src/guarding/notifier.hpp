// What a 1.1 driver's notify reaches (kvblob_host_services_t.notify): a
// generation counter that waiters watch, and an eventfd an engine's event
// loop can watch. Internal.
//
// It knows nothing of operations, so a notification for an operation the
// host has not seen yet (from inside the admitting call) or no longer holds
// is harmless: waiters wake and confirm through poll and access.
//
// A waiter watches the counter for a short while before it sleeps
// (watch.hpp); the announcer makes a system call only while one sleeps.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace kvblob {

class Notifier {
public:
    Notifier();
    ~Notifier();
    Notifier(const Notifier &) = delete;
    Notifier &operator=(const Notifier &) = delete;

    // Never blocks beyond a leaf lock, and takes that only while a waiter
    // sleeps; never throws.
    void announce() noexcept;
    uint64_t current() const noexcept { return generation_.load(std::memory_order_seq_cst); }
    // When the latest announcement that found a waiter asleep was made
    // (stored before it woke them): where a waiter slept, what its
    // operation took without the wake's delay (WaitHistory, watch.hpp).
    std::chrono::steady_clock::time_point last_announced() const noexcept
    {
        return std::chrono::steady_clock::time_point(
            std::chrono::steady_clock::duration(announced_.load(std::memory_order_relaxed)));
    }
    // Returns once the generation moved past seen, or at deadline; true
    // where it slept. Watches until watch_end at most (watch.hpp), then
    // sleeps: a wait that is woken by other operations' announcements
    // passes the same watch_end each round, so it watches once in all, not
    // once per announcement.
    bool wait_past(uint64_t seen, std::chrono::steady_clock::time_point deadline,
                   std::chrono::steady_clock::time_point watch_end);

    // Waiters asleep now, or about to sleep (tests wait for one).
    uint32_t sleepers() const noexcept { return sleepers_.load(std::memory_order_seq_cst); }

    // Readable once any operation was announced after the first call.
    int fd();

private:
    std::atomic<uint64_t> generation_{0};
    // A relaxed store by the announcer: the time is a hint for the history,
    // and the lock it takes to wake the sleepers orders it before their
    // read.
    std::atomic<std::chrono::steady_clock::rep> announced_{0};
    std::atomic<uint32_t> sleepers_{0};
    std::mutex mu_;  // a leaf: held to sleep, or to wake the sleepers
    std::condition_variable cv_;
    int fd_ = -1;
    // Set by the first fd(): until an engine watches the descriptor, an
    // announcement costs no system call.
    std::atomic<bool> fd_wanted_{false};
};

}  // namespace kvblob
