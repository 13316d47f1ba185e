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

// How long a waiter watches before it sleeps. Long enough for a store's
// round trip with a batch of small rows: a Redis operation of 32 rows of
// 4 KiB on loopback takes 100-160 us here, and waiting for it through a
// watch of 50 us and a sleep took it to 0.63-0.92 of raw hiredis, from 1.61-2.52
// watching through (docs/notes/2026-12-04-performance-experiments.md, "The host's wait watches longer").
// Past it, the wake's cost is a small part of the wait, and the sleeper
// gives its core to the worker, the server and the rest of the machine.
// kvblob-bench's driver lane mirrors it (bench/src/measure.hpp, host_watch).
inline constexpr std::chrono::microseconds watch_before_sleep{200};

// How long a driver's waits have lasted lately, so that a wait watches only
// where watching may pay. A wait that outlasts its watch has spent it for
// nothing: it sleeps and is woken all the same. Where a driver's operations
// take several watches (a Redis batch of 32 rows of 16 KiB: 500-700 us
// here), each wait held a core for 200 us that the worker, the store and
// the rest of the machine wanted: alternated, a watch of 20 us took such
// gets from 0.54-0.80 of raw hiredis to 0.90-1.21 (docs/notes/2026-12-04-performance-experiments.md,
// "The wait watches only where it pays"). So a driver whose typical wait
// lasts more than twice the watch gets a short one (it still catches an
// operation that ends at once); one whose waits end within it keeps it
// whole. The typical wait is a running mean (1/8 the newest), shared by the
// driver's waiters; a lost update among racing waiters loses one sample.
// Only the watch's length follows it: every wait still sleeps until the
// driver announces (or its deadline).
class WaitHistory {
public:
    static constexpr std::chrono::microseconds short_watch{20};

    std::chrono::microseconds next_watch() const noexcept
    {
        return typical_ns_.load(std::memory_order_relaxed) > 2 * watch_ns ? short_watch : watch_before_sleep;
    }
    // A wait that ended settled after waited (not one answered at once).
    void record(std::chrono::nanoseconds waited) noexcept
    {
        const int64_t was = typical_ns_.load(std::memory_order_relaxed);
        // Capped, so that it takes three to five long waits in a row, not
        // one stall, to shorten the watch.
        const int64_t now = std::min<int64_t>(waited.count(), 4 * watch_ns);
        typical_ns_.store(was + (now - was) / 8, std::memory_order_relaxed);
    }

private:
    static constexpr int64_t watch_ns = std::chrono::nanoseconds(watch_before_sleep).count();
    std::atomic<int64_t> typical_ns_{0};
};

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
