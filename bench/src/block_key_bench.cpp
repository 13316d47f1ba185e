#include "block_key_bench.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kvblob/host/block_sequence.hpp"
#include "kvblob/host/sha256_oneshot.hpp"
#include "measure.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace kvblob::bench {

namespace {

struct Row {
    BlockHash hash;
    const char *baseline;
    double seconds, baseline_seconds;
};

}  // namespace

int run_block_key_bench(const BlockKeySettings &s, bool json, std::ostream &out)
{
    std::vector<int32_t> tokens(s.request_tokens);
    for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>((i * 2654435761u) % 152064);
    const double bytes = 4.0 * static_cast<double>(tokens.size());
    const size_t blocks = tokens.size() / s.tokens_per_block;

    volatile unsigned char sink = 0;  // keeps each baseline's result alive
    // SHA-256's floor is the compressions the chain needs, not one pass over
    // the tokens: each key hashes the previous chain value (32 bytes) and
    // its block's tokens, padded to whole 64-byte blocks. The same
    // compression over that many blocks in one pass (sha256_oneshot) is the
    // limit a chain can approach.
    const size_t blocks_per_key = (32 + 4 * s.tokens_per_block + 9 + 63) / 64;
    const std::vector<uint8_t> chain_bytes(blocks * blocks_per_key * 64 - 9, 0x5a);
    const std::string chain_label =
        "one SHA-256 over the chain's " + std::to_string(blocks * blocks_per_key) + " blocks";
    std::vector<Row> rows;
    for (BlockHash hash : {BlockHash::sha256, BlockHash::xxh3}) {
        Row r{hash, hash == BlockHash::sha256 ? chain_label.c_str() : "XXH3-128, one pass over the tokens", 0, 0};
        r.seconds = median_call_seconds(
            [&] {
                // The form engines are told to use: every key in one buffer.
                const auto keys = packed_block_keys("bench", tokens, s.tokens_per_block, "model", hash);
                if (keys.size() != blocks) throw std::logic_error("packed_block_keys gave a wrong number of keys");
            },
            s.duration);
        r.baseline_seconds = median_call_seconds(
            [&] {
                if (hash == BlockHash::sha256) {
                    sink = sink ^ sha256_oneshot(chain_bytes.data(), chain_bytes.size())[0];
                } else {
                    sink = sink ^ static_cast<unsigned char>(XXH3_128bits(tokens.data(), 4 * tokens.size()).low64);
                }
            },
            s.duration);
        rows.push_back(r);
    }
    // What a caller of block_keys pays for a string per key, the SHA-256
    // keys as before packed_block_keys.
    const double strings_seconds = median_call_seconds(
        [&] {
            const auto keys = block_keys("bench", tokens, s.tokens_per_block, "model");
            if (keys.size() != blocks) throw std::logic_error("block_keys gave a wrong number of keys");
        },
        s.duration);

    char line[256];
    if (json) {
        out << "{\"block_keys\":{\"request_tokens\":" << tokens.size() << ",\"tokens_per_block\":" << s.tokens_per_block
            << ",\"keys\":" << blocks << ",\"hashes\":[";
        for (size_t i = 0; i < rows.size(); ++i) {
            const Row &r = rows[i];
            std::snprintf(line, sizeof line,
                          "%s{\"hash\":\"%s\",\"mb_per_s\":%.1f,\"request_ms\":%.3f,\"baseline\":\"%s\","
                          "\"baseline_ms\":%.3f,\"ratio_to_baseline\":%.3f}",
                          i ? "," : "", std::string(to_string(r.hash)).c_str(), bytes / r.seconds / 1e6,
                          r.seconds * 1e3, r.baseline, r.baseline_seconds * 1e3, r.baseline_seconds / r.seconds);
            out << line;
        }
        std::snprintf(line, sizeof line, "],\"sha256_strings_ms\":%.3f}}\n", strings_seconds * 1e3);
        out << line;
        return 0;
    }
    out << "block keys: a request of " << tokens.size() << " tokens (" << 4 * tokens.size() / 1024 << " KiB), "
        << s.tokens_per_block << " tokens per block, " << blocks << " keys; median of calls over "
        << s.duration.count() << " s each\n";
    std::snprintf(line, sizeof line, "%-7s %10s %11s  %-44s %8s %6s\n", "hash", "MB/s", "ms/request", "baseline",
                  "base ms", "ratio");
    out << line;
    for (const Row &r : rows) {
        std::snprintf(line, sizeof line, "%-7s %10.1f %11.3f  %-44s %8.3f %6.2f\n",
                      std::string(to_string(r.hash)).c_str(), bytes / r.seconds / 1e6, r.seconds * 1e3, r.baseline,
                      r.baseline_seconds * 1e3, r.baseline_seconds / r.seconds);
        out << line;
    }
    std::snprintf(line, sizeof line, "sha256 as a std::string per key (block_keys): %.3f ms/request\n",
                  strings_seconds * 1e3);
    out << line;
    return 0;
}

}  // namespace kvblob::bench
