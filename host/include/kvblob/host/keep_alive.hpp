// Memory kept alive for the life of the process on purpose: what a driver
// that could not prove its access may still touch (R-REG-2, R-OPS-1), and
// what a driver that could not be closed may still use. Marked so that
// LeakSanitizer reports every other leak (the asan preset runs with leak
// detection on) and not these; a no-op in other builds.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define KVBLOB_HAVE_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(leak_sanitizer)
#define KVBLOB_HAVE_LSAN 1
#endif
#endif

#ifdef KVBLOB_HAVE_LSAN
#include <sanitizer/lsan_interface.h>
#endif

namespace kvblob {

// p points into a heap object (or is NULL, or not on the heap: then nothing
// happens). The object, and what it points to, is never reported as leaked.
inline void keep_alive_for_good(const void *p) noexcept
{
#ifdef KVBLOB_HAVE_LSAN
    if (p) __lsan_ignore_object(p);
#else
    (void)p;
#endif
}

}  // namespace kvblob
