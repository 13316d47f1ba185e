// Where a plugin named by the operator is found (abi-guide rule 12).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kvblob {

// The environment variable holding extra plugin directories, ':'-separated.
inline constexpr const char *driver_path_env = "KVBLOB_DRIVER_PATH";

// True when spec names a file (it holds a '/' or ends in ".so" or holds
// ".so."); otherwise it is a short driver name such as "memory".
bool names_a_file(const std::string &spec);

// The file name a short driver name resolves to: "memory" ->
// "libkvblob_memory.so".
std::string plugin_file_name(const std::string &name);

// The directories searched for a short name, in order: KVBLOB_DRIVER_PATH
// (ignored in setuid programs), then extra_dirs, then the plugin folder
// beside the host library (lib/kvblob in the build tree and the install).
std::vector<std::filesystem::path> plugin_search_dirs(
    const std::vector<std::filesystem::path> &extra_dirs = {});

// The folders the dynamic linker searches for a bare library name, as it
// reports them (RTLD_DI_SERINFO): LD_LIBRARY_PATH as it read it at start
// (not in setuid programs), then the system's library folders. Its cache
// (/etc/ld.so.cache) is not read: a library found only there needs a path.
std::vector<std::filesystem::path> library_search_dirs();

// The one file spec names, or nullopt. A path (spec holds a '/') is returned
// as given. A bare file name ("libfoo.so", "libc.so.6") is looked for by the
// loader itself, never left to the dynamic linker's own search: in
// plugin_search_dirs(extra_dirs), then library_search_dirs(). A short name
// ("memory") is looked for as plugin_file_name(spec) in plugin_search_dirs.
std::optional<std::filesystem::path> find_plugin(
    const std::string &spec, const std::vector<std::filesystem::path> &extra_dirs = {});

}  // namespace kvblob
