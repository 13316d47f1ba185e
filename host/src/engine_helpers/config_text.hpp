// A config file's bytes, read and checked before the TOML parser sees them
// (host/src/engine_helpers/config.cpp parses them).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace kvblob {

// The file's text. Throws ConfigError saying what the path is when it is not
// a regular file (a folder, a FIFO, a device, a socket: never opened in a way
// that blocks), when it cannot be read, when it is larger than
// max_config_bytes, or when the path holds a NUL (it would name a shorter
// path to the system).
inline constexpr size_t max_config_bytes = 1 << 20;
std::string read_config_text(const std::filesystem::path &file);

// Refuses text whose shape would make the parser recurse deep (it recurses
// once per part of a dotted key, and per nested array or inline table):
// more than max_key_parts parts in one key or header, or brackets and braces
// nested deeper than max_nesting. Throws ConfigError at the line and column
// where the bound is passed. Strings and comments are skipped, so a dot or
// bracket inside them counts for nothing.
inline constexpr unsigned max_key_parts = 64;
inline constexpr unsigned max_nesting = 32;
void prescan_config(const std::filesystem::path &file, std::string_view text);

}  // namespace kvblob
