// Whether a check's wait that ran out says something of the driver, or only
// of the machine. A check that fails because the driver did not answer in
// time (a drain that answered KVBLOB_E_TIMEOUT, an operation that never
// turned final) measures what its process got from the machine during the
// wait; where its threads spent much of it waiting for a CPU and got little
// of what they asked for, the machine was starved (another process's storm)
// and the check cannot decide: it answers TIMEOUT (machine starved), with
// the figures, never FAIL. A driver that deadlocks asks for no CPU while it
// waits, so it is not starved, and still FAILs.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>

namespace kvblob::conformance {

// One thread's share of a wait: the time it ran, and the time it was ready
// to run but waited for a CPU.
struct ThreadWait {
    double cpu_s = 0;
    double runqueue_s = 0;
};

// What the machine gave the check's process over one wait.
struct WaitFigures {
    double wall_s = 0;  // the wait, on the monotonic clock
    double cpu_s = 0;   // CPU time the process ran, all its threads (CLOCK_PROCESS_CPUTIME_ID)
    // Time its threads were ready to run and waited for a CPU, summed over
    // them, and the thread that waited longest (/proc/self/task/*/schedstat);
    // none where the kernel keeps no such figures.
    std::optional<double> runqueue_s;
    std::optional<ThreadWait> longest;
    // The share of the wait in which some task of the machine waited for a
    // CPU (/proc/pressure/cpu, "some"); none where the kernel offers none.
    std::optional<double> pressure;
};

// The decision, on figures alone: some thread of the process was ready to
// run for at least three quarters of the wait and got less than a twentieth
// of the CPU time it asked for (it ran less than 1/19 of what it waited). A
// thread that waits on a lock or a condition that never comes (a deadlock)
// asks for no CPU and is never starved; the battery's own threads that wake
// now and then to look wait only a fraction of the wait. A machine at a
// load average of hundreds gives a ready thread a few thousandths. Without
// per-thread figures there is nothing to decide on: not starved.
bool starved(const WaitFigures &f);

// "in 10.0 s of waiting, the check's process ran 0.020 s of CPU and its
// threads waited 38.1 s for one (the longest 9.9 s, running 0.004 s); some
// task of the machine waited for a CPU 99% of the time".
std::string figures_text(const WaitFigures &f);

// Thrown by a check body: its wait ran out while the machine starved its
// process (starved() of the wait's figures). Reported TIMEOUT, never FAIL.
class Starved : public std::runtime_error {
public:
    explicit Starved(const std::string &what) : std::runtime_error(what) {}
};

// What the machine gave process pid (a check's process, from the runner)
// over its life of wall_s seconds, from its live threads' schedstat: its
// CPU time and run-queue wait are theirs; no pressure figure.
WaitFigures process_figures(long pid, double wall_s);

// Measures one wait, from its construction to figures().
class WaitWatch {
public:
    WaitWatch();
    WaitFigures figures() const;

private:
    std::chrono::steady_clock::time_point wall0_;
    double cpu0_ = 0;
    std::map<long, ThreadWait> threads0_;  // by thread id
    bool schedstat_ = false;
    std::optional<double> pressure0_;  // "some" total, seconds
};

// Fails the check under rule with what, the wait's figures (taken as it
// ended) appended, unless they say the machine starved it: then Starved,
// naming the rule it could not decide. Use where the failure rests on the
// wait running out.
[[noreturn]] void fail_after_wait(const WaitFigures &wait, const std::string &rule, const std::string &what);

// The parts of /proc the watch reads, as text, for tests: a thread's
// schedstat line ("oncpu_ns runqueue_ns slices"), in seconds; the "some"
// total of a /proc/pressure/cpu text, in seconds.
std::optional<ThreadWait> schedstat_figures(const std::string &line);
std::optional<double> pressure_some_total_s(const std::string &text);

}  // namespace kvblob::conformance
