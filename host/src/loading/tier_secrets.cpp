// Which options of a driver made of drivers are secret. The tiered driver
// (plugins/tiered) takes its tiers' options as tier.N.<option>: keys its own
// table cannot describe, so neither its flags nor a name-based guess can say
// that tier N's <option> is one its driver marks secret ("greeting" flagged
// KVBLOB_OPTION_FLAG_SECRET looks harmless by name). The host asks tier N's
// driver itself, through its table, as it asks any driver.
#include <string>
#include <string_view>

#include "kvblob/host/plugin.hpp"

namespace kvblob {

namespace {

constexpr std::string_view tier_prefix = "tier.";
// As deep as the tiered driver lets tiers of tiers nest
// (plugins/tiered/tier_options.cpp): each level below loads a plugin per
// option, so a deeper key is taken as secret without loading anything (its
// open is refused anyway).
constexpr size_t most_nesting = 4;

// "tier.N." of a key tier.N.<rest> (N digits), or empty.
std::string_view tier_part(std::string_view key)
{
    if (key.substr(0, tier_prefix.size()) != tier_prefix) return {};
    size_t at = tier_prefix.size();
    while (at < key.size() && key[at] >= '0' && key[at] <= '9') ++at;
    if (at == tier_prefix.size() || at >= key.size() || key[at] != '.' || at + 1 == key.size()) return {};
    return key.substr(0, at + 1);
}

size_t nesting_of(std::string_view key)
{
    size_t depth = 0;
    for (std::string_view tier = tier_part(key); !tier.empty(); tier = tier_part(key)) {
        ++depth;
        key.remove_prefix(tier.size());
    }
    return depth;
}

}  // namespace

bool Plugin::secret_option(std::string_view name, const Options &options) const
{
    // A key the driver's table describes is judged by its table.
    for (uint64_t i = 0; table_->options && i < table_->option_count; ++i)
        if (table_->options[i].name && name == table_->options[i].name) return secret_option(name);
    const std::string_view tier = tier_part(name);
    if (tier.empty()) return secret_option(name);
    if (nesting_of(name) > most_nesting) return true;
    const std::string_view inner = name.substr(tier.size());
    const std::string driver_key = std::string(tier) + "driver";
    if (inner == "driver") return false;  // a driver's name or path
    std::string driver;
    Options tier_options;
    for (const auto &[key, value] : options) {
        if (key == driver_key) driver = value;
        else if (key.size() > tier.size() && std::string_view(key).substr(0, tier.size()) == tier)
            tier_options.emplace_back(key.substr(tier.size()), value);
    }
    if (driver.empty()) return secret_option(name);  // not a tier's option: the name decides
    try {
        // Found as the tiered driver finds its tiers: KVBLOB_DRIVER_PATH,
        // then its own folder.
        LoadOptions load;
        load.search_dirs.push_back(path_.parent_path());
        load.count_metrics = false;
        const Plugin tier_plugin = Plugin::load(driver, load);
        // Recursively: a tier may itself be made of tiers.
        return tier_plugin.secret_option(inner, tier_options);
    } catch (const std::exception &) {
        // Its driver cannot say which of its options are secret: none of the
        // tier's values is printed (the open will be refused anyway).
        return true;
    }
}

}  // namespace kvblob
