// Store keys: prefix/v1/hex(name) (contract.md, "Keys and objects").
//
// The prefix is a short lowercase namespace ([a-z0-9_-], 1 to 64 bytes); the
// name is non-empty bytes. Hex is lowercase, so every (prefix, name) pair has
// exactly one key and decoding inverts encoding.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace kvblob {

class KeyError : public std::invalid_argument {
public:
    using std::invalid_argument::invalid_argument;
};

struct DecodedKey {
    std::string prefix;
    std::string name;  // bytes
    bool operator==(const DecodedKey &) const = default;
};

inline constexpr size_t max_key_prefix_bytes = 64;

bool is_valid_prefix(std::string_view prefix);

// Throws KeyError for an invalid prefix or an empty name.
std::string encode_key(std::string_view prefix, std::string_view name);

// Throws KeyError saying what is wrong with key.
DecodedKey decode_key(std::string_view key);

}  // namespace kvblob
