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
#include <optional>
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

// The time an operation's access was seen open once its results were
// final, counting only what the battery was there to see. The battery looks
// every few milliseconds; a gap between two looks much longer than that is
// time the battery itself was off the CPU (a loaded machine, a stopped
// process), when it could see nothing: such a gap counts as one look's
// worth, not its length. A driver that keeps access open past its bound
// keeps being seen so, look after look, and fails just the same; a battery
// starved for a second does not blame the driver for that second.
class OpenWatch {
public:
    // The longest gap between two looks that counts whole: far above the
    // pause between looks (at most 2 ms), far below any margin.
    static constexpr std::chrono::milliseconds longest_look_gap{20};

    // The battery looked at time now and saw access still open.
    void saw_open(std::chrono::steady_clock::time_point now)
    {
        if (last_) {
            const auto gap = now - *last_;
            seen_ += std::min<std::chrono::nanoseconds>(gap, longest_look_gap);
            wall_ += gap;
        }
        last_ = now;
    }
    // Open time the battery saw, and the wall time from the first look to the last.
    std::chrono::nanoseconds seen() const { return seen_; }
    std::chrono::nanoseconds wall() const { return wall_; }

private:
    std::optional<std::chrono::steady_clock::time_point> last_;
    std::chrono::nanoseconds seen_{0}, wall_{0};
};

// "50.0 ms": a duration as a report says it.
inline std::string ms_text(std::chrono::nanoseconds d)
{
    char text[64];
    std::snprintf(text, sizeof text, "%.1f ms", std::chrono::duration<double, std::milli>(d).count());
    return text;
}

}  // namespace kvblob::conformance
