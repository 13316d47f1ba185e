// The small types the host's API speaks in: what a call is (OpKind), what a
// row came to (RowStatus), a refused call (CallError), where log lines and
// announcements go (LogSink, NotifySink) and how a plugin is loaded
// (LoadOptions). A header of their own so that the host's internal headers
// can name them without including the classes that use them (driver.hpp,
// plugin.hpp): no include runs from the host's insides back up to its API.
// driver.hpp and plugin.hpp include it, so an engine that includes either
// sees these types as before.
#pragma once

#include <kvblob/kvblob.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace kvblob {

// Receives the driver's log lines and the host's own notes about a driver.
using LogSink = std::function<void(kvblob_log_level level, const std::string &message)>;

// Sees each announcement of a driver that declares KVBLOB_CAP_NOTIFY (ABI
// 1.1), on the driver's thread, before the host wakes its waiters: for tools
// that judge drivers (the conformance battery, kvblob-bench). op may be one
// the admitting call has not returned yet. It runs inside the driver's call
// to notify, so it must not block, throw, or call the driver.
using NotifySink = std::function<void(kvblob_op_t *op, kvblob_notify_event event)>;

enum class OpKind { put, get, probe, remove };
const char *to_string(OpKind kind);

// What a caller of Driver::submit vouches for, so that the host does not
// check it again. distinct_keys: no two rows of the batch share a key,
// because they are rows of one operation an admission already checked (a
// driver composed of drivers passes its own admitted rows on to them). The
// host then skips its repeated-key check (R-ADM-4), which hashes every key,
// and makes every other check. A caller that vouches wrongly leaves the
// repeat to the driver's own admission (a conformant driver refuses it)
// rather than the host's refusal before dispatch: an engine has no reason
// to vouch.
enum class Vouch { nothing, distinct_keys };

// A call the driver (or the host, before dispatch) refused, or that failed.
class CallError : public std::runtime_error {
public:
    CallError(kvblob_status status, std::string rule, const std::string &message, bool refused = false);
    kvblob_status status() const noexcept { return status_; }
    const std::string &rule() const noexcept { return rule_; }
    // For a submit: true where it was refused, which certifies that nothing
    // the batch names was touched (R-ADM-1): by the host before the driver
    // was asked, or by the driver's REJECTED or CLOSED. False for a submit
    // that failed otherwise (the driver threw, or answered another status):
    // the memory its rows name may have been written, or may still be read
    // or written, and its regions stay registered for good (R-REG-2). False
    // for every call but a submit.
    bool refused() const noexcept { return refused_; }

private:
    kvblob_status status_;
    std::string rule_;
    bool refused_ = false;
};

struct RowStatus {
    kvblob_row_result result = KVBLOB_ROW_PENDING;
    int32_t driver_code = 0;
};

struct LoadOptions {
    // Directories searched after KVBLOB_DRIVER_PATH for a short name.
    std::vector<std::filesystem::path> search_dirs;
    // Load a plugin file that others could have written (world-writable, or
    // owned by another user who is not root), which is refused by default
    // (R-LOAD-10), as sudo and PAM refuse such modules.
    bool allow_untrusted_file = false;
    // When set (64 lowercase hex digits), the plugin file's SHA-256 must be
    // this, or it is refused before any of its code runs (R-LOAD-11).
    std::string expected_sha256;
    // The newest ABI version offered (KVBLOB_ABI_1_0: the driver as a 1.0
    // host sees it, polled, with no 1.1 feature). For tests and benchmarks;
    // engines leave it.
    uint32_t newest_abi_version = KVBLOB_ABI_VERSION;
    // Lend the notify service at ABI 1.1 (false: the driver as a 1.1 host
    // that polls sees it, with kvblob_host_services_t.notify NULL). For
    // tools that judge drivers; engines leave it.
    bool lend_notify = true;
    // How an R-LOAD-10 refusal tells the user to load the file anyway: the
    // setting's name where the user came from (the config key by default;
    // the command-line tools say --allow-untrusted-plugin). Empty where no
    // setting can allow the file (the tiered driver's tiers): the refusal
    // then suggests none. Last, so that the fields above keep their places
    // in aggregate initialization.
    std::string allow_untrusted_words = "allow_untrusted_file";
    // Count the drivers' metrics (kvblob/host/metrics.hpp). false: their
    // snapshots stay zero and they are not listed among the open drivers.
    // For kvblob-bench --metrics, which measures what counting costs;
    // engines leave it.
    bool count_metrics = true;
};


}  // namespace kvblob
