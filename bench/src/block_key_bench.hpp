// kvblob-bench --block-keys: what naming a request's blocks costs, for each
// hash block_keys offers, against the same hash run once over the same
// token bytes in the same run (the most that hash can give those bytes).
#pragma once

#include <chrono>
#include <cstddef>
#include <ostream>

namespace kvblob::bench {

struct BlockKeySettings {
    size_t request_tokens = 128 * 1024;
    size_t tokens_per_block = 16;
    std::chrono::duration<double> duration{0.5};  // per hash, and again per baseline
};

// Prints the table (or one JSON object); returns 0.
int run_block_key_bench(const BlockKeySettings &settings, bool json, std::ostream &out);

}  // namespace kvblob::bench
