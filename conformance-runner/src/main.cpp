// kvblob-conformance: loads a driver plugin through the host loader and runs
// the conformance battery against it.
//
// Exit codes: 0 conformant; 1 checks failed; 2 usage error; 3 the plugin was
// refused by the loader, or its probe gave no answer; 4 run incomplete; 5 no
// check ran; 6 undecided (nothing failed, but the machine starved checks).
#include <CLI/CLI.hpp>

#include <fnmatch.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <chrono>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "check.hpp"
#include "check_timeout.hpp"
#include "confine.hpp"
#include "kvblob/cli/plugin_flags.hpp"
#include "kvblob/cli/quantities.hpp"
#include "context.hpp"
#include "isolation.hpp"
#include "probe.hpp"
#include "report.hpp"
#include "kvblob/host/capabilities.hpp"
#include "kvblob/host/json.hpp"
#include "kvblob/host/sha256.hpp"
#include "kvblob/host/version.hpp"

using namespace kvblob;
using namespace kvblob::conformance;

namespace {

bool matches_any(const std::vector<std::string> &globs, const std::string &id)
{
    for (const auto &g : globs)
        if (fnmatch(g.c_str(), id.c_str(), 0) == 0) return true;
    return false;
}

struct Expectation {
    std::string glob;
    Status status;
    std::string reason;
    std::string where;  // FILE:LINE, named wherever the line decides an outcome
};

std::vector<Expectation> read_expectations(const std::string &path)
{
    std::vector<Expectation> out;
    if (path.empty()) return out;
    std::ifstream in(path);
    if (!in) throw CLI::ValidationError("--expectations", "cannot read " + path);
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
        ++n;
        if (line.empty() || line[0] == '#') continue;
        std::istringstream f(line);
        std::string glob, word, reason;
        f >> glob >> word;
        std::getline(f >> std::ws, reason);
        Status s;
        if (word == "FAIL") s = Status::fail;
        else if (word == "NOT_SUPPORTED") s = Status::not_supported;
        else if (word == "CRASH") s = Status::crash;
        else if (word == "TIMEOUT") s = Status::timeout;
        else if (word == "BLOCKED") s = Status::blocked;
        else throw CLI::ValidationError("--expectations", path + ":" + std::to_string(n) + ": unknown status '" + word + "'");
        out.push_back({glob, s, reason, path + ":" + std::to_string(n)});
    }
    return out;
}

// What the command line asked for.
struct Settings {
    std::string driver, json_path, junit_path, expectations_path;
    std::vector<std::string> filters, excludes;
    bool list = false, no_isolation = false, strict = false;
    bool json = false;  // --json given, with or without a file
    // --shard K/N: this run takes the checks whose place in the battery is
    // K-1 modulo N; N runs, each against a store of its own, run the whole
    // battery side by side (a store whose leases make checks wait).
    unsigned shard = 1, shards = 1;
    unsigned timeout = default_check_timeout_s, repeat = 1, run_timeout = 1800, give_up_after = 3;
    uint64_t seed = 20261130;
    // The modes this program runs in when it starts itself afresh for the
    // probe of the driver and for each check (see run_spawned).
    bool child_probe = false;
    long child_check = -1;
    unsigned child_rep = 0;
    std::string child_prefix;
    cli::PluginFlags flags;
};

// The probe (one open, then close, in a process of its own) is no check:
// --timeout may be set short to catch a hanging operation quickly, and a
// loaded machine's process start, plugin load and open must not fail the
// run for it. It gets --timeout, and at least a minute.
unsigned probe_timeout(const Settings &s) { return std::max(s.timeout, 60u); }

