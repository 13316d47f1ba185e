// What kvblob's command-line tools share: the flags that name a plugin's
// options and trust, and the meaning of a usage error (exit code 2).
#pragma once

#include <CLI/CLI.hpp>

#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "kvblob/host/plugin.hpp"

namespace kvblob::cli {

constexpr int exit_usage = 2;

struct PluginFlags {
    std::vector<std::string> options;  // key=value words
    LoadOptions load;
};

// Adds --option (repeatable), --allow-untrusted-plugin and --sha256.
inline void add_plugin_flags(CLI::App &app, PluginFlags &flags)
{
    flags.load.allow_untrusted_words = "--allow-untrusted-plugin";  // a refusal names the flag (R-LOAD-10)
    app.add_option("-o,--option", flags.options, "key=value passed to the driver's open (repeatable)");
    app.add_flag("--allow-untrusted-plugin", flags.load.allow_untrusted_file,
                 "Load a plugin file others could have written (world-writable, or another user's)");
    app.add_option("--sha256", flags.load.expected_sha256, "Load the plugin only if its file has this SHA-256")
        ->check(CLI::Validator(
            [](std::string &v) {
                return v.size() == 64 && v.find_first_not_of("0123456789abcdef") == std::string::npos
                           ? std::string()
                           : std::string("must be 64 lowercase hex digits");
            },
            "HEX64"));
}

// Parses argv. Returns the exit code when the tool should stop now: 0 after
// --help or --version, exit_usage for any other parse error (CLI11's own
// codes are not what the tools document), said in one line: the tool, the
// flag and why.
inline std::optional<int> parse(CLI::App &app, int argc, char **argv)
{
    std::string tool = argc > 0 && argv[0] ? argv[0] : "kvblob";
    tool = tool.substr(tool.find_last_of('/') + 1);
    app.failure_message([tool](const CLI::App *, const CLI::Error &e) { return tool + ": " + e.what() + "\n"; });
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError &e) {
        return app.exit(e) == 0 ? 0 : exit_usage;
    }
    return std::nullopt;
}

// The driver options, or nullopt after saying on stderr which word is wrong.
inline std::optional<Options> driver_options(const PluginFlags &flags, const char *tool)
{
    try {
        return parse_option_assignments(flags.options);
    } catch (const std::invalid_argument &e) {
        std::cerr << tool << ": " << e.what() << "\n";
        return std::nullopt;
    }
}

}  // namespace kvblob::cli
