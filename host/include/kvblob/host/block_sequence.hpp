// A request's KV-cache blocks as store keys, and how much of them the store
// can give back.
//
// Block i of a token sequence is named by a chained hash: the hash of the
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
#include "kvblob/host/packed_keys.hpp"

namespace kvblob {

// The chained hash that names blocks.
//   sha256: SHA-256, the default. Keys prefix/v1/hex(name), name
//     the first 16 bytes of the chain value. Nobody can choose tokens that
//     make two sequences share a block key.
//   xxh3: XXH3-128, several times faster, for an engine that trusts every
//     token sequence it names: whoever chooses tokens can make two sequences
//     share a key, and one request read another's blocks. Keys
//     prefix-xxh3/v1/hex(name). The prefix names the hash: a sha256 prefix
//     may not end in -xxh3, so keys of the two hashes never collide.
enum class BlockHash { sha256, xxh3 };

// "sha256" or "xxh3"; parse_block_hash throws std::invalid_argument naming
// the choices for any other name.
std::string_view to_string(BlockHash hash);
BlockHash parse_block_hash(std::string_view name);

// The keys of every full block of tokens; a trailing partial block has none.
// salt separates models or layouts whose blocks must never be shared (say
// the model name and dtype). Throws std::invalid_argument for a prefix that
// is not a key prefix ([a-z0-9_-], 1 to 64 bytes with the hash's tag) and
// for tokens_per_block 0.
//
// packed_block_keys is the form for the time-to-first-token path: every key
// in one buffer (packed_keys.hpp) that batches point into, not a string and
// an allocation per key. Its SHA-256 keys come from one kernel over the
// whole chain (sha256_chain.hpp), not a digest per key, so it runs close to
// the compressions the chain needs: a 128k-token request's 8192 keys
// (16384 compressions) in 0.63-0.69 ms, 0.87-0.90 of OpenSSL's time for as
// many blocks in one pass, where a digest and a string per key took
// 1.05-1.11 ms (docs/notes/2026-12-04-performance-experiments.md, "Block keys"). block_keys gives the
// same keys as separate strings, for callers that keep them apart
// (0.2 ms more for 8192).
PackedKeys packed_block_keys(std::string_view prefix, std::span<const int32_t> tokens, size_t tokens_per_block,
                             std::string_view salt = {}, BlockHash hash = BlockHash::sha256);
std::vector<std::string> block_keys(std::string_view prefix, std::span<const int32_t> tokens,
                                    size_t tokens_per_block, std::string_view salt = {},
                                    BlockHash hash = BlockHash::sha256);

// The resume bound: how many leading blocks were delivered, stopping at the
// first row that is not READY. The engine recomputes from there.
size_t resume_bound(const std::vector<RowStatus> &results);

// Which of an engine's block slots (a block's bytes at an offset of one
// registered region) a driver may still touch. transfer_blocks leaves here
// every operation whose access had not ended when it returned (a transfer
// past its timeout, a FAULT whose transport may still write); before a slot
// is written again or handed to another transfer, reusable() waits, bounded,
// for that access to end. A slot named by an operation whose access is
// unprovable is retired: never reusable again (R-REG-2), and the engine
// must keep its memory and use another slot.
//
// One ledger per engine thread (it is not locked). Destroy it before the
// region: its operations then go back to the driver object, which keeps
// the region registered for as long as they may touch it.
class SlotLedger {
public:
    SlotLedger() = default;
    SlotLedger(const SlotLedger &) = delete;
    SlotLedger &operator=(const SlotLedger &) = delete;
    SlotLedger(SlotLedger &&) = default;
    SlotLedger &operator=(SlotLedger &&) = default;

    // Waits up to timeout for every held operation naming bytes [offset,
    // offset + length) of region to end its access. true: no driver may
    // touch them any more. false: access still open at the bound, or the
    // slot is retired (retired() says which).
    bool reusable(kvblob_region_t *region, uint64_t offset, uint64_t length, std::chrono::milliseconds timeout);
    bool retired(kvblob_region_t *region, uint64_t offset, uint64_t length) const;
    size_t retired_slots() const noexcept { return retired_.size(); }
    // Operations whose access has not ended, held until it does.
    size_t held_operations() const noexcept { return held_.size(); }

    struct Slot {
        kvblob_region_t *region;
        uint64_t offset, length;
        bool overlaps(kvblob_region_t *r, uint64_t o, uint64_t n) const
        {
            return r == region && o < offset + length && offset < o + n;
        }
    };
    // Takes op, which names slots: kept until its access ends; its slots
    // retired at once when its access is unprovable; let go when it ended.
    // Returns the access it saw. (transfer_blocks does this; an engine
    // moving blocks its own way may too.)
    kvblob_access hold(Operation op, std::vector<Slot> slots);

private:
    struct Held {
        Operation op;
        std::vector<Slot> slots;
    };
    std::vector<Held> held_;
    std::vector<Slot> retired_;
};

// A block's row result and what the driver may still do with its slot.
struct BlockResult {
    RowStatus status;  // PENDING for a row not final within the timeout (never READY)
    // ENDED: the slot is the engine's again. OPEN: the driver may still
    // read or write it; the ledger holds the operation (reusable() waits).
    // UNPROVABLE: the slot is retired for good.
    kvblob_access access = KVBLOB_ACCESS_OPEN;
};

// Moves whole blocks between one registered region and the store: block i of
// keys uses the slot [offsets[i], offsets[i] + block_bytes). kind is put or
// get. First waits (up to timeout) for every slot to be reusable in ledger,
// and refuses with CallError before dispatch when one is not (R-REG-1 while
// a driver may still touch it, R-REG-2 when it is retired). Then waits up to
// timeout for the operation to be final and its access to end, cancels it
// if it is not final by then, and returns each row's result and access; an
// operation whose access has not ended stays in ledger.
// keys are a request's strings or its packed keys (a PackedKeys, or the
// first n of them); rows point at them, without copies.
std::vector<BlockResult> transfer_blocks(Driver &driver, OpKind kind, const std::vector<std::string> &keys,
                                         kvblob_region_t *region, const std::vector<uint64_t> &offsets,
                                         uint64_t block_bytes, std::chrono::milliseconds timeout, SlotLedger &ledger);
std::vector<BlockResult> transfer_blocks(Driver &driver, OpKind kind, KeysView keys, kvblob_region_t *region,
                                         const std::vector<uint64_t> &offsets, uint64_t block_bytes,
                                         std::chrono::milliseconds timeout, SlotLedger &ledger);

// The resume bound of a transfer: leading blocks READY whose access ended
// (bytes a driver may still write are not delivered yet).
size_t resume_bound(const std::vector<BlockResult> &results);

// How many leading blocks of keys the store holds complete: probe when the
// driver offers it, otherwise not knowable without moving bytes (returns 0).
size_t stored_prefix(Driver &driver, const std::vector<std::string> &keys, std::chrono::milliseconds timeout);
size_t stored_prefix(Driver &driver, KeysView keys, std::chrono::milliseconds timeout);

}  // namespace kvblob
