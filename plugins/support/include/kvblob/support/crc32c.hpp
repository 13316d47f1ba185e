// CRC32C (Castagnoli), the checksum every bundled driver stores with its
// objects. Uses the SSE4.2 crc32 instruction when the CPU has it (checked
// once at run time), a slicing-by-8 table otherwise.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvblob::support {

// Extends crc (0 to start) over n bytes.
uint32_t crc32c(uint32_t crc, const void *data, size_t n);

// Copies n bytes from src to dst and returns crc extended over them, in one
// pass over the data (a put reads its spans once).
uint32_t crc32c_copy(uint32_t crc, void *dst, const void *src, size_t n);

// True when the hardware instruction is in use.
bool crc32c_hardware();

}  // namespace kvblob::support