// Declares every flag of app into s; returns --json's option, whose count
// says whether it was given.
CLI::Option *add_flags(CLI::App &app, Settings &s)
{
    app.set_version_flag("--version", tool_version_banner("kvblob-conformance"));
    auto *json_opt = app.add_option("--json", s.json_path, "Write the report as JSON lines to FILE (with --list: print JSON)")
                         ->expected(0, 1);
    app.add_option("-d,--driver", s.driver, "Plugin path or driver name (e.g. memory)");
    app.add_option("--filter", s.filters, "Run only checks whose id matches a glob (repeatable)");
    app.add_option("--exclude", s.excludes, "Skip checks whose id matches a glob (repeatable)");
    app.add_flag("--list", s.list, "List the checks (id, rules, level, what they need, what they do) and exit");
    app.add_option("--timeout", s.timeout,
                   "Seconds per check before it is TIMEOUT (default " + std::to_string(default_check_timeout_s) + ")")
        ->transform(cli::Count(static_cast<uint64_t>(cli::max_seconds)));
    app.add_option("--run-timeout", s.run_timeout,
                   "Seconds for the whole run, the probe included (default 1800): the check in progress is then killed "
                   "and the checks after it are not run (exit 4)")
        ->transform(cli::Count(static_cast<uint64_t>(cli::max_seconds)));
    app.add_option("--give-up-after", s.give_up_after,
                   "Stop the run once this many checks in a row were TIMEOUT: the driver stopped answering, the checks "
                   "after them are not run (exit 1; default 3, 0 never)")
        ->transform(cli::Count(1000000, true));
    app.add_option("--shard", "Run only the K-th of N parts of the battery, the checks whose place in it is K-1 modulo N "
                              "(K/N, e.g. 2/3): N runs, each against a store of its own, run it whole side by side")
        ->type_name("K/N")
        ->each([&s](const std::string &v) {
            unsigned k = 0, n = 0;
            char slash = 0, rest = 0;
            std::istringstream in(v);
            const bool digits_slash_digits = v.find_first_not_of("0123456789/") == std::string::npos &&
                                             (in >> k >> slash >> n) && slash == '/' && !(in >> rest);
            if (!digits_slash_digits || n == 0 || n > 1000 || k == 0 || k > n)
                throw CLI::ValidationError("'" + v + "' is not K/N with 1 <= K <= N <= 1000 (e.g. 2/3)");
            s.shard = k, s.shards = n;
        });
    app.add_flag("--no-isolation", s.no_isolation, "Run checks in this process (for a debugger)");
    app.add_option("--seed", s.seed, "Seed of the run's key prefix (default 20261130)");
    app.add_option("--repeat", s.repeat, "Run each check N times (races; default 1)")->transform(cli::Count(1000000));
    app.add_option("--junit", s.junit_path, "Write a JUnit XML report to FILE");
    app.add_option("--expectations", s.expectations_path, "Lines 'GLOB STATUS REASON': expected failures (XFAIL)");
    app.add_flag("--strict", s.strict,
                 "Judge the driver whole: every check its declared capabilities, limits and hooks make applicable "
                 "must run and pass, so an expected failure (XFAIL) fails, and so does a check left out by --filter "
                 "or --exclude. NOT_SUPPORTED (not applicable to the driver) and NOT_EXERCISED (what this runner's "
                 "build or machine cannot exercise, e.g. device checks without CUDA) never fail");
    // Hidden: the runner's own modes.
    app.add_flag("--child-probe", s.child_probe)->group("");
    app.add_option("--child-check", s.child_check)->group("");
    app.add_option("--child-rep", s.child_rep)->group("");
    app.add_option("--child-prefix", s.child_prefix)->group("");
    cli::add_plugin_flags(app, s.flags);
    app.footer("Exit codes: 0 conformant; 1 checks failed (or the driver stopped answering: --give-up-after); "
               "2 usage error; 3 plugin refused by the loader, or its probe (one open and close) gave no answer; "
               "4 run incomplete (interrupted, or --run-timeout passed); 5 no check ran (the selection ran none, or "
               "the driver supports none of it): the run certifies nothing; 6 undecided: nothing failed, but the "
               "machine starved checks of the CPU while they waited (TIMEOUT, machine starved): rerun them.");
    return json_opt;
}

