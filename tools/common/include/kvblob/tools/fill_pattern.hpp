// The bytes the project's tools and tests put into an object and expect
// back: the battery, kvblob-bench, kvblob-soak and the driver tests all
// write them and compare what a get returns. A test helper, not part of the
// host's API (it lived in kvblob/host/batch.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvblob {

// Deterministic bytes for (seed, offset): what a key's object holds.
inline void fill_pattern(uint8_t *dst, size_t n, uint64_t seed)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < n; ++i) {
        if ((i & 7) == 0) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        dst[i] = static_cast<uint8_t>(x >> ((i & 7) * 8));
    }
}

}  // namespace kvblob
