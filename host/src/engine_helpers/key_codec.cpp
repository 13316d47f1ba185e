#include "kvblob/host/key_codec.hpp"

#include "kvblob/host/hex.hpp"

namespace kvblob {

namespace {

constexpr std::string_view version_tag = "/v1/";

int hex_value(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;  // uppercase is refused: one key per name
}

}  // namespace

bool is_valid_prefix(std::string_view prefix)
{
    if (prefix.empty() || prefix.size() > max_key_prefix_bytes) return false;
    for (char c : prefix)
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return false;
    return true;
}

std::string encode_key(std::string_view prefix, std::string_view name)
{
    if (!is_valid_prefix(prefix))
        throw KeyError("key prefix '" + std::string(prefix) + "' is not 1 to 64 bytes of [a-z0-9_-]");
    if (name.empty()) throw KeyError("key name is empty");
    std::string key;
    key.reserve(prefix.size() + version_tag.size() + 2 * name.size());
    key.append(prefix).append(version_tag);
    const size_t digits = key.size();
    key.resize(digits + 2 * name.size());
    write_hex(reinterpret_cast<const uint8_t *>(name.data()), name.size(), key.data() + digits);
    return key;
}

DecodedKey decode_key(std::string_view key)
{
    const size_t slash = key.find('/');
    if (slash == std::string_view::npos) throw KeyError("key has no '/': expected prefix/v1/hex(name)");
    DecodedKey out;
    out.prefix = std::string(key.substr(0, slash));
    if (!is_valid_prefix(out.prefix))
        throw KeyError("key prefix '" + out.prefix + "' is not 1 to 64 bytes of [a-z0-9_-]");
    if (key.substr(slash, version_tag.size()) != version_tag)
        throw KeyError("key version is not v1: expected '" + out.prefix + "/v1/...'");
    std::string_view hex = key.substr(slash + version_tag.size());
    if (hex.empty()) throw KeyError("key name is empty");
    if (hex.size() % 2) throw KeyError("key name has an odd number of hex digits");
    out.name.reserve(hex.size() / 2);
    for (size_t i = 0; i < hex.size(); i += 2) {
        int hi = hex_value(hex[i]), lo = hex_value(hex[i + 1]);
        if (hi < 0 || lo < 0)
            throw KeyError("key name has a character that is not lowercase hex at offset " +
                           std::to_string(slash + version_tag.size() + (hi < 0 ? i : i + 1)));
        out.name += static_cast<char>(hi << 4 | lo);
    }
    return out;
}

}  // namespace kvblob
