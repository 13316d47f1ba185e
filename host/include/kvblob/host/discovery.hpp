// Where a plugin named by the operator is found (abi-guide rule 12).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kvblob {

// The environment variable holding extra plugin directories, ':'-separated.
inline constexpr const char *driver_path_env = "KVBLOB_DRIVER_PATH";

// True when spec names a file (it holds a '/' or ends in ".so"); otherwise it
// is a short driver name such as "memory".
bool names_a_file(const std::string &spec);

// The file name a short driver name resolves to: "memory" ->
// "libkvblob_memory.so".
std::string plugin_file_name(const std::string &name);

// The directories searched for a short name, in order: KVBLOB_DRIVER_PATH
// (ignored in setuid programs), then extra_dirs, then the plugin folder
// beside the host library (lib/kvblob in the build tree and the install).
std::vector<std::filesystem::path> plugin_search_dirs(
    const std::vector<std::filesystem::path> &extra_dirs = {});

// The first existing candidate for spec, or nullopt. A file spec is returned
// as given.
std::optional<std::filesystem::path> find_plugin(
    const std::string &spec, const std::vector<std::filesystem::path> &extra_dirs = {});

}  // namespace kvblob
