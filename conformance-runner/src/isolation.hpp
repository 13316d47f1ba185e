// Runs one check in a forked child, so that a crash or a hang in the driver
// is reported (CRASH, TIMEOUT) and the run goes on.
#pragma once

#include <functional>
#include <string>

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

// body returns the outcome inside the child (or in-process with isolate off).
Outcome run_isolated(const std::function<Outcome()> &body, unsigned timeout_s, bool isolate);

}  // namespace kvblob::conformance
