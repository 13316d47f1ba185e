// The kvblob release this host library was built from.
#pragma once

namespace kvblob {
const char *release_version();
}
