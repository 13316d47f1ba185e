// A conformance check: an id, the contract rules it covers, its level, what
// it needs from the driver, and the body that observes the driver through
// the ABI alone.
#pragma once

#include <kvblob/kvblob.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace kvblob::conformance {

class Context;

enum class Level { must, should };

// The host a check's drivers see: the ABI version offered as the newest, and
// whether the notify service is lent (ABI 1.1). The battery runs most
// checks as the newest host does, and the families a version changes the
// layout under (data, admission, lifetime) again as older and polling hosts
// do (battery.cpp), since hosts of every version stay in use.
struct HostShape {
    uint32_t abi_version = KVBLOB_ABI_VERSION;
    bool lend_notify = true;
    bool operator==(const HostShape &) const = default;
};

struct Check {
    std::string id;
    std::vector<std::string> rules;
    Level level = Level::must;
    uint64_t needs_caps = 0;             // KVBLOB_CAP_* bits
    std::vector<std::string> needs_hooks;  // kvblob.scenarios/1 slot names
    std::string description;
    std::function<void(Context &)> body;
    HostShape host = {};
};

// Thrown by a check body: the driver broke rule.
class CheckFailure : public std::runtime_error {
public:
    CheckFailure(std::string rule, const std::string &message)
        : std::runtime_error("[" + rule + "] " + message), rule(std::move(rule))
    {
    }
    std::string rule;
};

// Thrown by a check body: a behaviour the check reads as evidence for its
// own rule (a get that is not READY as proof that nothing was stored) is
// broken, so the check cannot judge its rule. It names the check that judges
// that behaviour (by), whose FAIL says what is wrong; the check itself is
// reported BLOCKED, never FAIL of a rule it did not test.
class Blocked : public std::runtime_error {
public:
    Blocked(std::string by, const std::string &message)
        : std::runtime_error("blocked by " + by + ": " + message), by(std::move(by))
    {
    }
    std::string by;
};

// Thrown by a check body: the driver's declarations (capabilities, limits,
// hooks, options) make the check not applicable to it.
class NotSupported : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Thrown by a check body: this runner cannot exercise the check, whatever
// the driver declares: its build (no CUDA) or its machine (no GPU, no
// userfaultfd, too little address space). Reported NOT_EXERCISED, apart
// from what the driver supports, and never blamed on the driver.
class RunnerCannot : public NotSupported {
public:
    explicit RunnerCannot(const std::string &why) : NotSupported(why + ": the runner's limit, not the driver's") {}
};

// Fails the check with rule when condition is false.
inline void expect(bool condition, const std::string &rule, const std::string &message)
{
    if (!condition) throw CheckFailure(rule, message);
}

// Every check of the battery, in run order.
const std::vector<Check> &battery();

}  // namespace kvblob::conformance