// --list: every check, as text or as JSON lines.
int list_checks(const std::vector<Check> &checks, bool json)
{
    for (const auto &c : checks) {
        if (json)
            std::cout << "{\"id\":" << json_quote(c.id) << ",\"rules\":" << json_string_array(c.rules)
                      << ",\"level\":" << (c.level == Level::must ? "\"MUST\"" : "\"SHOULD\"")
                      << ",\"needs\":{\"capabilities\":" << json_string_array(capability_names(c.needs_caps))
                      << ",\"hooks\":" << json_string_array(c.needs_hooks) << "},\"description\":"
                      << json_quote(c.description) << "}\n";
        else {
            // Every rule, the level and the needs, as --json gives them.
            std::string rules, needs;
            for (const auto &r : c.rules) rules += (rules.empty() ? "" : " ") + r;
            for (const auto &cap : capability_names(c.needs_caps)) needs += (needs.empty() ? "" : ", ") + cap;
            for (const auto &h : c.needs_hooks) needs += (needs.empty() ? "hook " : ", hook ") + h;
            std::cout << c.id << "  [" << rules << "]  " << (c.level == Level::must ? "MUST" : "SHOULD") << "  "
                      << (needs.empty() ? "" : "needs " + needs + "  ") << c.description << "\n";
        }
    }
    return 0;
}

// A glob that matches no check is a typo, not an empty selection: CI must
// not read "all skipped, CONFORMANT" from it. False, having said which, when
// one matches nothing.
bool every_glob_matches(const Settings &s, const std::vector<Expectation> &expectations,
                        const std::vector<Check> &checks)
{
    std::vector<std::pair<std::string, std::string>> globs;
    for (const auto &g : s.filters) globs.emplace_back("--filter", g);
    for (const auto &g : s.excludes) globs.emplace_back("--exclude", g);
    for (const auto &e : expectations) globs.emplace_back(s.expectations_path, e.glob);
    for (const auto &[where, glob] : globs) {
        bool any = false;
        for (const auto &c : checks) any = any || fnmatch(glob.c_str(), c.id.c_str(), 0) == 0;
        if (!any) {
            std::cerr << "kvblob-conformance: " << where << ": '" << glob << "' matches no check (see --list)\n";
            return false;
        }
    }
    return true;
}

// The runner's own modes, in the process it started afresh: the probe, or
// one check. The exit code when this process is such a child; nothing when
// it is the runner itself.
std::optional<int> run_as_child(const Settings &s, const Options &options, const std::vector<Check> &checks)
{
    if (!s.child_probe && s.child_check < 0) return std::nullopt;
    // A child takes its key before any plugin code runs, into memory no
    // symbol names (report_channel.hpp), then gives up what would let the
    // driver reach into the runner (confine.hpp).
    const std::unique_ptr<RunKey> key = take_child_key();
    if (!key) {
        std::cerr << "kvblob-conformance: --child-probe and --child-check are the runner's own modes\n";
        return 2;
    }
    const std::string unconfined = confine_child();
    if (s.child_probe) return probe_child(s.driver, s.flags.load, options, *key, unconfined);
    if (static_cast<size_t>(s.child_check) >= checks.size()) return 2;
    const Check &c = checks[static_cast<size_t>(s.child_check)];
    CheckRun run(c, s.driver, s.flags.load, nullptr, options, s.child_prefix, static_cast<size_t>(s.child_check),
                 s.child_rep, s.timeout);
    run_child_body([&] { return run.body(); }, [&] { return run.clean_up(); }, child_result_fd, *key);
}

// Says why the probe in a process of its own gave no usable answer.
void explain_failed_probe(const Settings &s, const Spawned &raw, bool refused)
{
    const Records &said = raw.records;
    std::cerr << raw.err;
    if (!raw.err.empty() && raw.err.back() != '\n') std::cerr << "\n";
    const std::string what = "kvblob-conformance: the probe of the driver (one open, then close) ";
    if (raw.interrupted)
        std::cerr << what << "was cut short: "
                  << (run_deadline_passed()
                          ? "the run's time ran out (--run-timeout " + std::to_string(s.run_timeout) + " s)"
                          : std::string("interrupted"))
                  << "\n";
    else if (raw.timed_out)
        std::cerr << what << "gave no answer within " << probe_timeout(s) << " s\n";
    else if (said.forged_bytes > 0 || said.overflowed)
        std::cerr << what << "wrote to its report channel (descriptor " << child_result_fd
                  << ") text the probe did not write: code in the driver's process writes to a descriptor "
                     "it does not own\n";
    else if (!refused)
        std::cerr << what << "ended without an answer (" << how_ended(raw.wait_status)
                  << "): the driver ended the process, or the probe could not report\n";
}

