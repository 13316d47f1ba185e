// Whether this build runs under AddressSanitizer. What the drivers would
// keep for reuse once released (operations, the tiered driver's recency
// nodes) is freed there instead, so that a touch of it after release stays
// a use after free the sanitizer reports, not a write into its next user.
#pragma once

namespace kvblob::support {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool address_sanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool address_sanitizer = true;
#else
inline constexpr bool address_sanitizer = false;
#endif
#else
inline constexpr bool address_sanitizer = false;
#endif

}  // namespace kvblob::support
