// Runs one check in a child process (a fresh one by default), so that a crash or a hang in the driver
// is reported (CRASH, TIMEOUT) and the run goes on.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "leftover.hpp"

namespace kvblob::conformance {

enum class Status { pass, fail, not_supported, skipped, timeout, crash, xfail, xpass };
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
bool stop_requested();


// The descriptor a spawned child writes its result to: records, each ended
// by a NUL byte; first the verdict ("STATUS\nmessage"), then what the
// check left ("left ...", leftover.hpp).
inline constexpr int child_result_fd = 3;

// What a spawned child left: its result text, its stderr, its wait status.
struct Spawned {
    std::string result, err;
    int wait_status = 0;
    bool timed_out = false, interrupted = false;
};

// Starts this program afresh (/proc/self/exe) with args (args[0] is the
// name), its result on child_result_fd and its stderr collected, and waits
// at most timeout_s. raw, when given, receives what the child left.
Outcome run_spawned(const std::vector<std::string> &args, unsigned timeout_s, Spawned *raw = nullptr);

// In a child: runs body and writes its verdict to fd, then runs clean_up
// and writes what the check left; exits without destructors. A fault in
// guarded memory, even a late one, is written there as a FAIL of R-REG-3.
// Once the verdict came, run_spawned gives the cleanup a timeout of its own.
[[noreturn]] void run_child_body(const std::function<Outcome()> &body, const std::function<Leftover()> &clean_up,
                                 int fd);

}  // namespace kvblob::conformance
