// The clock the host times operations by for their metrics: two readings an
// operation (submit, first seen final), so it must cost little. On x86-64,
// where the kernel itself keeps time by the TSC (its clocksource is "tsc":
// invariant, and the same on every core), that is the cycle counter,
// converted by a rate measured once against steady_clock; anywhere else it
// is steady_clock. Internal to the host library.
#pragma once

#include <chrono>
#include <cstdint>

namespace kvblob::tick_clock {

// Measures the rate (about 2 ms, once per process): called where a driver's
// metrics are made, so no operation pays for it.
void calibrate();
uint64_t now() noexcept;
// The time from `from` to `to` (0 when `to` is earlier: a reading taken on
// another core an instant before).
std::chrono::nanoseconds between(uint64_t from, uint64_t to) noexcept;

}  // namespace kvblob::tick_clock
