// Capability flags by name, as tools print them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvblob {

// The names of the KVBLOB_CAP_* bits set in flags ("hints", "probe", ...),
// in bit order.
std::vector<std::string> capability_names(uint64_t flags);

}  // namespace kvblob
