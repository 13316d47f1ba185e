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

// How long a waiter watches before it sleeps.
inline constexpr std::chrono::microseconds watch_before_sleep{50};

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
