// Watching before sleeping: a waiter that expects its answer within
// microseconds looks for it on its own core for a bounded while, instead of
// sleeping at once. Waking a sleeping thread costs a system call and, where
// the sleeper's core went idle, the time that core takes to come back: tens
// of microseconds on a virtual machine whose idle vCPU halts, against the
// few microseconds an in-memory operation takes. Internal.
#pragma once

#include <algorithm>
#include <chrono>
#include <thread>

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
// deadline). Looks at the clock every 64 looks; past the first round it
// yields between rounds, so a thread waiting for this core still runs.
template <class Done>
bool watch(std::chrono::steady_clock::time_point deadline, Done &&done)
{
    using Clock = std::chrono::steady_clock;
    const auto until = std::min(deadline, Clock::now() + watch_before_sleep);
    for (unsigned round = 0; Clock::now() < until; ++round) {
        for (int i = 0; i < 64; ++i) {
            if (done()) return true;
            spin_pause();
        }
        if (round > 0) std::this_thread::yield();
    }
    return done();
}

}  // namespace kvblob
