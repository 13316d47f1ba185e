// Runs one check in a child process (a fresh one by default), so that a crash or a hang in the driver
// is reported (CRASH, TIMEOUT) and the run goes on.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "check_metrics.hpp"
#include "leftover.hpp"
#include "report_channel.hpp"

namespace kvblob::conformance {

// starved: a check's wait ran out while the machine starved its process of
// the CPU (starvation.hpp); shown as TIMEOUT, counted apart from failures.
enum class Status { pass, fail, not_supported, skipped, timeout, crash, xfail, xpass, blocked, not_exercised, starved };
const char *to_string(Status s);

// What the driver wrote to the standard output of a check's process (or the
// probe's): the runner's own report goes there, so the child's is a pipe of
// its own, of which the runner keeps the last stdout_tail_bytes and counts
// the rest. Said in every report; it changes no verdict.
struct StdoutSeen {
    uint64_t bytes = 0;
    std::string tail;  // its last bytes, at most stdout_tail_bytes
    bool any() const { return bytes > 0; }
};

struct Outcome {
    Outcome() = default;
    Outcome(Status status, std::string message, Leftover left = {})
        : status(status), message(std::move(message)), left(std::move(left))
    {
    }
    Status status = Status::fail;
    std::string message;
    Leftover left;  // what the check left in the store
    StdoutSeen out;  // what the driver wrote to stdout (isolated runs only)
    CheckMetrics metrics;  // what the host counted in the check's body (isolated runs only)
};

// Asks the run to stop (SIGINT, SIGTERM): the check in progress is killed and
// reported as interrupted. Async-signal-safe.
void request_stop();
// The whole run's end (--run-timeout): past it, stop_requested() is true,
// and the check in progress is killed as on a stop request.
void set_run_deadline(std::chrono::steady_clock::time_point deadline);
bool run_deadline_passed();
bool stop_requested();

// Makes this process the reaper of its descendants' orphans, so that what a
// check's process started (a driver that forks) is reaped here once killed
// with its process group, and no process of a check outlives it.
void adopt_orphans();

// How a reaped process ended, for a message: "killed by signal ..." or
// "exit status N".
std::string how_ended(int status);

// What a spawned child left: the records it signed (report_channel.hpp),
// the last of its stderr (at most stderr_tail_bytes) and of its stdout, its
// wait status.
struct Spawned {
    Records records;
    std::string err;
    StdoutSeen out;
    int wait_status = 0;
    bool timed_out = false, interrupted = false;
};

// A driver may write to stderr without end: the runner keeps the last of it.
inline constexpr size_t stderr_tail_bytes = 64 * 1024;
// What marks the start of a kept tail cut inside a line (main.cpp's scrub
// takes the end of a secret out after it).
inline constexpr std::string_view cut_mark = "...";
// And to stdout: the runner keeps less of that, since it is only shown (the
// last lines of it, in the report), and counts all of it.
inline constexpr size_t stdout_tail_bytes = 4 * 1024;
// And the report channel brings at most this much (a check's records are
// far smaller); more is a driver writing there.
inline constexpr size_t channel_bytes = 4 * 1024 * 1024;

// Where a child's fault handler says that the driver touched guarded memory
// (the address, in hex): unsigned, since the handler runs on whatever thread
// faulted and the child's key is no global it could reach; whatever comes
// here fails the check, so a driver that writes here can only fail itself.
inline constexpr int child_fault_fd = 5;

// Starts this program afresh (/proc/self/exe) with args (args[0] is the
// name) in a process group of its own, its records on child_result_fd and a
// key of its own (fresh_key) on child_key_fd, its faults on child_fault_fd, its stdout and stderr collected (each a
// bounded tail; stdout counted too), and waits at most
// timeout_s for it to exit. Then its whole process group is killed and
// reaped: what it started ends with it, and pipes its descendants held are
// read for a bounded time only. raw, when given, receives what it left.
Outcome run_spawned(const std::vector<std::string> &args, unsigned timeout_s, Spawned *raw = nullptr);

// In a child: runs body and writes its verdict to fd signed under key, then
// runs clean_up and writes what the check left; exits without destructors.
// A fault in guarded memory, even a late one, is written to child_fault_fd,
// and the runner reads it as a FAIL of R-REG-3 whatever came before it.
// Once the verdict came, run_spawned gives the cleanup a timeout of its own.
[[noreturn]] void run_child_body(const std::function<Outcome()> &body, const std::function<Leftover()> &clean_up,
                                 int fd, const RunKey &key);

}  // namespace kvblob::conformance
