#include "tick_clock.hpp"

#include <atomic>
#include <fstream>
#include <mutex>
#include <string>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace kvblob::tick_clock {

namespace {

using Steady = std::chrono::steady_clock;

// Written once (calibrate) before any driver's metrics exist; atomics so
// that no reader can see them half-written.
std::atomic<bool> use_tsc{false};
std::atomic<double> ns_per_tick{1.0};
std::once_flag calibrated;

uint64_t steady_ns() noexcept
{
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Steady::now().time_since_epoch()).count());
}

bool kernel_keeps_time_by_tsc()
{
    std::ifstream source("/sys/devices/system/clocksource/clocksource0/current_clocksource");
    std::string name;
    return source >> name && name == "tsc";
}

void measure_rate()
{
#if defined(__x86_64__)
    if (!kernel_keeps_time_by_tsc()) return;
    const uint64_t ns0 = steady_ns(), t0 = __rdtsc();
    uint64_t ns1 = ns0, t1 = t0;
    while (ns1 - ns0 < 2'000'000) ns1 = steady_ns(), t1 = __rdtsc();
    if (t1 <= t0) return;
    ns_per_tick.store(static_cast<double>(ns1 - ns0) / static_cast<double>(t1 - t0), std::memory_order_relaxed);
    use_tsc.store(true, std::memory_order_release);
#endif
}

}  // namespace

void calibrate() { std::call_once(calibrated, measure_rate); }

uint64_t now() noexcept
{
#if defined(__x86_64__)
    if (use_tsc.load(std::memory_order_relaxed)) return __rdtsc();
#endif
    return steady_ns();
}

std::chrono::nanoseconds between(uint64_t from, uint64_t to) noexcept
{
    if (to <= from) return std::chrono::nanoseconds(0);
    return std::chrono::nanoseconds(
        static_cast<int64_t>(static_cast<double>(to - from) * ns_per_tick.load(std::memory_order_relaxed)));
}

}  // namespace kvblob::tick_clock
