// Reading one TOML node of an engine's config file, as every table of it is
// read: a mistake is a ConfigError at the node's line and column. Shared by
// the [driver] reader (config.cpp) and the [[driver.tiers]] reader
// (config_tiers.cpp).
#pragma once

#include <toml++/toml.h>

#include <filesystem>
#include <set>
#include <string>

namespace kvblob::config_nodes {

[[noreturn]] void fail(const std::filesystem::path &file, const toml::source_region &where, const std::string &what);

// Refuses any key of table not in allowed, at the key's own position.
void only_keys(const std::filesystem::path &file, const toml::table &table, const std::set<std::string> &allowed,
               const std::string &where);

// text, refused when it holds a NUL: the driver or the loader receives it
// as C text, which a NUL would silently cut short.
const std::string &whole_text(const std::filesystem::path &file, const toml::source_region &where,
                              const std::string &text, const std::string &what);

// An option's value as the driver receives it: a string as is, an integer,
// a boolean or a float as text. what names the option in a refusal (the
// value itself is never repeated: it may be a secret).
std::string scalar_text(const std::filesystem::path &file, const std::string &what, const toml::node &node);

}  // namespace kvblob::config_nodes
