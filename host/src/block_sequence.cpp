#include "kvblob/host/block_sequence.hpp"

#include <array>
#include <cstring>
#include <stdexcept>

#include "kvblob/host/batch.hpp"
#include "kvblob/host/key_codec.hpp"
#include "kvblob/host/sha256.hpp"

namespace kvblob {

namespace {

constexpr size_t name_bytes = 16;  // 128 bits of the chain value name a block

std::vector<RowStatus> settle(Operation &op, std::chrono::milliseconds timeout)
{
    op.wait(timeout);
    if (!op.is_final()) return std::vector<RowStatus>(op.row_count());  // all PENDING
    return op.results();
}

}  // namespace

std::vector<std::string> block_keys(std::string_view prefix, std::span<const int32_t> tokens,
                                    size_t tokens_per_block, std::string_view salt)
{
    if (tokens_per_block == 0) throw std::invalid_argument("tokens_per_block must be positive");
    std::vector<std::string> keys;
    std::array<uint8_t, 32> chain = sha256_digest(salt);
    std::string input;
    for (size_t start = 0; start + tokens_per_block <= tokens.size(); start += tokens_per_block) {
        input.assign(reinterpret_cast<const char *>(chain.data()), chain.size());
        for (size_t t = start; t < start + tokens_per_block; ++t) {
            const auto v = static_cast<uint32_t>(tokens[t]);
            const char le[4] = {char(v), char(v >> 8), char(v >> 16), char(v >> 24)};  // one byte order everywhere
            input.append(le, 4);
        }
        chain = sha256_digest(input);
        keys.push_back(encode_key(prefix, std::string_view(reinterpret_cast<const char *>(chain.data()), name_bytes)));
    }
    return keys;
}

size_t resume_bound(const std::vector<RowStatus> &results)
{
    size_t n = 0;
    while (n < results.size() && results[n].result == KVBLOB_ROW_READY) ++n;
    return n;
}

std::vector<RowStatus> transfer_blocks(Driver &driver, OpKind kind, const std::vector<std::string> &keys,
                                       kvblob_region_t *region, const std::vector<uint64_t> &offsets,
                                       uint64_t block_bytes, std::chrono::milliseconds timeout)
{
    if (kind != OpKind::put && kind != OpKind::get) throw std::invalid_argument("transfer_blocks moves bytes: put or get");
    if (offsets.size() != keys.size()) throw std::invalid_argument("one offset per key");
    if (keys.empty()) return {};
    Batch batch;
    for (size_t i = 0; i < keys.size(); ++i) batch.row(keys[i], {make_span(region, offsets[i], block_bytes)});
    auto op = driver.submit(kind, batch.get());
    return settle(op, timeout);
}

size_t stored_prefix(Driver &driver, const std::vector<std::string> &keys, std::chrono::milliseconds timeout)
{
    if (keys.empty() || !driver.has(KVBLOB_CAP_PROBE)) return 0;
    Batch batch;
    for (const auto &key : keys) batch.row(key);
    auto op = driver.submit(OpKind::probe, batch.get());
    return resume_bound(settle(op, timeout));
}

}  // namespace kvblob
