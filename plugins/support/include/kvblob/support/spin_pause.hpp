// One pause of a loop that watches for what another thread does: on x86 it
// gives the pipeline to a sibling hyperthread and saves power, without
// leaving the thread. Never a yield: on a busy machine the scheduler gives
// a yielding thread's core away for up to a tick. (The host has its own,
// in host/src/guarding/watch.hpp: a driver does not include the host.)
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace kvblob::support {

inline void spin_pause() noexcept
{
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
}

}  // namespace kvblob::support
