// block_keys: the chained block hash, SHA-256 (sha256_oneshot.hpp) or XXH3-128.
//
// Chain value 0 is the hash of the salt; chain value i+1 the hash of chain
// value i followed by block i's tokens, each 4 bytes little-endian (one byte
// order everywhere). A block's name is the first 16 bytes of its chain value.
#include <bit>
#include <cstring>
#include <stdexcept>

#include "kvblob/host/block_sequence.hpp"
#include "kvblob/host/key_codec.hpp"
#include "kvblob/host/sha256_oneshot.hpp"

// Inlined, header only: a block is about a hundred bytes, so a call into a
// library would cost as much as the hash.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace kvblob {

namespace {

constexpr size_t name_bytes = 16;  // 128 bits of the chain value name a block
constexpr std::string_view xxh3_tag = "-xxh3";

struct Sha256Chain {
    static constexpr size_t chain_bytes = 32;
    void hash(const uint8_t *input, size_t size, uint8_t *chain)
    {
        const auto digest = sha256_oneshot(input, size);
        std::memcpy(chain, digest.data(), chain_bytes);
    }
};

struct Xxh3Chain {
    static constexpr size_t chain_bytes = 16;
    void hash(const uint8_t *input, size_t size, uint8_t *chain)
    {
        XXH128_canonical_t canonical;  // big-endian: the same bytes on every machine
        XXH128_canonicalFromHash(&canonical, XXH3_128bits(input, size));
        std::memcpy(chain, canonical.digest, chain_bytes);
    }
};

// head, then the name in lowercase hex: encode_key's form, written at once.
std::string key_of(const std::string &head, const uint8_t *name)
{
    constexpr char digits[] = "0123456789abcdef";
    std::string key(head.size() + 2 * name_bytes, '\0');
    char *out = key.data();
    std::memcpy(out, head.data(), head.size());
    out += head.size();
    for (size_t i = 0; i < name_bytes; ++i) {
        *out++ = digits[name[i] >> 4];
        *out++ = digits[name[i] & 0xF];
    }
    return key;
}

// The prefix of the keys: the engine's, tagged with the hash unless sha256
// (whose keys were stored before there was a choice).
std::string key_prefix(std::string_view prefix, BlockHash hash)
{
    const bool tagged_already = prefix.ends_with(xxh3_tag);
    std::string out(prefix);
    if (hash == BlockHash::xxh3) out += xxh3_tag;
    if (!is_valid_prefix(out))
        throw KeyError("key prefix '" + out + "' is not 1 to 64 bytes of [a-z0-9_-]" +
                       (hash == BlockHash::sha256 ? "" : " (the engine's prefix, then the hash's tag " +
                                                             std::string(xxh3_tag) + ")"));
    if (hash == BlockHash::sha256 && tagged_already)
        throw KeyError("key prefix '" + out + "' ends in " + std::string(xxh3_tag) +
                       ", which names XXH3 block keys: choose another prefix for SHA-256 keys");
    return out;
}

template <class Chain>
std::vector<std::string> chain_keys(std::string_view prefix, std::span<const int32_t> tokens, size_t tokens_per_block,
                                    std::string_view salt)
{
    Chain chain;
    // input: the previous chain value, then the block's tokens.
    std::vector<uint8_t> input(Chain::chain_bytes + 4 * tokens_per_block);
    chain.hash(reinterpret_cast<const uint8_t *>(salt.data()), salt.size(), input.data());
    const std::string head = std::string(prefix) + "/v1/";  // encode_key's form, the prefix checked once
    std::vector<std::string> keys;
    keys.reserve(tokens.size() / tokens_per_block);
    uint8_t *block = input.data() + Chain::chain_bytes;
    for (size_t start = 0; start + tokens_per_block <= tokens.size(); start += tokens_per_block) {
        if constexpr (std::endian::native == std::endian::little) {
            std::memcpy(block, tokens.data() + start, 4 * tokens_per_block);
        } else {
            for (size_t t = 0; t < tokens_per_block; ++t) {
                const auto v = static_cast<uint32_t>(tokens[start + t]);
                for (size_t b = 0; b < 4; ++b) block[4 * t + b] = static_cast<uint8_t>(v >> (8 * b));
            }
        }
        chain.hash(input.data(), input.size(), input.data());
        keys.push_back(key_of(head, input.data()));
    }
    return keys;
}

}  // namespace

std::string_view to_string(BlockHash hash) { return hash == BlockHash::xxh3 ? "xxh3" : "sha256"; }

BlockHash parse_block_hash(std::string_view name)
{
    if (name == "sha256") return BlockHash::sha256;
    if (name == "xxh3") return BlockHash::xxh3;
    throw std::invalid_argument("block hash '" + std::string(name) + "' is not one of sha256, xxh3");
}

std::vector<std::string> block_keys(std::string_view prefix, std::span<const int32_t> tokens,
                                    size_t tokens_per_block, std::string_view salt, BlockHash hash)
{
    if (tokens_per_block == 0) throw std::invalid_argument("tokens_per_block must be positive");
    const std::string tagged = key_prefix(prefix, hash);
    if (hash == BlockHash::xxh3) return chain_keys<Xxh3Chain>(tagged, tokens, tokens_per_block, salt);
    return chain_keys<Sha256Chain>(tagged, tokens, tokens_per_block, salt);
}

}  // namespace kvblob
