// Memory for the tiered driver's own copies (a promotion's rows read again
// from below, a write=back block read back from the top tier), kept for
// the next copy rather than given back to the system. A copy of 32 rows of
// 1 MiB is 32 MiB, which malloc maps fresh and unmaps again every time: the
// page faults and the unmapping cost more than the copy, on the driver's
// own thread, beside the engine's next get (measured with perf:
// kvblob-bench --tier bottom at 1 MiB spent a fifth of its time in page
// faults and freeing pages).
#pragma once

#include "write_back.hpp"

#include <cstdint>
#include <mutex>
#include <vector>

namespace kvblob::tiered {

class CopyBuffers {
public:
    // max_kept: bytes of idle memory kept at most.
    explicit CopyBuffers(uint64_t max_kept) : max_kept_(max_kept) {}

    // A buffer of size bytes, contents unspecified: the smallest kept one
    // large enough, or a new one.
    Bytes take(uint64_t size);
    // Its memory kept for a later take, where the kept total stays within
    // max_kept; freed otherwise. Only once no tier can touch it.
    void give_back(Bytes bytes);
    uint64_t kept_bytes() const;

private:
    const uint64_t max_kept_;
    mutable std::mutex mu_;
    std::vector<Bytes> kept_;
    uint64_t kept_bytes_ = 0;  // their capacities
};

}  // namespace kvblob::tiered
