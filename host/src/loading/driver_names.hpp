// Advice about driver names for the loader's messages: which drivers a
// search found, the one nearest a mistyped name, and whether a plugin's
// file name and the name in its table agree (R-LOAD-6).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace kvblob {

// The short names of the plugins (libkvblob_<name>.so) in dirs, sorted,
// each once.
std::vector<std::string> drivers_in(const std::vector<std::filesystem::path> &dirs);

// The candidate nearest name by edit distance, or "" when none is near
// enough to be a likely typo.
std::string nearest_name(const std::string &name, const std::vector<std::string> &candidates);

// What to add to "no driver named 'X'": the nearest name found, and every
// driver found in dirs ("" when none was found).
std::string unknown_driver_advice(const std::string &name, const std::vector<std::filesystem::path> &dirs);

// The driver name a file's name promises ("libkvblob_memory.so" ->
// "memory"), or "" when the file is not named that way.
std::string name_in_file_name(const std::filesystem::path &file);

// Warns on stderr when file's name promises another driver than the one
// its table names: engines and configurations find a driver by its file
// name, so the two must agree.
void warn_if_misnamed(const std::filesystem::path &file, const std::string &table_name);

}  // namespace kvblob
