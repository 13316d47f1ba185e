// Watching before sleeping: a waiter that expects its answer within
// microseconds looks for it on its own core for a bounded while, instead of
// sleeping at once. Waking a sleeping thread costs a system call and, where
// the sleeper's core went idle, the time that core takes to come back: tens
// of microseconds on a virtual machine whose idle vCPU halts, against the
// few microseconds an in-memory operation takes. Internal.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace kvblob {

// How long Operation::wait watches before it sleeps, at most: the watch
// of a driver whose operations end within tens of microseconds (an
// in-memory answer, the rest of an operation whose rows the waiter ran
// itself), which come sooner than a sleeping thread wakes. Past it, the
// wake's cost is a small part of the wait, and the sleeper gives its core
// to the worker, the store and the rest of the machine.
// kvblob-bench's driver lane mirrors it (bench/src/measure.hpp, host_watch).
inline constexpr std::chrono::microseconds watch_before_sleep{200};

// How long a wait on a driver that notifies sleeps, at most, before it looks
// at the operation again without an announcement: a driver that misses one
// (breaking R-NTF-1) then costs its waiters this, not their whole timeout
// (a driver stacking drivers waits on its tiers for an hour at a time).
// Rare enough to cost nothing: a sleeper announced to wakes sooner.
inline constexpr std::chrono::milliseconds look_again_unannounced{100};

// How long a driver's operations have lately taken to end once waited for,
// so that a wait watches only where watching pays. Watching saves one wake
// (a system call and the sleeper's core coming back: tens of microseconds
// on a virtual machine whose idle vCPU halts) and holds a core for as long
// as it lasts. For an operation that ends within a few wakes' time that is
// a good trade; for one that takes longer (a Redis batch of 32 rows of
// 4 KiB waits 60-140 us here, gets the least) it saves a few percent of the
// wait and holds the core that the driver's worker and the server need to
// end it. Once the Redis driver's workers no longer watched their queue, a
// short watch for those batches kept its medians within the spread of runs
// on two cores that other work kept at load average 7-24, and took away
// its slow runs: in 13 alternated rounds its puts and gets of 4 KiB took
// 2.5-9.9 and 1.8-8.4 us a row quiet with the whole watch, 2.9-4.7 and
// 1.8-3.0 with the short one. For its gets of 32 rows of 16 KiB (500-700 us
// each) a short watch took them from 0.54-0.80 of raw hiredis to 0.90-1.21
// (docs/notes/2026-12-04-performance-experiments.md, "The wait watches only where it pays").
//
// So a wait watches for the whole watch_before_sleep while the driver's
// typical wait is at most watch_pays, and for short_watch past it (which
// still catches an operation that ends at once). Not a watch in
// proportion to the typical wait: the memory and file drivers' waits are
// mostly the last rows of the driver's worker (the waiting thread ran the
// rest), a few microseconds, with a tail where that worker lost its core,
// and the whole watch rides that tail out as it did before the history.
// Every wait still sleeps until the driver announces (or its deadline):
// only the watch's length follows the history.
//
// The typical wait is a running mean (1/8 the newest), shared by the
// driver's waiters with relaxed loads and stores (a lost update among
// racing waiters loses one sample; no locked instruction). A sample is
// what the operation took, not what the wait took: a wait that slept
// counts until the announcement that woke it (wait_took), not the wake, so
// a driver's quick operations that slept during a burst of slow ones bring
// the mean back down instead of holding it up by the wake's cost. Each
// sample is capped at twice watch_pays: one stall among quick answers then
// leaves the watch on, it takes four or more slow operations in a row to
// shorten it, and after a burst of slow ones six to eight quick ones give
// it back.
class WaitHistory {
public:
    static constexpr std::chrono::microseconds short_watch{20};
    static constexpr std::chrono::microseconds watch_pays{50};

    std::chrono::microseconds next_watch() const noexcept
    {
        return typical_ns_.load(std::memory_order_relaxed) > pays_ns ? short_watch : watch_before_sleep;
    }
    // A wait that ended settled, its operation having taken took since the
    // wait began (not one answered at once).
    void record(std::chrono::nanoseconds took) noexcept
    {
        const int64_t was = typical_ns_.load(std::memory_order_relaxed);
        const int64_t now = std::clamp<int64_t>(took.count(), 0, 2 * pays_ns);
        typical_ns_.store(was + (now - was) / 8, std::memory_order_relaxed);
    }

private:
    static constexpr int64_t pays_ns = std::chrono::nanoseconds(watch_pays).count();
    std::atomic<int64_t> typical_ns_{0};
};

// What an operation took from start, the wait's beginning, to its end at
// now: where the wait's last round slept, until announced, the time of the
// last announcement that found a waiter asleep before the wait woke (its
// operation's, or a later one's), so that the wake's delay is left out;
// where it only watched, until now.
inline std::chrono::nanoseconds wait_took(std::chrono::steady_clock::time_point start,
                                          std::chrono::steady_clock::time_point now,
                                          std::chrono::steady_clock::time_point announced, bool slept) noexcept
{
    const auto end = slept ? std::clamp(announced, start, now) : now;
    return end - start;
}

// Tells the core this is a wait loop: on x86 it gives the pipeline to a
// sibling hyperthread and saves power, without leaving the thread.
inline void spin_pause() noexcept
{
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

// Whether done() became true within watch_before_sleep (and before
// deadline). Looks at the clock every 64 looks.
//
// It never yields. On a core that busy threads share, Linux's fair
// scheduler (EEVDF) hands a yielding thread's core to a busy one for the
// rest of its slice, up to a scheduler tick (4 ms on a 250 Hz kernel), while
// a thread that sleeps and is woken runs again at once. Watchers that
// yielded made every background operation on a loaded machine take a tick
// (docs/notes/2026-12-04-performance-experiments.md, "Under load: watchers that never yield"). A
// watcher that shares its core with the thread it waits for holds that
// thread back for at most watch_before_sleep.
template <class Done>
bool watch(std::chrono::steady_clock::time_point deadline, Done &&done)
{
    using Clock = std::chrono::steady_clock;
    const auto until = std::min(deadline, Clock::now() + watch_before_sleep);
    while (Clock::now() < until) {
        for (int i = 0; i < 64; ++i) {
            if (done()) return true;
            spin_pause();
        }
    }
    return done();
}

}  // namespace kvblob