// The driver as the probe saw it, into probe. With isolation the probe runs
// in a fresh process: this one never loads plugin code, so a driver whose
// SDK starts threads at load or open never has them copied into a fork.
// With --no-isolation the plugin is loaded here, into plugin. The exit code
// when the probe gave no answer.
std::optional<int> probe_driver(const Settings &s, const Options &options, const std::vector<std::string> &self_args,
                                std::optional<Plugin> &plugin, Probe &probe)
{
    if (s.no_isolation) {
        try {
            plugin = Plugin::load(s.driver, s.flags.load);
            probe = probe_of(*plugin, options);
        } catch (const LoadError &e) {
            std::cerr << e.what() << "\n";
            return 3;
        }
        return std::nullopt;
    }
    adopt_orphans();  // what a check's process starts is reaped here once its group ends
    // The keys the children sign with are in this process's memory while
    // they run: no process of this user without CAP_SYS_PTRACE reads it.
    if (const std::string why = make_undumpable(); !why.empty())
        std::cerr << "kvblob-conformance: could not make the runner undumpable (" << why
                  << "): a process of this user may read the keys its checks sign with\n";
    std::vector<std::string> args = self_args;
    args.push_back("--child-probe");
    Spawned raw;
    run_spawned(args, probe_timeout(s), &raw);
    const bool exited_0 = WIFEXITED(raw.wait_status) && WEXITSTATUS(raw.wait_status) == 0;
    const bool refused = WIFEXITED(raw.wait_status) && WEXITSTATUS(raw.wait_status) == 3;
    const Records &said = raw.records;
    if (raw.timed_out || raw.interrupted || !exited_0 || said.authentic.size() != 1 || said.forged_bytes > 0 ||
        said.overflowed) {
        explain_failed_probe(s, raw, refused);
        return raw.interrupted ? 4 : 3;
    }
    probe = parse_probe(said.authentic.front());
    probe.out = raw.out;
    if (!probe.unconfined.empty())
        std::cerr << "kvblob-conformance: the checks' processes could not give up everything that lets a driver "
                     "reach into the runner: "
                  << probe.unconfined << "\n";
    return std::nullopt;
}

// The values of the options shown redacted (redact): a driver's stdout shown
// in a report has them replaced, as the report's options have.
std::vector<std::string> secret_values(const Options &options, const Options &shown)
{
    std::vector<std::string> out;
    for (size_t i = 0; i < options.size() && i < shown.size(); ++i)
        if (!options[i].second.empty() && options[i].second != shown[i].second) out.push_back(options[i].second);
    return out;
}

// text with every occurrence of each secret replaced by "<redacted>"; the
// search goes on after what it wrote, so it ends whatever the secrets are.
// Where text may start inside a secret (cut_start: the tail of a longer
// output), or goes on after cut_mark (a kept tail cut inside a line), the
// end of a secret there is replaced too, 4 bytes or more of it
// (kvblob::min_scrubbed_secret, as the host's without_secrets).
void scrub(std::string &text, const std::vector<std::string> &secrets, bool cut_start = false)
{
    const auto secret_end_at = [&](size_t at) {
        for (const auto &secret : secrets)
            for (size_t n = std::min(secret.size() - 1, text.size() - at); n >= kvblob::min_scrubbed_secret; --n)
                if (text.compare(at, n, secret, secret.size() - n, n) == 0) {
                    text.replace(at, n, "<redacted>");
                    return;
                }
    };
    if (cut_start) secret_end_at(0);
    for (size_t at = 0; (at = text.find(cut_mark, at)) != std::string::npos;) secret_end_at(at += cut_mark.size());
    for (const auto &secret : secrets)
        for (size_t at = 0; (at = text.find(secret, at)) != std::string::npos; at += std::strlen("<redacted>"))
            text.replace(at, secret.size(), "<redacted>");
}

