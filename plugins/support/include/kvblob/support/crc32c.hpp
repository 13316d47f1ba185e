// CRC32C (Castagnoli), the checksum every bundled driver stores with its
// objects. The CPU is asked once, at run time, what it has: carry-less
// multiply folding over 512-bit registers (AVX-512 and VPCLMULQDQ), else
// over 256-bit ones (AVX2 and VPCLMULQDQ), else over 128-bit ones
// (PCLMULQDQ: on AMD CPUs at every size, on others below 12 KiB), else the
// SSE4.2 crc32 instruction in three independent streams, else a
// slicing-by-8 table.
// Each gives the same checksum.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kvblob::support {

// Extends crc (0 to start) over n bytes.
uint32_t crc32c(uint32_t crc, const void *data, size_t n);

// Copies n bytes from src to dst and returns crc extended over them, in one
// pass over the data (a put reads its spans once).
uint32_t crc32c_copy(uint32_t crc, void *dst, const void *src, size_t n);

// True when the hardware instruction is in use.
bool crc32c_hardware();

// Each implementation this CPU runs, the portable one first and the widest
// last: for tests that hold them to one another, and for measuring.
struct Crc32cPath {
    const char *name;
    uint32_t (*plain)(uint32_t crc, const void *data, size_t n);
    uint32_t (*copy)(uint32_t crc, void *dst, const void *src, size_t n);
};
const std::vector<Crc32cPath> &crc32c_paths();

}  // namespace kvblob::support
