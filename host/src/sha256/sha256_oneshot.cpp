#include "kvblob/host/sha256_oneshot.hpp"

#include <cstring>

#include "kvblob/host/sha256_compress.hpp"

namespace kvblob {

using namespace sha256_detail;

std::array<uint8_t, 32> sha256_oneshot(const void *data, size_t size)
{
    auto compress = compress_portable;
#ifdef KVBLOB_SHA_NI
    if (use_sha_ni()) compress = compress_sha_ni;
#endif
    uint32_t state[8];
    std::memcpy(state, initial, sizeof state);
    const auto *bytes = static_cast<const uint8_t *>(data);
    const size_t whole = size / 64;
    compress(state, bytes, whole);
    uint8_t last[128];
    const size_t rest = size - 64 * whole;
    if (rest) std::memcpy(last, bytes + 64 * whole, rest);
    const size_t tail_blocks = write_padding(last, rest, size);
    compress(state, last, tail_blocks);
    std::array<uint8_t, 32> out;
    for (int i = 0; i < 8; ++i) store_be(state[i], out.data() + 4 * i);
    return out;
}

}  // namespace kvblob
