#include "kvblob/support/key_hash.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace kvblob::support {

uint64_t key_hash(std::string_view key) noexcept { return XXH3_64bits(key.data(), key.size()); }

}  // namespace kvblob::support
