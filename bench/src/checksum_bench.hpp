// kvblob-bench --checksums: what the bundled drivers' CRC32C costs on this
// CPU, for each implementation it runs (kvblob/support/crc32c.hpp), alone
// and fused with the copy a put or get makes, against memcpy of the same
// bytes in the same run. Which path a CPU takes sets the floor of every
// small row: a 4 KiB row's checksum is several times its copy.
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <vector>

namespace kvblob::bench {

struct ChecksumSettings {
    std::vector<uint64_t> sizes;                  // bytes per call
    std::chrono::duration<double> duration{0.5};  // per path, size and op, and again per baseline
};

// Prints the table (or one JSON object); returns 0, or 1 (having said why)
// where a path's checksum or copy differs from the portable path's.
int run_checksum_bench(const ChecksumSettings &settings, bool json, std::ostream &out);

}  // namespace kvblob::bench
