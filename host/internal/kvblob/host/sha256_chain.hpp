// The SHA-256 chain that names blocks (block_sequence.hpp), as one kernel:
// key i's message is chain value i (32 bytes) then block i's tokens, and its
// digest is chain value i+1. Hashing each message on its own
// (sha256_oneshot) spends as much again as the compressions on what a chain
// can skip: the padding is the same for every message of one length, so it
// is laid out once; the digest's words are the next message's first eight
// words, so they stay words (in registers, on the SHA extensions) instead
// of going out to bytes and being read back in, on the chain's serial path.
// The compression is the one sha256_oneshot uses (SHA-NI where the CPU has
// it, portable otherwise; tests/host/test_sha256.cpp holds both to OpenSSL).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace kvblob {

// Runs the chain over every full block of tokens (tokens_per_block > 0).
// chain: the chain value before the first block on entry, after the last
// on return. names: 16 bytes per block, the first 16 bytes of the block's
// chain value.
void sha256_chain(uint8_t chain[32], std::span<const int32_t> tokens, size_t tokens_per_block, uint8_t *names);

}  // namespace kvblob
