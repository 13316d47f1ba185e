#include "kvblob/host/block_sequence.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "kvblob/host/batch.hpp"  // make_span

namespace kvblob {

namespace {

std::vector<RowStatus> settle(Operation &op, std::chrono::milliseconds timeout)
{
    op.wait(timeout);
    if (!op.is_final()) return std::vector<RowStatus>(op.row_count());  // all PENDING
    return op.results();
}

}  // namespace

size_t resume_bound(const std::vector<RowStatus> &results)
{
    size_t n = 0;
    while (n < results.size() && results[n].result == KVBLOB_ROW_READY) ++n;
    return n;
}

namespace {

constexpr auto longest_pause = std::chrono::milliseconds(1);

// Asks op's access until it is no longer open or deadline passes.
kvblob_access access_by(const Operation &op, std::chrono::steady_clock::time_point deadline)
{
    auto pause = std::chrono::microseconds(1);
    for (;;) {
        const kvblob_access a = op.access();
        if (a != KVBLOB_ACCESS_OPEN || std::chrono::steady_clock::now() >= deadline) return a;
        std::this_thread::sleep_for(pause);
        pause = std::min<std::chrono::microseconds>(pause * 2, longest_pause);
    }
}

}  // namespace

kvblob_access SlotLedger::hold(Operation op, std::vector<Slot> slots)
{
    const kvblob_access a = op.access();
    if (a == KVBLOB_ACCESS_ENDED) return a;  // op is released (or parked until final) as it goes
    if (a == KVBLOB_ACCESS_UNPROVABLE) {
        // For good (R-REG-2): the driver object keeps the operation; the
        // slots are never handed out again.
        retired_.insert(retired_.end(), slots.begin(), slots.end());
        return a;
    }
    held_.push_back({std::move(op), std::move(slots)});
    return a;
}

bool SlotLedger::retired(kvblob_region_t *region, uint64_t offset, uint64_t length) const
{
    return std::any_of(retired_.begin(), retired_.end(),
                       [&](const Slot &s) { return s.overlaps(region, offset, length); });
}

bool SlotLedger::reusable(kvblob_region_t *region, uint64_t offset, uint64_t length, std::chrono::milliseconds timeout)
{
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (size_t i = 0; i < held_.size();) {
        const auto &slots = held_[i].slots;
        if (std::none_of(slots.begin(), slots.end(), [&](const Slot &s) { return s.overlaps(region, offset, length); })) {
            ++i;
            continue;
        }
        const kvblob_access a = access_by(held_[i].op, deadline);
        if (a == KVBLOB_ACCESS_OPEN) return false;  // still open at the bound
        if (a == KVBLOB_ACCESS_UNPROVABLE) retired_.insert(retired_.end(), slots.begin(), slots.end());
        held_.erase(held_.begin() + static_cast<std::ptrdiff_t>(i));  // its access is settled: let it go
    }
    return !retired(region, offset, length);
}

namespace {

// A batch of rows naming keys the caller holds, not copied (a driver takes
// what it needs during submit); row i moves spans[i], or nothing when
// spans is empty.
class RowsOf {
public:
    template <class Keys>
    RowsOf(const Keys &keys, std::vector<kvblob_span_t> spans) : spans_(std::move(spans)), rows_(keys.size())
    {
        for (size_t i = 0; i < rows_.size(); ++i) {
            const std::string_view key = keys[i];
            rows_[i] = {sizeof(kvblob_row_t), spans_.empty() ? 0u : 1u, reinterpret_cast<const uint8_t *>(key.data()),
                        key.size(), spans_.empty() ? nullptr : &spans_[i]};
        }
        batch_ = {sizeof(kvblob_batch_t), 0, rows_.data(), rows_.size(), nullptr};
    }
    const kvblob_batch_t &batch() const { return batch_; }

private:
    std::vector<kvblob_span_t> spans_;
    std::vector<kvblob_row_t> rows_;
    kvblob_batch_t batch_;
};

template <class Keys>
std::vector<BlockResult> transfer(Driver &driver, OpKind kind, const Keys &keys, kvblob_region_t *region,
                                  const std::vector<uint64_t> &offsets, uint64_t block_bytes,
                                  std::chrono::milliseconds timeout, SlotLedger &ledger)
{
    if (kind != OpKind::put && kind != OpKind::get) throw std::invalid_argument("transfer_blocks moves bytes: put or get");
    if (offsets.size() != keys.size()) throw std::invalid_argument("one offset per key");
    if (keys.empty()) return {};
    for (const uint64_t offset : offsets) {
        if (ledger.reusable(region, offset, block_bytes, timeout)) continue;
        const std::string slot = "the slot at offset " + std::to_string(offset);
        if (ledger.retired(region, offset, block_bytes))
            throw CallError(KVBLOB_E_UNPROVABLE, "R-REG-2",
                            slot + " is retired: an earlier operation's access to it is unprovable; use another slot");
        throw CallError(KVBLOB_E_BUSY, "R-REG-1",
                        slot + " may still be touched by driver " + driver.name() + ": an earlier operation's access "
                        "did not end within " + std::to_string(timeout.count()) + " ms");
    }
    std::vector<kvblob_span_t> spans;
    std::vector<SlotLedger::Slot> slots;
    for (const uint64_t offset : offsets) {
        spans.push_back(make_span(region, offset, block_bytes));
        slots.push_back({region, offset, block_bytes});
    }
    auto op = driver.submit(kind, RowsOf(keys, std::move(spans)).batch());
    op.wait(timeout);
    if (!op.is_final()) op.cancel();  // rows that never started stop here (R-CAN-1)
    std::vector<BlockResult> out(keys.size());
    if (op.is_final()) {
        const auto rows = op.results();
        for (size_t i = 0; i < out.size(); ++i) out[i].status = rows[i];
    }
    const kvblob_access access = ledger.hold(std::move(op), std::move(slots));
    for (auto &row : out) row.access = access;
    return out;
}

template <class Keys>
size_t probed_prefix(Driver &driver, const Keys &keys, std::chrono::milliseconds timeout)
{
    if (keys.empty() || !driver.has(KVBLOB_CAP_PROBE)) return 0;
    auto op = driver.submit(OpKind::probe, RowsOf(keys, {}).batch());
    return resume_bound(settle(op, timeout));
}

}  // namespace

std::vector<BlockResult> transfer_blocks(Driver &driver, OpKind kind, const std::vector<std::string> &keys,
                                         kvblob_region_t *region, const std::vector<uint64_t> &offsets,
                                         uint64_t block_bytes, std::chrono::milliseconds timeout, SlotLedger &ledger)
{
    return transfer(driver, kind, keys, region, offsets, block_bytes, timeout, ledger);
}

std::vector<BlockResult> transfer_blocks(Driver &driver, OpKind kind, KeysView keys, kvblob_region_t *region,
                                         const std::vector<uint64_t> &offsets, uint64_t block_bytes,
                                         std::chrono::milliseconds timeout, SlotLedger &ledger)
{
    return transfer(driver, kind, keys, region, offsets, block_bytes, timeout, ledger);
}

size_t resume_bound(const std::vector<BlockResult> &results)
{
    size_t n = 0;
    while (n < results.size() && results[n].status.result == KVBLOB_ROW_READY && results[n].access == KVBLOB_ACCESS_ENDED)
        ++n;
    return n;
}

size_t stored_prefix(Driver &driver, const std::vector<std::string> &keys, std::chrono::milliseconds timeout)
{
    return probed_prefix(driver, keys, timeout);
}

size_t stored_prefix(Driver &driver, KeysView keys, std::chrono::milliseconds timeout)
{
    return probed_prefix(driver, keys, timeout);
}

}  // namespace kvblob