// SIGINT and SIGTERM end the run after killing the check in progress: the
// summary is still printed, and the exit code says incomplete.
void stop_on_signals()
{
    struct sigaction stop {};
    stop.sa_handler = [](int) { request_stop(); };
    sigemptyset(&stop.sa_mask);
    sigaction(SIGINT, &stop, nullptr);
    sigaction(SIGTERM, &stop, nullptr);
}

// The command that reruns one check exactly: the same driver, options, seed
// and timeout.
std::string rerun_prefix_of(const char *argv0, const Settings &s, const Options &shown_options)
{
    std::string rerun_prefix = std::string(argv0) + " --driver '" + s.driver + "'";
    for (const auto &[k, v] : shown_options) rerun_prefix += " --option '" + k + "=" + v + "'";
    if (s.flags.load.allow_untrusted_file) rerun_prefix += " --allow-untrusted-plugin";
    if (!s.flags.load.expected_sha256.empty()) rerun_prefix += " --sha256 " + s.flags.load.expected_sha256;
    rerun_prefix += " --seed " + std::to_string(s.seed) + " --timeout " + std::to_string(s.timeout);
    return rerun_prefix;
}

// Every check of the battery, each --repeat times, in order: the rows, the
// tally, and whether the run gave up on a driver that stopped answering.
class BatteryRun {
public:
    BatteryRun(const Settings &s, const Options &options, const std::vector<Expectation> &expectations,
               const std::vector<std::string> &self_args, const std::string &prefix, const std::string &rerun_prefix,
               Plugin *plugin, const std::set<std::string> &secret_names)
        : s_(s), options_(options), expectations_(expectations), self_args_(self_args), prefix_(prefix),
          rerun_prefix_(rerun_prefix), plugin_(plugin)
    {
        secrets_ = secret_values(options, redact(options, secret_names));
        tally.strict = s.strict;
        tally.shard = s.shards > 1 ? std::to_string(s.shard) + "/" + std::to_string(s.shards) : "";
    }

    // Runs (or skips) check index, repetition rep, and accounts for it.
    Row row(const Check &c, size_t index, unsigned rep, const Offer &offer)
    {
        Outcome o;
        bool ran = false;
        if ((!s_.filters.empty() && !matches_any(s_.filters, c.id)) || matches_any(s_.excludes, c.id)) {
            o = {Status::skipped, "filtered out"};
            ++tally.unselected;
        } else if (index % s_.shards != s_.shard - 1) {
            o = {Status::skipped, "in another shard"};
            if (rep == 0) ++tally.other_shards;
        } else if (auto missing = missing_need(c, offer); !missing.empty()) {
            o = {Status::not_supported, missing};
        } else if (tally.stopped = why_stopped(); !tally.stopped.empty()) {
            o = {Status::skipped, "not run: " + tally.stopped};
            ++tally.not_run;
        } else {
            o = run(c, index, rep);
            // A check that answered NOT_SUPPORTED certifies nothing either.
            ran = o.status != Status::skipped && o.status != Status::not_supported &&
                  o.status != Status::not_exercised;
            account(o);
        }
        if (o.status != Status::skipped) judge(o, c);
        // What the driver wrote reaches the reports in these two: its
        // stdout's tail, and its stderr's in a crash's message.
        scrub(o.out.tail, secrets_, o.out.bytes > o.out.tail.size());
        scrub(o.message, secrets_);
        Row row{&c, o, ran, {}};
        // The command that reruns this check alone, where its outcome calls
        // for a look: in the text, JSON and JUnit reports.
        if (o.status == Status::fail || o.status == Status::crash || o.status == Status::timeout ||
            o.status == Status::blocked || o.status == Status::xpass)
            row.rerun = rerun_prefix_ + " --filter '" + c.id + "'";
        return row;
    }

