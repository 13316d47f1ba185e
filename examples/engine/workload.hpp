// The engine simulator's workload: requests whose token sequences share
// prefixes (a system prompt, then conversations that branch), and the KV
// bytes a block "computes" to, which depend on the block's key alone so a
// fetched block can be checked byte for byte.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace engine {

struct Request {
    std::vector<int32_t> tokens;
    bool novel = false;  // shares nothing beyond the system prompt with published work
};

// n requests: every one starts with the same system prompt; requests 4k to
// 4k+2 share the two turns of conversation k, then each adds a turn of its
// own; request 4k+3 is novel after the system prompt.
inline std::vector<Request> make_requests(size_t n, size_t system_tokens, size_t turn_tokens, uint64_t seed)
{
    std::mt19937_64 rng(seed);
    std::vector<int32_t> system(system_tokens);
    for (auto &t : system) t = static_cast<int32_t>(rng() % 32000);
    std::vector<Request> out(n);
    for (size_t i = 0; i < n; ++i) {
        auto &r = out[i];
        r.novel = i % 4 == 3;
        r.tokens = system;
        std::mt19937_64 conversation(seed ^ (r.novel ? 0x9e3779b97f4a7c15ull * (i + 1) : (i / 4) + 1));
        for (size_t t = 0; t < 2 * turn_tokens; ++t) r.tokens.push_back(static_cast<int32_t>(conversation() % 32000));
        std::mt19937_64 own(seed + 7919 * (i + 1));  // the request's own last turn
        for (size_t t = 0; t < turn_tokens; ++t) r.tokens.push_back(static_cast<int32_t>(own() % 32000));
    }
    return out;
}

// The KV bytes of the block named key: what both instances compute for it.
inline void compute_block(std::string_view key, uint8_t *dst, size_t n)
{
    uint64_t x = 0xcbf29ce484222325ull;
    for (unsigned char c : key) x = (x ^ c) * 0x100000001b3ull;
    for (size_t i = 0; i < n; i += 8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        std::memcpy(dst + i, &x, std::min<size_t>(8, n - i));
    }
}

}  // namespace engine
