#include "kvblob/support/key_hash.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <chrono>
#include <random>

namespace kvblob::support {

namespace {

// Drawn once per process: the keys come from engines, and with a fixed seed
// whoever picks them could pick keys that all land on one slot of the
// admission's table or one bucket of the memory store, making each row's
// look-up walk all the others. No hash leaves the process. Where the system
// has no random device (a bare chroot), the clock and an address stand in.
uint64_t draw_seed() noexcept
{
    try {
        std::random_device device;
        return (static_cast<uint64_t>(device()) << 32) ^ device();
    } catch (...) {
        static const int here = 0;
        return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
               reinterpret_cast<uintptr_t>(&here);
    }
}

}  // namespace

uint64_t key_hash(std::string_view key) noexcept
{
    static const uint64_t seed = draw_seed();
    return XXH3_64bits_withSeed(key.data(), key.size(), seed);
}

}  // namespace kvblob::support
