// A request's KV-cache blocks as store keys, and how much of them the store
// can give back.
//
// Block i of a token sequence is named by a chained hash: SHA-256 over the
// previous block's chain value and block i's tokens, so a block's key depends
// on every token before it. Two requests that share a prefix share the keys
// of that prefix's blocks, and nothing else.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kvblob/host/driver.hpp"

namespace kvblob {

// The keys (prefix/v1/hex(name)) of every full block of tokens;
// a trailing partial block has none. salt separates models or layouts
// whose blocks must never be shared (say the model name and dtype).
std::vector<std::string> block_keys(std::string_view prefix, std::span<const int32_t> tokens,
                                    size_t tokens_per_block, std::string_view salt = {});

// The resume bound: how many leading blocks were delivered, stopping at the
// first row that is not READY. The engine recomputes from there.
size_t resume_bound(const std::vector<RowStatus> &results);

// Moves whole blocks between one registered region and the store: block i of
// keys uses [offsets[i], offsets[i] + block_bytes). kind is put or get. Waits
// for the operation to settle and returns its rows' results; rows still
// pending when timeout passes are reported as PENDING (never READY).
std::vector<RowStatus> transfer_blocks(Driver &driver, OpKind kind, const std::vector<std::string> &keys,
                                       kvblob_region_t *region, const std::vector<uint64_t> &offsets,
                                       uint64_t block_bytes, std::chrono::milliseconds timeout);

// How many leading blocks of keys the store holds complete: probe when the
// driver offers it, otherwise not knowable without moving bytes (returns 0).
size_t stored_prefix(Driver &driver, const std::vector<std::string> &keys, std::chrono::milliseconds timeout);

}  // namespace kvblob
