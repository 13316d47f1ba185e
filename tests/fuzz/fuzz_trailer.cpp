// Object parsing: any stored bytes either pass the trailer check with a
// length that matches them, or get one of the named faults; and an object
// the support library writes (in either format version) always passes with
// its own checksum.
#include <cstdint>
#include <cstring>
#include <vector>

#include "kvblob/support/crc32c.hpp"
#include "kvblob/support/trailer.hpp"

using namespace kvblob::support;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t len = 0;
    uint32_t crc = 0;
    if (check_trailer(data, size, "fuzz-key", len, crc) == TrailerFault::none && len != size - trailer_size)
        __builtin_trap();

    std::vector<uint8_t> object(size + trailer_size);
    const uint32_t payload_crc = crc32c_copy(0, object.data(), data, size);
    write_trailer(object.data() + size, size % 2 ? trailer_v2 : trailer_v1, "fuzz-key", size, payload_crc);
    if (check_trailer(object.data(), object.size(), "fuzz-key", len, crc) != TrailerFault::none) __builtin_trap();
    if (len != size || crc != crc32c(0, data, size)) __builtin_trap();
    return 0;
}
