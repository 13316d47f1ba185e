// How long a check may take by default (--timeout). A runner built under
// AddressSanitizer or ThreadSanitizer runs the battery and the driver it
// loads several times slower: there results.wide against the reference
// driver in blocking mode needs about 11 s of CPU, and on a machine at a
// load average near 20 it once ran past 60 s without being starved enough
// for starvation.hpp to call it so. Such a build waits three times as long.
#pragma once

namespace kvblob::conformance {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr unsigned default_check_timeout_s = 180;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr unsigned default_check_timeout_s = 180;
#else
inline constexpr unsigned default_check_timeout_s = 60;
#endif
#else
inline constexpr unsigned default_check_timeout_s = 60;
#endif

}  // namespace kvblob::conformance
