// A block's tokens as the bytes its hash reads: each token 4 bytes,
// little-endian, on every machine (so keys are the same everywhere).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace kvblob {

// Writes 4 * count bytes at out.
inline void write_token_bytes(const int32_t *tokens, size_t count, uint8_t *out)
{
    if constexpr (std::endian::native == std::endian::little) {
        std::memcpy(out, tokens, 4 * count);
    } else {
        for (size_t t = 0; t < count; ++t) {
            const auto v = static_cast<uint32_t>(tokens[t]);
            for (size_t b = 0; b < 4; ++b) out[4 * t + b] = static_cast<uint8_t>(v >> (8 * b));
        }
    }
}

}  // namespace kvblob
