// Runs one check in a child process (a fresh one by default), so that a crash or a hang in the driver
// is reported (CRASH, TIMEOUT) and the run goes on.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace kvblob::conformance {

enum class Status { pass, fail, not_supported, skipped, timeout, crash, xfail, xpass };
const char *to_string(Status s);

struct Outcome {
    Status status = Status::fail;
    std::string message;
};

// Asks the run to stop (SIGINT, SIGTERM): the check in progress is killed and
// reported as interrupted. Async-signal-safe.
void request_stop();
bool stop_requested();


// The descriptor a spawned child writes its result to ("STATUS\nmessage").
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

// In a child: runs body, writes its outcome to fd (a fault in guarded memory
// is written there as a FAIL of R-REG-3) and exits without destructors.
[[noreturn]] void run_child_body(const std::function<Outcome()> &body, int fd);

}  // namespace kvblob::conformance
