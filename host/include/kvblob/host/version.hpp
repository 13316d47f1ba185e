// Versions as people read them.
#pragma once

#include <cstdint>
#include <string>

namespace kvblob {

// The kvblob release this host library was built from.
const char *release_version();

// The same release, major and minor, packed by KVBLOB_MAKE_VERSION: what the
// loader offers a plugin as host_kvblob_version (entry.h).
uint32_t release_version_packed();

// An ABI version packed by KVBLOB_MAKE_VERSION, as "major.minor".
std::string abi_version_text(uint32_t version);

// What a tool's --version prints: "TOOL 0.1.0 (ABI 1.0, contract 1)".
std::string tool_version_banner(const std::string &tool);

}  // namespace kvblob
