// An engine picks its driver from a config file: a TOML file naming the
// plugin (a path or a short name), its options, and where to search.
//
//   [driver]
//   name = "memory"              # or: path = "/opt/acme/libkvblob_acme.so"
//   search_path = ["plugins"]    # optional; relative to the config file's folder
//   sha256 = "9f86d0..."         # optional: load only this exact file (R-LOAD-11)
//   allow_untrusted_file = false # optional: see LoadOptions (R-LOAD-10)
//
//   [driver.options]             # passed to open as key=value, in this order
//   store = "engine-a"
//   capacity = "1G"
//   workers = 4                  # integers and booleans are passed as text
//
//   [metrics]                    # optional
//   label = "prefill-0"          # the instance label of the driver's metrics
//
// A driver made of drivers (the tiered driver) takes its tiers as an array
// of tables, top first, each naming its driver and that tier's options;
// they reach the driver as tier.N.driver and tier.N.<option> (N the table's
// index), after [driver.options]:
//
//   [[driver.tiers]]
//   driver = "memory"            # a short name, or a path (relative to the file)
//   capacity = "8G"
//
//   [[driver.tiers]]
//   driver = "file"
//   root = "/var/cache/kv"
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "kvblob/host/plugin.hpp"

namespace kvblob {

// A config file that cannot be used: names the file, the line and column
// (0 when the problem is the file as a whole), and what is wrong.
class ConfigError : public std::runtime_error {
public:
    ConfigError(std::filesystem::path file, unsigned line, unsigned column, const std::string &what);
    const std::filesystem::path &file() const noexcept { return file_; }
    unsigned line() const noexcept { return line_; }
    unsigned column() const noexcept { return column_; }

private:
    std::filesystem::path file_;
    unsigned line_, column_;
};

// Where something stands in a config file (1-based; 0 when unknown).
struct ConfigPosition {
    unsigned line = 0, column = 0;
};

struct DriverConfig {
    std::filesystem::path file;  // where it was read from
    std::string driver;          // a plugin path, or a short name
    Options options;
    std::vector<ConfigPosition> option_positions;  // of each option's value, parallel to options
    std::vector<std::filesystem::path> search_path;  // absolute
    std::string sha256;                              // empty: not pinned
    bool allow_untrusted_file = false;
    std::string metrics_label;  // [metrics] label: the instance label of the driver's metrics
    size_t tier_tables = 0;     // [[driver.tiers]] tables given (their options are tier.N.*)
};

// Reads and checks file. Throws ConfigError.
DriverConfig read_driver_config(const std::filesystem::path &file);

// Loads the plugin config names. A plugin that is missing or refused is a
// LoadError whose reasons also name the config file.
Plugin load_configured_plugin(const DriverConfig &config);

// Opens a driver of plugin with config's options, then extra (a later value
// of one option wins in the driver). When the driver refuses an option of
// the file's (R-OPN-1: its message names the option), that is a ConfigError
// at the option's line and column, like every other mistake in the file,
// naming the option (a tier's as driver.tiers[N] and its key). Where the
// message names a tier of the file's ("tier N (driver) refused: ...", as
// the tiered driver passes a tier's refusal on), the option is looked for
// among that tier's options first, and a tier that refused no option of
// its own, or could not be loaded or opened at all (R-LOAD-9), is a
// ConfigError at the tier's driver key. Any other refusal is the loader's
// LoadError. No secret is printed (Plugin::secret_option among the
// options: a tier's secret too).
Driver open_configured_driver(const Plugin &plugin, const DriverConfig &config, const Options &extra = {},
                              LogSink log = {});

}  // namespace kvblob