    Tally tally;
    bool gave_up = false;

private:
    // Why the checks from here on are not run; empty while they are.
    std::string why_stopped() const
    {
        if (!tally.stopped.empty()) return tally.stopped;
        if (run_deadline_passed()) return "the run's time ran out (--run-timeout " + std::to_string(s_.run_timeout) + " s)";
        if (stop_requested()) return "interrupted before every check ran";
        return {};
    }

    Outcome run(const Check &c, size_t index, unsigned rep)
    {
        if (s_.no_isolation) return run_check(c, s_.driver, s_.flags.load, plugin_, options_, prefix_, index, rep, s_.timeout);
        std::vector<std::string> args = self_args_;
        args.insert(args.end(), {"--child-check", std::to_string(index), "--child-rep", std::to_string(rep),
                                 "--child-prefix", prefix_});
        return run_spawned(args, s_.timeout);
    }

    // A check cut short by a stop, and the count of TIMEOUTs in a row: a
    // driver that stopped answering would cost --timeout per check to the
    // end, so the run gives up on it.
    void account(Outcome &o)
    {
        if (o.status == Status::skipped) {  // cut short by a stop
            tally.stopped = why_stopped();
            o.message = "not run: " + tally.stopped;
            ++tally.not_run;
        }
        timeouts_in_a_row_ =
            o.status == Status::timeout ? timeouts_in_a_row_ + 1 : o.status == Status::skipped ? timeouts_in_a_row_ : 0;
        gave_up = s_.give_up_after > 0 && timeouts_in_a_row_ >= s_.give_up_after && tally.stopped.empty();
        if (gave_up)
            tally.stopped = "the driver stopped answering: " + std::to_string(timeouts_in_a_row_) +
                            " checks in a row were TIMEOUT (--give-up-after " + std::to_string(s_.give_up_after) + ")";
    }

    // Expected failures (XFAIL, XPASS), each naming the expectations line
    // that decided it; under --strict a waiver does not stand.
    void judge(Outcome &o, const Check &c) const
    {
        for (const auto &e : expectations_)
            if (fnmatch(e.glob.c_str(), c.id.c_str(), 0) == 0) {
                const std::string expected =
                    std::string(to_string(e.status)) + " by " + e.where + (e.reason.empty() ? "" : " (" + e.reason + ")");
                if (o.status == e.status && s_.strict)
                    o.message += "; expected " + expected + ", and --strict accepts no waiver";
                else if (o.status == e.status)
                    o.message = "expected " + expected + (o.message.empty() ? "" : ": " + o.message),
                    o.status = Status::xfail;
                else if (o.status == Status::pass)
                    o = {Status::xpass,
                         "passed, but " + e.where + " expects " + to_string(e.status) +
                             (e.reason.empty() ? "" : " (" + e.reason + ")") + ": the driver is fixed, remove that line",
                         o.left};
            }
    }

    const Settings &s_;
    const Options &options_;
    const std::vector<Expectation> &expectations_;
    const std::vector<std::string> &self_args_;
    const std::string &prefix_;
    const std::string &rerun_prefix_;
    Plugin *plugin_;
    std::vector<std::string> secrets_;  // option values no report shows
    unsigned timeouts_in_a_row_ = 0;
};

