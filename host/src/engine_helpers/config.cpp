#include "kvblob/host/config.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "config_nodes.hpp"
#include "config_text.hpp"
#include "config_tiers.hpp"
#include "kvblob/host/discovery.hpp"
#include "kvblob/host/printable.hpp"

namespace kvblob {

namespace fs = std::filesystem;

ConfigError::ConfigError(fs::path file, unsigned line, unsigned column, const std::string &what)
    // Escaped (printable.hpp): the path and what the file says reach a
    // terminal, and a file may hold escape sequences.
    : std::runtime_error("kvblob: config " + printable(file.string()) +
                         (line ? ":" + std::to_string(line) + ":" + std::to_string(column) : std::string()) + ": " +
                         printable(what)),
      file_(std::move(file)),
      line_(line),
      column_(column)
{
}

namespace {

using config_nodes::fail;
using config_nodes::only_keys;
using config_nodes::whole_text;

// tier.N.<option>: a tier's option of a driver made of drivers.
struct TierKey {
    size_t index;
    std::string option;
};
std::optional<TierKey> tier_of(const std::string &key)
{
    if (key.rfind("tier.", 0) != 0) return std::nullopt;
    const size_t dot = key.find('.', 5);
    if (dot == std::string::npos || dot == 5 || dot + 1 == key.size() || dot - 5 > 2 ||
        key.find_first_not_of("0123456789", 5) != dot)
        return std::nullopt;
    return TierKey{std::stoul(key.substr(5, dot - 5)), key.substr(dot + 1)};
}

// [metrics] label = "...": the instance label of the driver's metrics.
std::string metrics_label(const fs::path &file, const toml::node &node)
{
    const auto *table = node.as_table();
    if (!table) fail(file, node.source(), "[metrics] must be a table");
    only_keys(file, *table, {"label"}, "[metrics]");
    const auto *label = table->get("label");
    if (!label) return {};
    if (!label->is_string()) fail(file, label->source(), "[metrics] label must be a string");
    const std::string &text = label->as_string()->get();
    if (const std::string problem = metrics_label_problem(text); !problem.empty())
        fail(file, label->source(), "[metrics] label " + problem);
    return text;
}

}  // namespace

DriverConfig read_driver_config(const fs::path &file)
{
    const std::string text = read_config_text(file);
    prescan_config(file, text);
    toml::table root;
    try {
        root = toml::parse(text, file.string());
    } catch (const toml::parse_error &e) {
        fail(file, e.source(), std::string(e.description()));
    }
    only_keys(file, root, {"driver", "metrics"}, "the file");
    auto *driver = root["driver"].as_table();
    if (!driver) throw ConfigError(file, 0, 0, "no [driver] table: name the driver to load");
    only_keys(file, *driver, {"name", "path", "search_path", "options", "tiers", "sha256", "allow_untrusted_file"},
              "[driver]");

    DriverConfig config;
    config.file = fs::absolute(file);
    const auto *name = driver->get("name");
    const auto *path = driver->get("path");
    if (name && path) fail(file, path->source(), "give the driver's name or its path, not both");
    if (!name && !path) fail(file, driver->source(), "[driver] needs name = \"...\" or path = \"...\"");
    const auto *which = name ? name : path;
    if (!which->is_string() || which->as_string()->get().empty())
        fail(file, which->source(), std::string(name ? "name" : "path") + " must be a non-empty string");
    config.driver = whole_text(file, which->source(), which->as_string()->get(), name ? "name" : "path");
    // name is looked up in the driver folders; a file goes in path, which is
    // resolved against this file. Taking "../x.so" as a name would load
    // whatever the search finds, relative to the engine's working directory.
    if (name && (names_a_file(config.driver) || config.driver.find("..") != std::string::npos))
        fail(file, name->source(),
             "name = \"" + config.driver + "\" is a file, not a driver name: write path = \"" + config.driver +
                 "\" (relative to this file), or give the short name (\"memory\" for libkvblob_memory.so)");
    // A relative path is relative to the config file, like the search path.
    if (path && fs::path(config.driver).is_relative())
        config.driver = (config.file.parent_path() / config.driver).lexically_normal().string();

    if (const auto *search = driver->get("search_path")) {
        const auto *dirs = search->as_array();
        if (!dirs) fail(file, search->source(), "search_path must be an array of folder names");
        for (const auto &dir : *dirs) {
            if (!dir.is_string()) fail(file, dir.source(), "search_path entries must be strings");
            fs::path p = whole_text(file, dir.source(), dir.as_string()->get(), "a search_path entry");
            config.search_path.push_back(p.is_relative() ? (config.file.parent_path() / p).lexically_normal() : p);
        }
    }
    if (const auto *pin = driver->get("sha256")) {
        const auto *digest = pin->as_string();
        const bool hex64 = digest && digest->get().size() == 64 &&
                           digest->get().find_first_not_of("0123456789abcdef") == std::string::npos;
        if (!hex64) fail(file, pin->source(), "sha256 must be 64 lowercase hex digits");
        config.sha256 = digest->get();
    }
    if (const auto *allow = driver->get("allow_untrusted_file")) {
        if (!allow->is_boolean()) fail(file, allow->source(), "allow_untrusted_file must be true or false");
        config.allow_untrusted_file = allow->as_boolean()->get();
    }
    if (const auto *metrics = root.get("metrics")) config.metrics_label = metrics_label(file, *metrics);
    if (const auto *opts = driver->get("options")) {
        const auto *table = opts->as_table();
        if (!table) fail(file, opts->source(), "[driver.options] must be a table of key = value");
        // toml++ keeps a table's keys sorted; options go to open in file order.
        std::vector<std::pair<const toml::key *, const toml::node *>> entries;
        for (const auto &[key, value] : *table) entries.emplace_back(&key, &value);
        std::sort(entries.begin(), entries.end(), [](const auto &a, const auto &b) {
            const auto &x = a.first->source().begin, &y = b.first->source().begin;
            return x.line != y.line ? x.line < y.line : x.column < y.column;
        });
        for (const auto &[key, value] : entries) {
            const std::string k =
                whole_text(file, key->source(), std::string(key->str()), "an option's name in [driver.options]");
            config.options.emplace_back(k, config_nodes::scalar_text(file, "option '" + k + "'", *value));
            config.option_positions.push_back({value->source().begin.line, value->source().begin.column});
        }
    }
    if (const auto *tiers = driver->get("tiers")) read_tier_tables(file, *tiers, config);
    return config;
}

Plugin load_configured_plugin(const DriverConfig &config)
{
    try {
        return Plugin::load(config.driver, LoadOptions{config.search_path, config.allow_untrusted_file, config.sha256});
    } catch (const LoadError &e) {
        auto problems = e.problems();
        for (auto &p : problems) p.reason += " (driver named in " + config.file.string() + ")";
        throw LoadError(e.file(), e.stage(), std::move(problems), e.dlerror_text());
    }
}

namespace {

// The tier a driver made of drivers names in its refusal: the tiered driver
// passes a tier's on as "tier 1 (file) refused: ..." (and a tier that is
// itself tiered passes on its own tier's: "tier 1 (tiered) refused: ...
// tier 0 (file) refused: ..."). prefix is the start of that tier's keys
// among the file's options ("tier.1.", "tier.1.tier.0."); words_at is
// where the message names the tier, after which it quotes the tier's own
// option names.
struct NamedTier {
    std::string prefix;
    size_t words_at = 0;
};

// Where "tier N (" stands in said from from on, and N; npos when nowhere.
std::pair<size_t, std::string> next_tier_named(const std::string &said, size_t from)
{
    for (size_t at = said.find("tier ", from); at != std::string::npos; at = said.find("tier ", at + 1)) {
        if (at > 0 && std::isalpha(static_cast<unsigned char>(said[at - 1]))) continue;  // "frontier 2 ("
        const size_t digits = at + 5, end = said.find_first_not_of("0123456789", digits);
        if (end != digits && end != std::string::npos && said.compare(end, 2, " (") == 0)
            return {at, said.substr(digits, end - digits)};
    }
    return {std::string::npos, {}};
}

bool has_key(const Options &options, const std::string &key)
{
    return std::any_of(options.begin(), options.end(), [&](const auto &o) { return o.first == key; });
}

// The innermost tier said names that the file gives (its tier.N.driver is
// among options); none where the message names no tier of the file's.
std::optional<NamedTier> tier_named_in(const std::string &said, const Options &options)
{
    std::optional<NamedTier> named;
    std::string prefix;
    for (size_t from = 0;;) {
        const auto [at, index] = next_tier_named(said, from);
        if (at == std::string::npos || !has_key(options, prefix + "tier." + index + ".driver")) return named;
        prefix += "tier." + index + ".";
        from = at + 1;
        named = NamedTier{prefix, from};
    }
}

// The first of candidates (indexes into options) whose key, less strip
// leading characters, said names from from on: quoted, as drivers write an
// option ('workers'), or, where bare_too, else bare.
std::optional<size_t> first_named(const std::string &said, size_t from, const Options &options,
                                  const std::vector<size_t> &candidates, size_t strip, bool bare_too)
{
    size_t best = std::string::npos, which = 0;
    for (const bool quoted : {true, false}) {
        if (!quoted && !bare_too) break;
        for (const size_t i : candidates) {
            const std::string name = options[i].first.substr(strip);
            const size_t at = said.find(quoted ? "'" + name + "'" : name, from);
            if (at < best) best = at, which = i;
        }
        if (best != std::string::npos) return which;
    }
    return std::nullopt;
}

// Which of the file's options a refusal of open is about (an index into
// options), or none. Where the message names a tier, that tier's options
// are looked at first (a sibling tier or the driver's own options may well
// have an option of the same name), and a refusal that names none of them
// is the tier's own, at its driver key. Otherwise, for a bad option, the
// option the message names first (R-OPN-1 says it names one).
std::optional<size_t> entry_refused(const std::string &said, bool bad_option, const Options &options)
{
    if (const auto tier = tier_named_in(said, options)) {
        std::vector<size_t> of_tier;
        for (size_t i = 0; i < options.size(); ++i)
            if (options[i].first.rfind(tier->prefix, 0) == 0) of_tier.push_back(i);
        if (bad_option)
            if (const auto which =
                    first_named(said, tier->words_at, options, of_tier, tier->prefix.size(), false))
                return which;
        for (const size_t i : of_tier)
            if (options[i].first == tier->prefix + "driver") return i;
    }
    if (!bad_option) return std::nullopt;
    std::vector<size_t> every(options.size());
    for (size_t i = 0; i < every.size(); ++i) every[i] = i;
    return first_named(said, 0, options, every, 0, true);
}

// A refusal of open as a mistake in the file, at the line and column of
// the option it is about: an option the driver refused, or a tier's driver
// where the tier could not be loaded or opened. Scrubbed as the driver's
// own words are: a secret option's value, or a URL with a password in it,
// is shown redacted, and no secret any option holds is left in the rest of
// the message.
ConfigError refusal_at(const Plugin &plugin, const DriverConfig &config, const Options &all, size_t which,
                       const LoadError &e)
{
    const ConfigPosition at = which < config.option_positions.size() ? config.option_positions[which] : ConfigPosition{};
    const auto &[key, value] = config.options[which];
    const bool hidden = plugin.secret_option(key, all) || holds_credentials(value);
    const auto tier = config.tier_tables ? tier_of(key) : std::nullopt;
    const std::string named = tier ? "driver.tiers[" + std::to_string(tier->index) + "] (tier " +
                                         std::to_string(tier->index) + "), key '" + tier->option + "'"
                                   : "option '" + key + "'";
    const std::string by = "driver " + plugin.name() + " (" + e.file() + ")";
    const std::string what = e.rule() == "R-OPN-1" ? " refused by " + by : ": " + by + " could not load or open the tier";
    return ConfigError(config.file, at.line, at.column,
                       without_secrets(named + " = " + (hidden ? std::string(redacted_value) : "\"" + value + "\"") +
                                           what + ": [" + e.rule() + "] " + e.problems().front().reason,
                                       plugin.secrets_in(all)));
}

}  // namespace

Driver open_configured_driver(const Plugin &plugin, const DriverConfig &config, const Options &extra, LogSink log)
{
    Options all = config.options;
    all.insert(all.end(), extra.begin(), extra.end());
    try {
        return plugin.open(all, std::move(log), {}, config.metrics_label);
    } catch (const LoadError &e) {
        // Only open's own refusal: a bad option (R-OPN-1), or any other
        // failure (R-LOAD-9), such as a tier that could not be loaded or
        // opened. What the host found wrong with the driver is its own.
        if (e.stage() != LoadStage::init || (e.rule() != "R-OPN-1" && e.rule() != "R-LOAD-9")) throw;
        const std::string &said = e.problems().front().reason;
        const auto which = entry_refused(said, e.rule() == "R-OPN-1", config.options);
        if (!which || has_key(extra, config.options[*which].first)) throw;  // not the file's value that was refused
        throw refusal_at(plugin, config, all, *which, e);
    }
}

}  // namespace kvblob
