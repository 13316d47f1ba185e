// What the runner learns of a driver before its checks: identity,
// capabilities, scenario hooks and which option values are secret. With
// isolation the probe runs in a freshly started child (--child-probe) and
// answers in lines "KEY VALUE", one signed record on child_result_fd; the runner itself never
// loads plugin code.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "check.hpp"
#include "context.hpp"
#include "isolation.hpp"
#include "kvblob/host/plugin.hpp"

namespace kvblob::conformance {

struct Probe {
    std::string path, name, version;
    uint32_t abi_version = 0;
    kvblob_caps_t caps{};
    Offer offer;
    std::set<std::string> secret_options;  // names the driver marks secret
    // What a check's process could not give up before it loaded the driver
    // (confine_child), as the probe's process found; empty when nothing.
    std::string unconfined;
    // What the probe's process wrote to stdout: seen by the runner, not
    // part of the probe's record.
    StdoutSeen out;
};

// Opens one driver from plugin to see what it offers, then closes it.
// Throws LoadError when the driver refuses to open.
Probe probe_of(const Plugin &plugin, const Options &options);

// The child mode: loads and probes, writes the probe to child_result_fd
// (report_channel.hpp) signed under key, with what the process could not
// give up (unconfined).
// Returns the exit code (0, or 3 when the loader refused; the reason on stderr).
int probe_child(const std::string &driver, const LoadOptions &load, const Options &options, const RunKey &key,
                const std::string &unconfined);

std::string format_probe(const Probe &p);
Probe parse_probe(const std::string &text);

// The options as they may be shown: a value is "<redacted>" when the driver
// marks its option secret or its name looks secret (looks_secret), so that a
// secret leaks nowhere even before the driver could be asked.
Options redact(const Options &options, const std::set<std::string> &secret);
// The same on a command line: the value of each --option NAME=VALUE word.
std::vector<std::string> redact_words(const std::vector<std::string> &words, const std::set<std::string> &secret);

// Short base-36 text of v (keys must fit drivers with tight key limits).
std::string base36(uint64_t v);

// One check against a driver (plugin when already loaded, else loaded from
// driver here), in two steps: its body, whose throws become the verdict;
// then its cleanup, which removes what the body wrote (cleanup.hpp) within
// a time of its own, so that it never changes the verdict.
class CheckRun {
public:
    CheckRun(const Check &c, const std::string &driver, const LoadOptions &load, const Plugin *plugin,
             const Options &options, const std::string &prefix, size_t index, unsigned rep, unsigned timeout_s);
    CheckRun(const CheckRun &) = delete;
    CheckRun &operator=(const CheckRun &) = delete;

    Outcome body();
    // Within timeout_s from now (less a reserve), after body().
    Leftover clean_up();

private:
    const Check &check_;
    const std::string &driver_;
    const LoadOptions &load_;
    const Plugin *plugin_;
    const Options &options_;
    std::string prefix_, tag_;
    unsigned timeout_s_;
    std::optional<Plugin> loaded_;
    std::optional<Context> ctx_;
};

// Both steps at once (--no-isolation): the verdict, with what was left.
Outcome run_check(const Check &c, const std::string &driver, const LoadOptions &load, const Plugin *plugin,
                  const Options &options, const std::string &prefix, size_t index, unsigned rep,
                  unsigned timeout_s);

}  // namespace kvblob::conformance
