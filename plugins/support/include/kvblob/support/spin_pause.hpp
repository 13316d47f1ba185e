// One pause of a loop that watches for something another thread does.
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace kvblob::support {

// Tells the core this is a wait loop: on x86 it gives the pipeline to a
// sibling hyperthread and saves power, without leaving the thread (never
// a yield: on a busy machine the scheduler gives a yielding thread's core
// away for up to a tick).
inline void spin_pause() noexcept
{
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

}  // namespace kvblob::support
