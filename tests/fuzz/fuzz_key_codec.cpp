// Key decoding: any input either decodes, and then encodes back to exactly
// itself (one key per name), or is refused with a KeyError.
#include <cstdint>
#include <string_view>

#include "kvblob/host/key_codec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const std::string_view input(reinterpret_cast<const char *>(data), size);
    try {
        const auto key = kvblob::decode_key(input);
        if (kvblob::encode_key(key.prefix, key.name) != input) __builtin_trap();
    } catch (const kvblob::KeyError &) {
    }
    return 0;
}
