// kvblob-bench --block-keys: what naming a request's blocks costs, for each
// hash block_keys offers (packed_block_keys, the form engines use), against
// the least work that hash can do for the same request, in the same run:
// the compressions the SHA-256 chain needs, one pass of XXH3 over the tokens.
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
