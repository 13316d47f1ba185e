#include "kvblob/host/sha256_chain.hpp"

#include <cstring>
#include <vector>

#include "kvblob/host/token_bytes.hpp"
#include "kvblob/host/sha256_compress.hpp"
#include "sha256_ni.hpp"

namespace kvblob {

using namespace sha256_detail;

namespace {

constexpr size_t chain_bytes = 32;

// One key's message, padded: the chain value's 32 bytes, the block's
// tokens, then the padding, which depends only on the length and so is
// written once for every key.
class Message {
public:
    explicit Message(size_t tokens_per_block) : tokens_(tokens_per_block)
    {
        const size_t size = chain_bytes + 4 * tokens_per_block, whole = size / 64;
        bytes_.resize(64 * whole + 128);
        blocks_ = whole + write_padding(bytes_.data() + 64 * whole, size - 64 * whole, size);
    }
    void set_tokens(const int32_t *block) { write_token_bytes(block, tokens_, bytes_.data() + chain_bytes); }
    uint8_t *data() { return bytes_.data(); }
    size_t blocks() const { return blocks_; }

private:
    size_t tokens_, blocks_;
    std::vector<uint8_t> bytes_;
};

void chain_portable(uint8_t chain[32], const int32_t *tokens, size_t tokens_per_block, size_t keys, uint8_t *names)
{
    Message message(tokens_per_block);
    uint8_t *bytes = message.data();
    std::memcpy(bytes, chain, chain_bytes);
    for (size_t i = 0; i < keys; ++i) {
        message.set_tokens(tokens + i * tokens_per_block);
        uint32_t state[8];
        std::memcpy(state, initial, sizeof state);
        compress_portable(state, bytes, message.blocks());
        for (int w = 0; w < 8; ++w) store_be(state[w], bytes + 4 * w);  // the digest: the next message's start
        std::memcpy(names + 16 * i, bytes, 16);
    }
    std::memcpy(chain, bytes, chain_bytes);
}

#ifdef KVBLOB_SHA_NI
// The message as the SHA extensions read it, 16 bytes (four words) at a
// time, with nothing copied per key: groups 0 and 1 are the chain value,
// which stays in registers as the digest's words; then the block's tokens,
// read where they lie (x86 is little-endian, the tokens' byte order in the
// message); then the tail: the last tokens_per_block % 4 tokens (written per
// key) and the padding (written once), held as words, so reading them needs
// no byte swap.
class NiMessage {
public:
    explicit NiMessage(size_t tokens_per_block)
        : token_groups_(tokens_per_block / 4), loose_tokens_(tokens_per_block % 4)
    {
        const size_t size = chain_bytes + 4 * tokens_per_block, whole = size / 64;
        // The tail starts at size rounded down to 16 bytes, so in the last
        // (partial) 64-byte block.
        uint8_t last[128] = {};
        blocks_ = whole + write_padding(last, size - 64 * whole, size);
        const size_t tail = chain_bytes + 16 * token_groups_ - 64 * whole;
        for (size_t w = 0; tail + 4 * w < 64 * (blocks_ - whole); ++w) tail_[w] = load_be(last + tail + 4 * w);
    }
    size_t blocks() const { return blocks_; }
    // The block's tokens the tail holds, each a word read big-endian from
    // the token's little-endian bytes: the token's bytes swapped.
    void set_loose_tokens(const int32_t *block)
    {
        for (size_t t = 0; t < loose_tokens_; ++t)
            tail_[t] = __builtin_bswap32(static_cast<uint32_t>(block[4 * token_groups_ + t]));
    }
    // Words 4g to 4g+3 of the message of block (g >= 2).
    KVBLOB_SHA_NI_TARGET __m128i group(const int32_t *block, size_t g) const
    {
        const size_t in_tokens = g - 2;
        if (in_tokens < token_groups_) return ni_load_words(reinterpret_cast<const uint8_t *>(block + 4 * in_tokens));
        return _mm_load_si128(reinterpret_cast<const __m128i *>(tail_ + 4 * (in_tokens - token_groups_)));
    }

private:
    size_t token_groups_, loose_tokens_, blocks_;
    alignas(16) uint32_t tail_[32] = {};
};

__attribute__((target("sha,sse4.1"))) void chain_sha_ni(uint8_t chain[32], const int32_t *tokens,
                                                        size_t tokens_per_block, size_t keys, uint8_t *names)
{
    NiMessage message(tokens_per_block);
    const NiState start = ni_state(_mm_load_si128(reinterpret_cast<const __m128i *>(initial)),
                                   _mm_load_si128(reinterpret_cast<const __m128i *>(initial + 4)));
    __m128i h0123 = ni_load_words(chain), h4567 = ni_load_words(chain + 16);
    for (size_t i = 0; i < keys; ++i) {
        const int32_t *block = tokens + i * tokens_per_block;
        message.set_loose_tokens(block);
        NiState s = start;
        // The first block: the chain value's words, late (the previous key's
        // digest), then the block's first tokens; then the rest, all early.
        ni_block<2>(s, h0123, h4567, message.group(block, 2), message.group(block, 3));
        for (size_t g = 4; g < 4 * message.blocks(); g += 4)
            ni_block<0>(s, message.group(block, g), message.group(block, g + 1), message.group(block, g + 2),
                        message.group(block, g + 3));
        ni_words(s, h0123, h4567);
        ni_store_words(h0123, names + 16 * i);
    }
    ni_store_words(h0123, chain);
    ni_store_words(h4567, chain + 16);
}
#endif

}  // namespace

void sha256_chain(uint8_t chain[32], std::span<const int32_t> tokens, size_t tokens_per_block, uint8_t *names)
{
    const size_t keys = tokens.size() / tokens_per_block;
#ifdef KVBLOB_SHA_NI
    if (use_sha_ni()) return chain_sha_ni(chain, tokens.data(), tokens_per_block, keys, names);
#endif
    chain_portable(chain, tokens.data(), tokens_per_block, keys, names);
}

}  // namespace kvblob
