// block_keys: the chained block hash, SHA-256 (sha256_chain.hpp) or XXH3-128.
//
// Chain value 0 is the hash of the salt; chain value i+1 the hash of chain
// value i followed by block i's tokens, each 4 bytes little-endian (one byte
// order everywhere). A block's name is the first 16 bytes of its chain value.
#include <algorithm>
#include <array>
#include <cstring>
#include <stdexcept>

#include "kvblob/host/block_sequence.hpp"
#include "kvblob/host/hex.hpp"
#include "kvblob/host/key_codec.hpp"
#include "kvblob/host/sha256_chain.hpp"
#include "kvblob/host/sha256_oneshot.hpp"
#include "kvblob/host/token_bytes.hpp"

// Inlined, header only: a block is about a hundred bytes, so a call into a
// library would cost as much as the hash.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace kvblob {

namespace {

constexpr size_t name_bytes = 16;  // 128 bits of the chain value name a block
constexpr std::string_view xxh3_tag = "-xxh3";

// Each chain names blocks in runs: name(tokens, names) writes the names of
// tokens' whole blocks and carries the chain value on to the next run.
class Sha256Chain {
public:
    Sha256Chain(std::string_view salt, size_t tokens_per_block)
        : chain_(sha256_oneshot(salt.data(), salt.size())), tokens_per_block_(tokens_per_block)
    {
    }
    void name(std::span<const int32_t> tokens, uint8_t *names)
    {
        sha256_chain(chain_.data(), tokens, tokens_per_block_, names);
    }

private:
    std::array<uint8_t, 32> chain_;
    size_t tokens_per_block_;
};

class Xxh3Chain {
public:
    Xxh3Chain(std::string_view salt, size_t tokens_per_block)
        : input_(chain_bytes + 4 * tokens_per_block), tokens_per_block_(tokens_per_block)
    {
        hash(reinterpret_cast<const uint8_t *>(salt.data()), salt.size());
    }
    void name(std::span<const int32_t> tokens, uint8_t *names)
    {
        for (size_t start = 0; start + tokens_per_block_ <= tokens.size(); start += tokens_per_block_) {
            write_token_bytes(tokens.data() + start, tokens_per_block_, input_.data() + chain_bytes);
            hash(input_.data(), input_.size());
            std::memcpy(names, input_.data(), name_bytes);
            names += name_bytes;
        }
    }

private:
    static constexpr size_t chain_bytes = 16;
    // The chain value of size bytes at bytes, put where the next input starts.
    void hash(const uint8_t *bytes, size_t size)
    {
        XXH128_canonical_t canonical;  // big-endian: the same bytes on every machine
        XXH128_canonicalFromHash(&canonical, XXH3_128bits(bytes, size));
        std::memcpy(input_.data(), canonical.digest, chain_bytes);
    }
    std::vector<uint8_t> input_;  // the chain value, then a block's tokens
    size_t tokens_per_block_;
};

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

// Names come in runs of this many keys (4 KiB, in the first-level cache),
// each run written out as keys before the next is hashed.
constexpr size_t run_keys = 256;

template <class Chain>
PackedKeys chain_keys(std::string_view prefix, std::span<const int32_t> tokens, size_t tokens_per_block,
                      std::string_view salt)
{
    Chain chain(salt, tokens_per_block);
    // encode_key's form, the prefix checked once. Copied 16 bytes at a time
    // (no call per key), so padded to 16: a last copy past the head lands
    // where the name's digits go next.
    std::string head = std::string(prefix) + "/v1/";
    const size_t head_bytes = head.size();
    head.resize((head_bytes + 15) / 16 * 16);
    const size_t keys = tokens.size() / tokens_per_block;
    PackedKeys out(keys, head_bytes + 2 * name_bytes);
    char *key = out.bytes();
    uint8_t names[run_keys * name_bytes];
    for (size_t first = 0; first < keys; first += run_keys) {
        const size_t count = std::min(run_keys, keys - first);
        chain.name(tokens.subspan(first * tokens_per_block, count * tokens_per_block), names);
        for (size_t i = 0; i < count; ++i, key += out.width()) {
            for (size_t at = 0; at < head_bytes; at += 16) std::memcpy(key + at, head.data() + at, 16);
            write_hex16(names + name_bytes * i, key + head_bytes);
        }
    }
    return out;
}

}  // namespace

std::string_view to_string(BlockHash hash) { return hash == BlockHash::xxh3 ? "xxh3" : "sha256"; }

BlockHash parse_block_hash(std::string_view name)
{
    if (name == "sha256") return BlockHash::sha256;
    if (name == "xxh3") return BlockHash::xxh3;
    throw std::invalid_argument("block hash '" + std::string(name) + "' is not one of sha256, xxh3");
}

PackedKeys packed_block_keys(std::string_view prefix, std::span<const int32_t> tokens, size_t tokens_per_block,
                             std::string_view salt, BlockHash hash)
{
    if (tokens_per_block == 0) throw std::invalid_argument("tokens_per_block must be positive");
    const std::string tagged = key_prefix(prefix, hash);
    if (hash == BlockHash::xxh3) return chain_keys<Xxh3Chain>(tagged, tokens, tokens_per_block, salt);
    return chain_keys<Sha256Chain>(tagged, tokens, tokens_per_block, salt);
}

std::vector<std::string> block_keys(std::string_view prefix, std::span<const int32_t> tokens,
                                    size_t tokens_per_block, std::string_view salt, BlockHash hash)
{
    return packed_block_keys(prefix, tokens, tokens_per_block, salt, hash).strings();
}

}  // namespace kvblob
