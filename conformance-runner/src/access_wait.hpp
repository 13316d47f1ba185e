// How long the battery waits for an operation's access to end once its
// results are final (R-ACC-2). A driver that declares its bound
// (KVBLOB_CAP_ACCESS_BOUND, ABI 1.1) gets that bound plus a margin for the
// scheduling of a loaded machine, the driver's threads and the battery's
// own: half the bound, and at least access_margin_floor. Past it, the
// check fails R-ACC-2 by name. A driver that declares none gets the check's
// own timeout.
#pragma once

#include <kvblob/kvblob.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

namespace kvblob::conformance {

inline constexpr std::chrono::milliseconds access_margin_floor{500};

// The wait once results are final, for a driver declaring caps.
inline std::chrono::nanoseconds access_wait(const kvblob_caps_t &caps)
{
    // (A bound beyond an hour is waited as an hour: the check's timeout comes first.)
    const std::chrono::nanoseconds bound(std::min<uint64_t>(caps.access_end_bound_ns, 3'600'000'000'000ull));
    return bound + std::max<std::chrono::nanoseconds>(bound / 2, access_margin_floor);
}

// "50.0 ms": a duration as a report says it.
inline std::string ms_text(std::chrono::nanoseconds d)
{
    char text[64];
    std::snprintf(text, sizeof text, "%.1f ms", std::chrono::duration<double, std::milli>(d).count());
    return text;
}

}  // namespace kvblob::conformance
