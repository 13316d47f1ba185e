// Runs one check in a child process (a fresh one by default), so that a crash or a hang in the driver
// is reported (CRASH, TIMEOUT) and the run goes on.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "leftover.hpp"
#include "report_channel.hpp"

namespace kvblob::conformance {

enum class Status { pass, fail, not_supported, skipped, timeout, crash, xfail, xpass, blocked, not_exercised };
const char *to_string(Status s);

struct Outcome {
    Outcome() = default;
    Outcome(Status status, std::string message, Leftover left = {})
        : status(status), message(std::move(message)), left(std::move(left))
    {
    }
    Status status = Status::fail;
    std::string message;
    Leftover left;  // what the check left in the store
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
// the last of its stderr (at most stderr_tail_bytes), its wait status.
struct Spawned {
    Records records;
    std::string err;
    int wait_status = 0;
    bool timed_out = false, interrupted = false;
};

// A driver may write to stderr without end: the runner keeps the last of it.
inline constexpr size_t stderr_tail_bytes = 64 * 1024;
// And the report channel brings at most this much (a check's records are
// far smaller); more is a driver writing there.
inline constexpr size_t channel_bytes = 4 * 1024 * 1024;

// Starts this program afresh (/proc/self/exe) with args (args[0] is the
// name) in a process group of its own, its records on child_result_fd and
// the run's key on child_key_fd, its stderr collected, and waits at most
// timeout_s for it to exit. Then its whole process group is killed and
// reaped: what it started ends with it, and pipes its descendants held are
// read for a bounded time only. raw, when given, receives what it left.
Outcome run_spawned(const std::vector<std::string> &args, unsigned timeout_s, Spawned *raw = nullptr);

// In a child: runs body and writes its verdict to fd, then runs clean_up
// and writes what the check left; exits without destructors. A fault in
// guarded memory, even a late one, is written there as a FAIL of R-REG-3.
// Once the verdict came, run_spawned gives the cleanup a timeout of its own.
[[noreturn]] void run_child_body(const std::function<Outcome()> &body, const std::function<Leftover()> &clean_up,
                                 int fd);

}  // namespace kvblob::conformance
