#include "config_tiers.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "config_nodes.hpp"
#include "kvblob/host/discovery.hpp"

namespace kvblob {

namespace fs = std::filesystem;
using config_nodes::fail;

namespace {

// The table's keys in file order (toml++ keeps them sorted): a tier's options
// reach its driver in the order they are written, as [driver.options] do.
std::vector<std::pair<const toml::key *, const toml::node *>> in_file_order(const toml::table &table)
{
    std::vector<std::pair<const toml::key *, const toml::node *>> entries;
    for (const auto &[key, value] : table) entries.emplace_back(&key, &value);
    std::sort(entries.begin(), entries.end(), [](const auto &a, const auto &b) {
        const auto &x = a.first->source().begin, &y = b.first->source().begin;
        return x.line != y.line ? x.line < y.line : x.column < y.column;
    });
    return entries;
}

}  // namespace

void read_tier_tables(const fs::path &file, const toml::node &tiers, DriverConfig &config)
{
    const auto *array = tiers.as_array();
    if (!array)
        fail(file, tiers.source(), "driver.tiers must be an array of tables: write each tier as [[driver.tiers]]");
    if (array->empty()) fail(file, tiers.source(), "driver.tiers is empty: give each tier as [[driver.tiers]]");
    // One way or the other: two spellings of one tier's options would leave
    // the driver to pick which value wins.
    for (size_t i = 0; i < config.options.size(); ++i)
        if (config.options[i].first.rfind("tier.", 0) == 0) {
            const ConfigPosition at = config.option_positions[i];
            throw ConfigError(file, at.line, at.column,
                              "option '" + config.options[i].first +
                                  "' in [driver.options] gives a tier, and so does [[driver.tiers]]: give the tiers "
                                  "one way");
        }
    for (size_t index = 0; index < array->size(); ++index) {
        const toml::node &node = *array->get(index);
        const std::string where = "driver.tiers[" + std::to_string(index) + "] (tier " + std::to_string(index) + ")";
        const auto *table = node.as_table();
        if (!table) fail(file, node.source(), where + " must be a table of the tier's driver and options");
        const std::string prefix = "tier." + std::to_string(index) + ".";
        const auto *driver = table->get("driver");
        if (!driver) fail(file, node.source(), where + " has no key 'driver': name the tier's driver (driver = \"memory\")");
        if (!driver->is_string() || driver->as_string()->get().empty())
            fail(file, driver->source(), where + ", key 'driver': must be a non-empty string, the tier's driver");
        std::string name = config_nodes::whole_text(file, driver->source(), driver->as_string()->get(),
                                                    where + ", key 'driver'");
        // A file, as [driver] path is: relative to this file, not to the
        // engine's working directory.
        if (names_a_file(name) && fs::path(name).is_relative())
            name = (config.file.parent_path() / name).lexically_normal().string();
        config.options.emplace_back(prefix + "driver", name);
        config.option_positions.push_back({driver->source().begin.line, driver->source().begin.column});
        for (const auto &[key, value] : in_file_order(*table)) {
            const std::string k = config_nodes::whole_text(file, key->source(), std::string(key->str()),
                                                           "an option's name in " + where);
            if (k == "driver") continue;
            if (k.empty()) fail(file, key->source(), where + ": an option with an empty name");
            config.options.emplace_back(prefix + k,
                                        config_nodes::scalar_text(file, where + ", key '" + k + "'", *value));
            config.option_positions.push_back({value->source().begin.line, value->source().begin.column});
        }
    }
    config.tier_tables = array->size();
}

}  // namespace kvblob
