// Watching before sleeping: a waiter that expects its answer within
// microseconds looks for it on its own core for a bounded while, instead of
// sleeping at once. Waking a sleeping thread costs a system call and, where
// the sleeper's core went idle, the time that core takes to come back: tens
// of microseconds on a virtual machine whose idle vCPU halts, against the
// few microseconds an in-memory operation takes. Internal.
#pragma once

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace kvblob {

// How long a waiter watches before it sleeps. Long enough for a store's
// round trip with a batch of small rows: a Redis operation of 32 rows of
// 4 KiB on loopback takes 100-160 us here, and waiting for it through a
// watch of 50 us and a sleep took it to 0.63-0.92 of raw hiredis, from 1.61-2.52
// watching through (docs/performance.md, "The host's wait watches longer").
// Past it, the wake's cost is a small part of the wait, and the sleeper
// gives its core to the worker, the server and the rest of the machine.
// kvblob-bench's driver lane mirrors it (bench/src/measure.hpp, host_watch).
inline constexpr std::chrono::microseconds watch_before_sleep{200};

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
// (docs/performance.md, "Under load: watchers that never yield"). A
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
