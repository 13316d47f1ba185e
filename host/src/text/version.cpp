#include "kvblob/host/version.hpp"

#include <kvblob/version.h>

namespace kvblob {

const char *release_version() { return KVBLOB_RELEASE_VERSION; }

uint32_t release_version_packed() { return KVBLOB_MAKE_VERSION(KVBLOB_RELEASE_MAJOR, KVBLOB_RELEASE_MINOR); }

std::string abi_version_text(uint32_t v)
{
    return std::to_string(KVBLOB_VERSION_MAJOR(v)) + "." + std::to_string(KVBLOB_VERSION_MINOR(v));
}

std::string tool_version_banner(const std::string &tool)
{
    return tool + " " + release_version() + " (ABI " + abi_version_text(KVBLOB_ABI_VERSION) + ", contract " +
           std::to_string(KVBLOB_CONTRACT_VERSION) + ")";
}

}  // namespace kvblob
