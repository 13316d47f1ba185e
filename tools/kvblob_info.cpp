// kvblob-info PLUGIN: what a driver plugin is, or why the loader refuses it.
//
// Exit codes: 0 loaded and opened; 2 usage error; 3 refused by the loader
// (any stage, init included).
#include <CLI/CLI.hpp>

#include "kvblob/cli/plugin_flags.hpp"

#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "kvblob/host/capabilities.hpp"
#include "kvblob/host/json.hpp"
#include "kvblob/host/load_error.hpp"
#include "kvblob/host/plugin.hpp"
#include "kvblob/host/version.hpp"

namespace {

constexpr int exit_refused = 3;

std::string limit_text(uint64_t v) { return v == KVBLOB_NO_LIMIT ? "none" : std::to_string(v); }
std::string limit_json(uint64_t v) { return v == KVBLOB_NO_LIMIT ? "null" : std::to_string(v); }

const char *option_type_name(kvblob_option_type t)
{
    switch (t) {
    case KVBLOB_OPTION_STRING: return "string";
    case KVBLOB_OPTION_INT: return "int";
    case KVBLOB_OPTION_BOOL: return "bool";
    case KVBLOB_OPTION_BYTES: return "bytes";
    case KVBLOB_OPTION_MILLISECONDS: return "milliseconds";
    case KVBLOB_OPTION_CHOICE: return "choice";
    }
    return "unknown";
}

std::vector<std::pair<std::string, uint64_t>> limits_of(const kvblob_caps_t &c)
{
    return {{"max_rows_per_op", c.max_rows_per_op},
            {"max_spans_per_row", c.max_spans_per_row},
            {"max_key_bytes", c.max_key_bytes},
            {"max_object_bytes", c.max_object_bytes},
            {"max_ops_in_flight", c.max_ops_in_flight}};
}

std::string option_signature(const kvblob_option_desc_t &o)
{
    std::string text = std::string(o.name) + " (" + option_type_name(o.type);
    if (o.choices) text += std::string(": ") + o.choices;
    text += o.default_value ? std::string(", default '") + o.default_value + "'" : std::string(", required");
    return text + ")";
}

void print_options(std::ostream &out, const std::vector<kvblob_option_desc_t> &opts)
{
    for (const auto &o : opts) out << "  " << option_signature(o) << "\n      " << (o.help ? o.help : "") << "\n";
}

std::string options_json(const std::vector<kvblob_option_desc_t> &opts)
{
    std::string out = "[";
    for (size_t i = 0; i < opts.size(); ++i) {
        const auto &o = opts[i];
        out += std::string(i ? "," : "") + "{\"name\":" + kvblob::json_quote(o.name) +
               ",\"type\":" + kvblob::json_quote(option_type_name(o.type)) +
               ",\"default\":" + (o.default_value ? kvblob::json_quote(o.default_value) : "null") +
               ",\"choices\":" + (o.choices ? kvblob::json_quote(o.choices) : "null") +
               ",\"help\":" + kvblob::json_quote(o.help ? o.help : "") + "}";
    }
    return out + "]";
}

// A Markdown table cell: '|' and line breaks would end the cell or the row,
// and '<' '>' would make "<option>" an HTML tag that is not shown.
std::string markdown_cell(const std::string &text)
{
    std::string out;
    for (char c : text) {
        if (c == '|') out += "\\|";
        else if (c == '\n') out += ' ';
        else if (c == '<') out += "&lt;";
        else if (c == '>') out += "&gt;";
        else out += c;
    }
    return out;
}

// The options as a Markdown table, for a driver's page (docs/drivers/): the
// driver's own descriptors, so a test can regenerate the page's table and
// compare.
void print_options_markdown(std::ostream &out, const kvblob::Plugin &plugin, const std::vector<kvblob_option_desc_t> &opts)
{
    out << "| option | type | default | what it sets |\n|---|---|---|---|\n";
    for (const auto &o : opts) {
        std::string type = option_type_name(o.type);
        if (o.choices) type += std::string(": `") + o.choices + "`";
        std::string value = o.default_value ? (*o.default_value ? std::string("`") + o.default_value + "`" : "(empty)")
                                            : std::string("required");
        if (plugin.secret_option(o.name)) type += ", secret";  // never printed by the tools
        const std::string help = o.help ? o.help : "";
        out << "| `" << o.name << "` | " << markdown_cell(type) << " | " << markdown_cell(value) << " | "
            << markdown_cell(help) << " |\n";
    }
}

// An option the driver refused (R-OPN-1): the refusal is the driver's, the
// list of what it accepts is the plugin table's, which the host holds.
bool refused_an_option(const kvblob::LoadError &e)
{
    for (const auto &p : e.problems())
        if (p.rule == "R-OPN-1") return true;
    return false;
}

void print_refusal_json(const kvblob::LoadError &e, const kvblob::Plugin *plugin)
{
    std::cout << "{\"loaded\":false,\"file\":" << kvblob::json_quote(e.file())
              << ",\"stage\":" << kvblob::json_quote(kvblob::to_string(e.stage())) << ",\"problems\":[";
    bool first = true;
    for (const auto &p : e.problems()) {
        std::cout << (first ? "" : ",") << "{\"rule\":" << kvblob::json_quote(p.rule)
                  << ",\"reason\":" << kvblob::json_quote(p.reason) << "}";
        first = false;
    }
    std::cout << "],\"dlerror\":" << kvblob::json_quote(e.dlerror_text());
    if (plugin && refused_an_option(e)) std::cout << ",\"accepted_options\":" << options_json(plugin->options());
    std::cout << "}\n";
}

}  // namespace

