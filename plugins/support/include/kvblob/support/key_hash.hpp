// A key's hash for the drivers' own tables (a batch's repeated keys, the
// memory store's shards and maps): XXH3, already compiled in for the
// trailer's digest, seeded once per process (key_hash.cpp). A row's key
// is hashed once, at admission (Row::key_hash); the memory store's shards
// and maps take that hash and keep it with the key.
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
