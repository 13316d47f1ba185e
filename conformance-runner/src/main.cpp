// kvblob-conformance: loads a driver plugin through the host loader and runs
// the conformance battery against it.
//
// Exit codes: 0 conformant; 1 checks failed; 2 usage error; 3 the plugin was
// refused by the loader; 4 run incomplete.
#include <CLI/CLI.hpp>

#include <fnmatch.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "check.hpp"
#include "kvblob/cli/plugin_flags.hpp"
#include "kvblob/cli/quantities.hpp"
#include "context.hpp"
#include "isolation.hpp"
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
        else throw CLI::ValidationError("--expectations", path + ":" + std::to_string(n) + ": unknown status '" + word + "'");
        out.push_back({glob, s, reason});
    }
    return out;
}

}  // namespace

int main(int argc, char **argv)
{
    CLI::App app{"Run the kvblob conformance battery against a driver plugin."};
    app.set_version_flag("--version", tool_version_banner("kvblob-conformance"));
    std::string driver, json_path, junit_path, expectations_path;
    std::vector<std::string> filters, excludes;
    bool list = false, no_isolation = false, strict = false;
    unsigned timeout = 60, repeat = 1;
    uint64_t seed = 20261130;
    auto *json_opt = app.add_option("--json", json_path, "Write the report as JSON lines to FILE (with --list: print JSON)")
                         ->expected(0, 1);
    app.add_option("-d,--driver", driver, "Plugin path or driver name (e.g. memory)");
    app.add_option("--filter", filters, "Run only checks whose id matches a glob (repeatable)");
    app.add_option("--exclude", excludes, "Skip checks whose id matches a glob (repeatable)");
    app.add_flag("--list", list, "List the checks and exit");
    app.add_option("--timeout", timeout, "Seconds per check before it is TIMEOUT")
        ->transform(cli::Count(static_cast<uint64_t>(cli::max_seconds)));
    app.add_flag("--no-isolation", no_isolation, "Run checks in this process (for a debugger)");
    app.add_option("--seed", seed, "Seed of the run's key prefix");
    app.add_option("--repeat", repeat, "Run each check N times (races)")->transform(cli::Count(1000000));
    app.add_option("--junit", junit_path, "Write a JUnit XML report to FILE");
    app.add_option("--expectations", expectations_path, "Lines 'GLOB STATUS REASON': expected failures (XFAIL)");
    app.add_flag("--strict", strict, "NOT_SUPPORTED fails a MUST check");
    cli::PluginFlags flags;
    cli::add_plugin_flags(app, flags);
    app.footer("Exit codes: 0 conformant; 1 checks failed; 2 usage error; 3 plugin refused by the loader; "
               "4 run incomplete.");
    if (auto done = cli::parse(app, argc, argv)) return *done;
    const bool json = json_opt->count() > 0;

    const auto &checks = battery();
    if (list) {
        for (const auto &c : checks) {
            if (json)
                std::cout << "{\"id\":" << json_quote(c.id) << ",\"rules\":" << json_string_array(c.rules)
                          << ",\"level\":" << (c.level == Level::must ? "\"MUST\"" : "\"SHOULD\"")
                          << ",\"needs\":{\"capabilities\":" << json_string_array(capability_names(c.needs_caps))
                          << ",\"hooks\":" << json_string_array(c.needs_hooks) << "},\"description\":"
                          << json_quote(c.description) << "}\n";
            else
                std::cout << c.id << "  [" << c.rules.front() << "]  " << c.description << "\n";
        }
        return 0;
    }
    if (driver.empty()) {
        std::cerr << "kvblob-conformance: --driver is required\n";
        return 2;
    }
    const auto parsed_options = cli::driver_options(flags, "kvblob-conformance");
    if (!parsed_options) return cli::exit_usage;
    const Options &options = *parsed_options;
    std::vector<Expectation> expectations;
    try {
        expectations = read_expectations(expectations_path);
    } catch (const CLI::Error &e) {
        std::cerr << "kvblob-conformance: " << e.what() << "\n";
        return 2;
    }

    std::optional<Plugin> plugin;
    Offer offer;
    kvblob_caps_t caps{};
    try {
        plugin = Plugin::load(driver, flags.load);
        // One driver opened here, closed before any fork: a refusal at init is
        // the loader's too, and what it declares decides which checks can run.
        auto probe = plugin->open(options);
        caps = probe.caps();
        offer = offer_of(probe);
    } catch (const LoadError &e) {
        std::cerr << e.what() << "\n";
        return 3;
    }

    // Keys unique to this run, and short, so that drivers with tight key
    // limits can run the battery: "kvbc-<seed>-<clock>" in base 36.
    auto base36 = [](uint64_t v) {
        std::string out;
        do {
            out.insert(out.begin(), "0123456789abcdefghijklmnopqrstuvwxyz"[v % 36]);
            v /= 36;
        } while (v);
        return out;
    };
    const auto clock = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
    const std::string prefix = "kvbc-" + base36(seed) + "-" + base36(clock % 2821109907456ull);  // 36^8
    const std::string sha256 = sha256_file_hex(plugin->path());
    std::ofstream json_out;
    if (json && !json_path.empty()) {
        json_out.open(json_path);
        if (!json_out) {
            std::cerr << "kvblob-conformance: cannot write " << json_path << "\n";
            return 2;
        }
        std::vector<std::string> command(argv, argv + argc), option_words(flags.options);
        json_out << "{\"runner\":" << json_quote(release_version())
                 << ",\"abi\":" << json_quote(abi_version_text(KVBLOB_ABI_VERSION))
                 << ",\"negotiated_abi\":" << json_quote(abi_version_text(plugin->abi_version()))
                 << ",\"contract\":" << KVBLOB_CONTRACT_VERSION << ",\"driver\":" << json_quote(plugin->path().string())
                 << ",\"sha256\":" << json_quote(sha256) << ",\"name\":" << json_quote(plugin->name())
                 << ",\"version\":" << json_quote(plugin->version())
                 << ",\"capabilities\":" << json_string_array(capability_names(caps.flags))
                 << ",\"limits\":{\"max_rows_per_op\":" << caps.max_rows_per_op
                 << ",\"max_spans_per_row\":" << caps.max_spans_per_row << ",\"max_key_bytes\":" << caps.max_key_bytes
                 << ",\"max_object_bytes\":" << caps.max_object_bytes
                 << ",\"max_ops_in_flight\":" << caps.max_ops_in_flight << "}"
                 << ",\"hooks\":" << json_string_array({offer.hooks.begin(), offer.hooks.end()})
                 << ",\"options\":" << json_string_array(option_words) << ",\"seed\":" << seed
                 << ",\"prefix\":" << json_quote(prefix) << ",\"command\":" << json_string_array(command) << "}\n"
                 << std::flush;
    }
    std::cout << "kvblob-conformance " << release_version() << ": driver " << plugin->name() << " "
              << plugin->version() << " (" << plugin->path().string() << ", sha256 " << sha256.substr(0, 16)
              << "...), seed " << seed << "\n";

    // SIGINT and SIGTERM end the run after killing the check in progress:
    // the summary is still printed, and the exit code says incomplete.
    struct sigaction stop {};
    stop.sa_handler = [](int) { request_stop(); };
    sigemptyset(&stop.sa_mask);
    sigaction(SIGINT, &stop, nullptr);
    sigaction(SIGTERM, &stop, nullptr);

    // The command that reruns one check exactly: the same driver, options,
    // seed and timeout.
    std::string rerun_prefix = std::string(argv[0]) + " --driver '" + driver + "'";
    for (const auto &kv : flags.options) rerun_prefix += " --option '" + kv + "'";
    if (flags.load.allow_untrusted_file) rerun_prefix += " --allow-untrusted-plugin";
    if (!flags.load.expected_sha256.empty()) rerun_prefix += " --sha256 " + flags.load.expected_sha256;
    rerun_prefix += " --seed " + std::to_string(seed) + " --timeout " + std::to_string(timeout);

    struct Row {
        const Check *check;
        Outcome outcome;
    };
    std::vector<Row> rows;
    int passed = 0, failed = 0, skipped = 0, unsupported = 0, xfail = 0, xpass = 0;
    for (size_t index = 0; index < checks.size(); ++index) {
        const Check &c = checks[index];
        for (unsigned rep = 0; rep < repeat && !stop_requested(); ++rep) {
            Outcome o;
            if ((!filters.empty() && !matches_any(filters, c.id)) || matches_any(excludes, c.id)) {
                o = {Status::skipped, "filtered out"};
            } else if (auto missing = missing_need(c, offer); !missing.empty()) {
                o = {Status::not_supported, missing};
            } else {
                o = run_isolated(
                    [&]() -> Outcome {
                        try {
                            // Keys name the check by its place in the battery (short).
                            Context ctx(*plugin, options, prefix, base36(index) + "." + base36(rep),
                                        std::chrono::seconds(timeout));
                            c.body(ctx);
                            return {Status::pass, ctx.notes()};
                        } catch (const CheckFailure &f) {
                            return {Status::fail, f.what()};
                        } catch (const NotSupported &n) {
                            return {Status::not_supported, n.what()};
                        } catch (const std::exception &e) {
                            return {Status::fail, std::string("unexpected error: ") + e.what()};
                        }
                    },
                    timeout, !no_isolation);
            }
            if (o.status != Status::skipped) {
                for (const auto &e : expectations)
                    if (fnmatch(e.glob.c_str(), c.id.c_str(), 0) == 0) {
                        if (o.status == e.status) o = {Status::xfail, e.reason};
                        else if (o.status == Status::pass) o = {Status::xpass, "expected " + std::string(to_string(e.status))};
                    }
                if (strict && o.status == Status::not_supported && c.level == Level::must) o.status = Status::fail;
            }
            switch (o.status) {
            case Status::pass: ++passed; break;
            case Status::skipped: ++skipped; break;
            case Status::not_supported: ++unsupported; break;
            case Status::xfail: ++xfail; break;
            case Status::xpass: ++xpass; ++failed; break;
            default: ++failed; break;
            }
            if (o.status != Status::skipped) {
                std::cout << "[" << to_string(o.status) << "] " << c.id;
                if (!o.message.empty()) std::cout << ": " << o.message;
                std::cout << "\n";
                if (o.status == Status::fail || o.status == Status::crash || o.status == Status::timeout)
                    std::cout << "    rerun: " << rerun_prefix << " --filter '" << c.id << "'\n";
                std::cout << std::flush;
            }
            if (json_out.is_open())
                json_out << "{\"id\":" << json_quote(c.id) << ",\"rules\":" << json_string_array(c.rules)
                         << ",\"status\":" << json_quote(to_string(o.status)) << ",\"message\":"
                         << json_quote(o.message) << "}\n"
                         << std::flush;
            rows.push_back({&c, o});
        }
    }
    if (!junit_path.empty()) {
        std::ofstream x(junit_path);
        auto esc = [](const std::string &s) {
            std::string o;
            for (char ch : s)
                o += ch == '<' ? "&lt;" : ch == '>' ? "&gt;" : ch == '&' ? "&amp;" : ch == '"' ? "&quot;" : std::string(1, ch);
            return o;
        };
        x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite name=\"kvblob-conformance\" tests=\"" << rows.size()
          << "\" failures=\"" << failed << "\" skipped=\"" << skipped + unsupported << "\">\n";
        for (const auto &r : rows) {
            x << "  <testcase classname=\"" << esc(plugin->name()) << "\" name=\"" << esc(r.check->id) << "\">";
            switch (r.outcome.status) {
            case Status::pass: case Status::xfail: break;
            case Status::skipped: case Status::not_supported:
                x << "<skipped message=\"" << esc(r.outcome.message) << "\"/>";
                break;
            default:
                x << "<failure message=\"" << esc(to_string(r.outcome.status)) << "\">" << esc(r.outcome.message)
                  << "</failure>";
            }
            x << "</testcase>\n";
        }
        x << "</testsuite>\n";
    }
    std::cout << passed << " passed, " << failed << " failed, " << skipped << " skipped, " << unsupported
              << " not supported, " << xfail << " xfail, " << xpass << " xpass\n";
    // An interrupted run certifies nothing, whatever it saw so far.
    const bool incomplete = stop_requested();
    std::cout << (failed == 0 && !incomplete ? "CONFORMANT" : "NOT CONFORMANT") << "\n";
    if (incomplete) {
        std::cout << "run incomplete: interrupted before every check ran\n";
        return 4;
    }
    return failed == 0 ? 0 : 1;
}