int main(int argc, char **argv)
{
    CLI::App app{"Show a kvblob driver plugin's identity, ABI, capabilities and options,\n"
                 "or the loader's explanation of why it is refused."};
    app.set_version_flag("--version", kvblob::tool_version_banner("kvblob-info"));
    std::string spec;
    bool json = false;
    bool no_open = false;
    bool markdown = false;
    app.add_option("plugin", spec, "Path to a plugin .so, or a driver name such as 'memory'")->required();
    app.add_flag("--json", json, "Print one JSON object instead of text");
    app.add_flag("--markdown", markdown, "Print the options as a Markdown table (a driver's page in docs/drivers/)")
        ->excludes("--json");
    app.add_flag("--no-open", no_open, "Validate the plugin without opening a driver (no capabilities)");
    kvblob::cli::PluginFlags flags;
    kvblob::cli::add_plugin_flags(app, flags);
    app.footer("Exit codes: 0 loaded; 2 usage error; 3 refused by the loader.\n"
               "KVBLOB_DRIVER_PATH adds plugin directories; KVBLOB_LOADER_DEBUG=1 traces each stage.");
    if (auto done = kvblob::cli::parse(app, argc, argv)) return *done;
    const auto options = kvblob::cli::driver_options(flags, "kvblob-info");
    if (!options) return kvblob::cli::exit_usage;

    std::optional<kvblob::Plugin> loaded;
    try {
        loaded.emplace(kvblob::Plugin::load(spec, flags.load));
        const auto &plugin = *loaded;
        kvblob_caps_t caps{};
        bool opened = false;
        if (!no_open) {
            auto driver = plugin.open(*options);
            caps = driver.caps();
            opened = true;
        }
        const auto &t = plugin.table();
        auto opts = plugin.options();
        if (markdown) {
            print_options_markdown(std::cout, plugin, opts);
            return 0;
        }
        if (json) {
            std::cout << "{\"loaded\":true,\"file\":" << kvblob::json_quote(plugin.path().string())
                      << ",\"name\":" << kvblob::json_quote(plugin.name())
                      << ",\"version\":" << kvblob::json_quote(plugin.version())
                      << ",\"description\":" << kvblob::json_quote(plugin.description())
                      << ",\"abi_version\":" << kvblob::json_quote(kvblob::abi_version_text(plugin.abi_version()))
                      << ",\"contract_version\":" << t.contract_version;
            if (opened) {
                std::cout << ",\"capabilities\":" << kvblob::json_string_array(kvblob::capability_names(caps.flags))
                          << ",\"limits\":{";
                bool first = true;
                for (const auto &[name, value] : limits_of(caps)) {
                    std::cout << (first ? "" : ",") << kvblob::json_quote(name) << ":" << limit_json(value);
                    first = false;
                }
                std::cout << "}";
            }
            std::cout << ",\"options\":" << options_json(opts) << "}\n";
            return 0;
        }
        std::cout << "file:      " << plugin.path().string() << "\n"
                  << "driver:    " << plugin.name() << " " << plugin.version() << "\n";
        if (!plugin.description().empty()) std::cout << "           " << plugin.description() << "\n";
        std::cout << "ABI:       " << kvblob::abi_version_text(plugin.abi_version()) << " (host speaks "
                  << kvblob::abi_version_text(KVBLOB_ABI_VERSION_OLDEST) << ".." << kvblob::abi_version_text(KVBLOB_ABI_VERSION) << ")\n"
                  << "contract:  " << t.contract_version << "\n";
        if (opened) {
            std::cout << "capabilities:";
            const auto names = kvblob::capability_names(caps.flags);
            for (const auto &name : names) std::cout << " " << name;
            std::cout << (names.empty() ? " (none)" : "") << "\nlimits:\n";
            for (const auto &[name, value] : limits_of(caps))
                std::cout << "  " << name << std::string(20 - name.size(), ' ') << limit_text(value) << "\n";
        }
        std::cout << "options:" << (opts.empty() ? " (none)" : "") << "\n";
        print_options(std::cout, opts);
        return 0;
    } catch (const kvblob::LoadError &e) {
        const kvblob::Plugin *plugin = loaded ? &*loaded : nullptr;
        if (json) {
            print_refusal_json(e, plugin);
        } else {
            std::cerr << e.what() << "\n";
            if (plugin && refused_an_option(e)) {
                const auto opts = plugin->options();
                std::cerr << "The driver '" << plugin->name() << "' accepts " << (opts.empty() ? "no options" : "these options")
                          << (opts.empty() ? ".\n" : " (--option name=value):\n");
                print_options(std::cerr, opts);
            }
        }
        return exit_refused;
    }
}
