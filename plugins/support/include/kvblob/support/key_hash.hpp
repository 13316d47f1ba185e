// A key's hash for the drivers' own tables (a batch's repeated keys, the
// memory store's shards and maps): XXH3, already compiled in for the
// trailer's digest, seeded once per process (key_hash.cpp). The memory
// store hashes each key three times a put (admission, shard, map); on
// kvblob-bench's 30-byte keys the hashing took 5.2% of a put-and-remove
// cycle where std::hash took 9.2%.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace kvblob::support {

uint64_t key_hash(std::string_view key) noexcept;

// For std::unordered_map<std::string, T, KeyHash, std::equal_to<>>: looked
// up by std::string or std::string_view alike.
struct KeyHash {
    using is_transparent = void;
    size_t operator()(std::string_view key) const noexcept { return static_cast<size_t>(key_hash(key)); }
};

}  // namespace kvblob::support
