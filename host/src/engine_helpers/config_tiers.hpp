// A driver made of drivers (the tiered driver, plugins/tiered) in an
// engine's config file: its tiers as an array of tables, top first,
//
//   [[driver.tiers]]
//   driver = "memory"        # the tier's driver: a short name, or a path
//   capacity = "8G"          # the tier's own options
//
//   [[driver.tiers]]
//   driver = "file"
//   root = "/var/cache/kv"
//
// given to the driver as its flat options tier.N.driver, tier.N.<option>
// (N = the table's index, 0 the top).
#pragma once

#include <toml++/toml.h>

#include <filesystem>

#include "kvblob/host/config.hpp"

namespace kvblob {

// Appends the tiers' options to config.options (with their positions) and
// counts the tables in config.tier_tables. Throws ConfigError naming the
// file, the table's index and the key: a tier that is not a table, a tier
// without driver, an option that is not a string, number or boolean, and
// tiers given both here and as tier.N.* keys in [driver.options]. A relative
// driver path is relative to the config file's folder.
void read_tier_tables(const std::filesystem::path &file, const toml::node &tiers, DriverConfig &config);

}  // namespace kvblob
