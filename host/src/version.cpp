#include "kvblob/host/version.hpp"

namespace kvblob {
const char *release_version() { return KVBLOB_RELEASE_VERSION; }
}  // namespace kvblob
