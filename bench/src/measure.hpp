// The timing harness every measured thing shares, driver or baseline: each
// of N threads (lanes) repeats a timed step until the budget is spent, with
// untimed work allowed between steps (removing what a put stored, say).
// Throughput is the sum over lanes of what each moved per second it was
// timed; latencies are per operation (one batch).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "plan.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace kvblob::bench {

using Seconds = std::chrono::duration<double>;

struct Sample {
    Seconds submit{0};    // the call that submitted the operation
    Seconds complete{0};  // submission to results final and access ended
    uint64_t rows = 0;    // rows that came back as expected
    uint64_t bytes = 0;
    uint64_t errors = 0;  // rows that did not
    std::string error;    // the first error's words
};

class Lane {
public:
    virtual ~Lane() = default;
    virtual void prepare() {}       // untimed, once
    virtual Sample step() = 0;      // one timed operation
    virtual void between() {}       // untimed, after each step
    // How the lane moved its bytes, where it chose (a baseline's copy
    // method and buffer alignment); empty where there is nothing to say.
    virtual std::string method() const { return {}; }
};

struct Stats {
    double avg_us = 0, p50_us = 0, p99_us = 0;
};

struct Measurement {
    uint64_t rows = 0, bytes = 0, ops = 0, errors = 0;
    double seconds = 0;  // wall time of the measured phase
    double gbps = 0;     // 1e9 bytes per second
    double rows_per_s = 0;
    // The same from each lane's median operation: on a machine whose other
    // work interrupts some operations, the mean is the interruptions' figure.
    double median_gbps = 0, median_rows_per_s = 0;
    Stats submit, complete;
    std::string first_error;
    std::string method;  // the first lane's method()
};

// Waits until done() on this thread, watching, never asleep, so a timed
// operation's time ends when it does (a sleep of 20 us takes 50 to 80 here).
// Every lane that waits for another thread's work waits so, driver and
// baseline alike. It never yields: under --load, Linux's fair scheduler
// gave a yielding lane's core to a busy thread for up to a scheduler tick
// (4 ms), and every operation measured that tick instead of its own time;
// a worker or server woken on this core runs at once without a yield.
inline void spin_pause()
{
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
}

template <class Done>
void watch_until(Done done)
{
    while (!done()) spin_pause();
}

// Whether done() became true within span, watching as watch_until does and
// looking at the clock every 64 looks.
template <class Done>
bool watch_for(std::chrono::microseconds span, Done done)
{
    const auto until = std::chrono::steady_clock::now() + span;
    while (std::chrono::steady_clock::now() < until)
        for (int i = 0; i < 64; ++i) {
            if (done()) return true;
            spin_pause();
        }
    return done();
}

// How a lane waits for work another thread does (kvblob-bench --wait).
enum class WaitStyle {
    // As an engine that blocks on its operation: the driver lane calls
    // Operation::wait, which watches for host_watch at most (as the
    // driver's operations have lately taken: WaitHistory) and then sleeps
    // until the driver announces it; a baseline that hands its call to a
    // thread of its own watches as long as the host's wait would after
    // calls like its last ones (HostWatchHistory), then sleeps until the
    // call ends.
    host,
    // Watching on the waiting thread, never asleep (watch_until): what a
    // lane costs with a core of its own to spend.
    watch,
};
// How long Operation::wait watches before it sleeps, at most
// (watch_before_sleep, host/src/guarding/watch.hpp).
inline constexpr std::chrono::microseconds host_watch{200};

// How long Operation::wait watches once a driver's operations have lately
// taken longer than host_watch_pays to end: a running mean, the newest
// 1/8, each sample capped at twice host_watch_pays (WaitHistory,
// host/src/guarding/watch.hpp). A baseline that hands its calls to a
// thread and waits "as the host" keeps the same history of its own calls.
inline constexpr std::chrono::microseconds host_short_watch{20};
inline constexpr std::chrono::microseconds host_watch_pays{50};
class HostWatchHistory {
public:
    std::chrono::microseconds next_watch() const { return typical_ > pays_ns ? host_short_watch : host_watch; }
    void record(std::chrono::nanoseconds took)
    {
        const int64_t now = std::clamp<int64_t>(took.count(), 0, 2 * pays_ns);
        typical_ += (now - typical_) / 8;
    }

private:
    static constexpr int64_t pays_ns = std::chrono::nanoseconds(host_watch_pays).count();
    int64_t typical_ = 0;
};

using MakeLane = std::function<std::unique_ptr<Lane>(unsigned lane)>;

// What one lane did over every slice it was timed in.
struct LaneTotals {
    std::vector<double> submit_us, complete_us;
    uint64_t rows = 0, bytes = 0, errors = 0;
    double timed = 0;  // seconds its steps took
    std::string first_error;
};

// A side of a point (the driver, or its baseline): its lanes, made and
// warmed up once, then timed in one slice or several; what it measured
// covers every slice so far, as if they were one.
class LaneSet {
public:
    // Makes, prepares and warms up each lane (a step, untimed: first
    // touches, connections, caches). Throws what a lane throws.
    LaneSet(unsigned threads, const MakeLane &make_lane);
    // One slice: every lane repeats its step at once, each on a thread of
    // its own, until budget is spent or one of its rows did not come back.
    // A slice after the first starts with an untimed step: the other side
    // ran meanwhile, and a side whose first timed step met cold caches and
    // sleeping workers would pay for the alternation, not for its own work.
    void run(const Budget &budget);
    bool failed() const;
    Measurement measurement() const;

private:
    std::vector<std::unique_ptr<Lane>> lanes_;
    std::vector<LaneTotals> totals_;
    double seconds_ = 0;  // wall time of the slices
    bool ran_ = false;    // a slice has run: the next one warms up first
};

// A point measured once, one slice of budget.
Measurement measure(unsigned threads, const Budget &budget, const MakeLane &make_lane);

// A driver and its baseline at one point, in rounds alternated slices of
// budget / rounds each: the driver first, then the baseline first, and so
// on, so that both sides meet the same spells of a shared machine, and a
// slow minute weighs on both. The baseline's lanes are made after the
// driver's first slice (a --tier reference paces its steps by it). With
// rounds 1: the driver's budget, then the baseline's. Stops early where a
// side's rows did not come back.
struct PairMeasurement {
    Measurement driver;
    std::optional<Measurement> baseline;
};
PairMeasurement measure_alternated(unsigned threads, const Budget &budget, unsigned rounds,
                                   const MakeLane &make_driver_lane, const MakeLane *make_baseline_lane);

// How a point's throughput is reported: the mean over its timed operations
// (the default), or its median operation's (kvblob-bench --statistic median).
enum class Statistic { mean, median };
// m with gbps and rows_per_s those of statistic.
void report_as(Measurement &m, Statistic statistic);

// The median time of one call of f, calling it until duration is spent (at
// least five times): the median, as other work on a shared machine
// interrupts some calls. For measurements of one call at a time
// (--block-keys, --checksums).
double median_call_seconds(const std::function<void()> &f, Seconds duration);

}  // namespace kvblob::bench