// The run after the probe: the report's header, every check, the summary.
int run_battery(char **argv, const Settings &s, const Options &options, const std::vector<Expectation> &expectations,
                const std::vector<std::string> &self_args, const Probe &probe, Plugin *plugin)
{
    const auto &checks = battery();
    const Options shown_options = redact(options, probe.secret_options);
    // Keys unique to this run, and short, so that drivers with tight key
    // limits can run the battery: "kvbc-<seed>-<clock>" in base 36.
    const auto clock = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
    const std::string prefix = "kvbc-" + base36(s.seed) + "-" + base36(clock % 2821109907456ull);  // 36^8
    const std::string sha256 = sha256_file_hex(probe.path);
    std::ofstream json_out;
    if (s.json && !s.json_path.empty()) {
        json_out.open(s.json_path);
        if (!json_out) {
            std::cerr << "kvblob-conformance: cannot write " << s.json_path << "\n";
            return 2;
        }
        json_header(json_out,
                    {probe, sha256, prefix, s.seed, shown_options, redact_words(self_args, probe.secret_options)});
    }
    stop_on_signals();
    // The header comes once the handlers are in place (and is flushed), so a
    // supervisor that waits for it may interrupt the run from then on.
    std::cout << "kvblob-conformance " << release_version() << ": driver " << probe.name << " "
              << probe.version << " (" << probe.path << ", sha256 " << sha256.substr(0, 16)
              << "...), seed " << s.seed << "\n"
              << std::flush;
    const std::string rerun_prefix = rerun_prefix_of(argv[0], s, shown_options);

    std::vector<Row> rows;
    BatteryRun run(s, options, expectations, self_args, prefix, rerun_prefix, plugin, probe.secret_options);
    Tally &tally = run.tally;
    if (probe.out.any()) {
        StdoutSeen out = probe.out;
        scrub(out.tail, secret_values(options, shown_options), out.bytes > out.tail.size());
        tally.add_stdout("probe", out);
        std::cout << "the driver wrote to stdout in the probe (one open, then close): " << stdout_text(out) << "\n"
                  << std::flush;
    }
    for (size_t index = 0; index < checks.size(); ++index)
        for (unsigned rep = 0; rep < s.repeat; ++rep) {
            const Row row = run.row(checks[index], index, rep, probe.offer);
            tally.add(row);
            print_row(std::cout, row);
            if (json_out.is_open()) json_row(json_out, row);
            rows.push_back(row);
        }
    // A run cut short certifies nothing, whatever it saw so far.
    tally.incomplete = !tally.stopped.empty();
    if (!s.junit_path.empty()) {
        std::ofstream x(s.junit_path);
        write_junit(x, probe.name, rows, tally);
    }
    if (json_out.is_open()) json_summary(json_out, tally);
    print_summary(std::cout, tally, prefix);
    // A driver that stopped answering failed the checks it hung in: the run
    // is not conformant, whatever the checks not run would have said.
    if (run.gave_up) return 1;
    if (tally.incomplete) return 4;
    if (tally.verdict() == "NO CHECK RAN") return 5;
    if (tally.verdict().rfind("UNDECIDED", 0) == 0) return 6;
    return tally.conformant() ? 0 : 1;
}

}  // namespace

int main(int argc, char **argv)
{
    CLI::App app{"Run the kvblob conformance battery against a driver plugin."};
    Settings s;
    const CLI::Option *json_opt = add_flags(app, s);
    if (auto done = cli::parse(app, argc, argv)) return *done;
    s.json = json_opt->count() > 0;

    const auto &checks = battery();
    if (s.list) return list_checks(checks, s.json);
    if (s.driver.empty()) {
        std::cerr << "kvblob-conformance: --driver is required\n";
        return 2;
    }
    const auto parsed_options = cli::driver_options(s.flags, "kvblob-conformance");
    if (!parsed_options) return cli::exit_usage;
    const Options &options = *parsed_options;
    std::vector<Expectation> expectations;
    try {
        expectations = read_expectations(s.expectations_path);
    } catch (const CLI::Error &e) {
        std::cerr << "kvblob-conformance: " << e.what() << "\n";
        return 2;
    }
    if (!every_glob_matches(s, expectations, checks)) return 2;
    if (auto done = run_as_child(s, options, checks)) return *done;

    std::optional<Plugin> plugin;  // only with --no-isolation
    Probe probe;
    // The run's time counts from here, the probe included.
    set_run_deadline(std::chrono::steady_clock::now() + std::chrono::seconds(s.run_timeout));
    const std::vector<std::string> self_args(argv, argv + argc);
    if (auto refused = probe_driver(s, options, self_args, plugin, probe)) return *refused;
    return run_battery(argv, s, options, expectations, self_args, probe, plugin ? &*plugin : nullptr);
}
