// A row's bytes in and out of host memory, whatever memory its spans are:
// host spans are copied directly, device spans through device_copy.hpp's
// pinned staging. The checksum is computed in the same pass either way
// (R-ROW-6 without a second pass over the bytes).
#pragma once

#include <cstdint>
#include <string>

#include "kvblob/support/driver_base.hpp"

namespace kvblob::support {

// Copies span's bytes to dst, continuing crc over them. False, with error
// set, when a device transfer fails.
bool copy_from_span(uint32_t &crc, uint8_t *dst, const SpanRef &span, std::string &error);

// Copies span.length bytes from src into span, continuing crc over them.
bool copy_to_span(uint32_t &crc, const SpanRef &span, const uint8_t *src, std::string &error);

}  // namespace kvblob::support
