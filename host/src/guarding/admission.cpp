#include "admission.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string_view>
#include <unordered_set>

namespace kvblob {

namespace {

AdmissionVerdict refuse(std::string rule, std::string reason)
{
    AdmissionVerdict verdict;
    verdict.rule = std::move(rule);
    verdict.reason = std::move(reason);
    return verdict;
}

// "row 3": how a refusal names the row it refuses, put together only then.
std::string row_words(uint64_t r) { return "row " + std::to_string(r); }

// Drawn once per process: with fixed constants, whoever picks an engine's
// keys could pick a batch whose keys all fall on one run of KeyTable's
// slots, and make its admission take time quadratic in its rows. Where the
// system has no random device (a bare chroot), the clock and an address
// stand in.
uint64_t hash_seed()
{
    static const uint64_t seed = [] {
        try {
            std::random_device device;
            return (uint64_t{device()} << 32) ^ device();
        } catch (...) {
            static const int here = 0;
            return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
                   reinterpret_cast<uintptr_t>(&here);
        }
    }();
    return seed;
}

// A key's hash, sixteen bytes at a time in two lanes whose multiplications
// do not wait on each other (keys are hashed once per row on the admitting
// path; one lane eight bytes at a time was a twentieth of a 4 KiB get's
// admission and answer through a tiered driver, measured with perf).
uint64_t key_hash(const uint8_t *p, uint64_t n)
{
    constexpr uint64_t k1 = 0xBF58476D1CE4E5B9ull, k2 = 0x94D049BB133111EBull, k3 = 0x9E3779B97F4A7C15ull;
    const uint64_t seed = hash_seed();
    uint64_t a = seed ^ n, b = (seed ^ k3) * k1;
    for (; n >= 16; n -= 16, p += 16) {
        uint64_t w0, w1;
        std::memcpy(&w0, p, 8);
        std::memcpy(&w1, p + 8, 8);
        a = (a ^ w0) * k1;
        b = (b ^ w1) * k2;
        a ^= a >> 31;
        b ^= b >> 29;
    }
    if (n >= 8) {
        uint64_t w;
        std::memcpy(&w, p, 8);
        a = (a ^ w) * k1;
        a ^= a >> 31;
        n -= 8;
        p += 8;
    }
    uint64_t w = 0;
    std::memcpy(&w, p, n);
    b = (b ^ w) * k2;
    uint64_t h = (a ^ (b >> 32 | b << 32)) * k3;
    return h ^ (h >> 29);
}

// The keys of the batch being admitted, to find one that repeats: open
// addressing over row indices, in a table each thread keeps from one batch
// to the next, so no node is allocated per key. A slot is eight bytes (the
// hash's high half and the row), so a batch of 100,000 rows probes a table
// that fits in a core's cache, and the slot of a row a few rows ahead is
// prefetched while this one is checked: the probes of a large batch are
// spread over the whole table, and would each wait on memory.
class KeyTable {
public:
    static constexpr uint64_t max_rows = UINT32_MAX - 1;  // rows a slot can name

    void start(const kvblob_batch_t &batch, uint64_t max_key_bytes)
    {
        rows_ = batch.rows;
        count_ = batch.row_count;
        max_key_bytes_ = max_key_bytes;
        size_t want = 16;
        while (want < 2 * count_) want <<= 1;
        if (slots_.size() < want) slots_.resize(want);
        std::memset(slots_.data(), 0, want * sizeof(uint64_t));
        mask_ = want - 1;
        for (uint64_t r = 0; r < std::min(count_, ahead); ++r) stage(r);
    }
    // False when an earlier row of the batch has row r's key. Rows are
    // inserted in order, each once its key is known to be readable.
    bool insert(uint64_t r)
    {
        const kvblob_row_t &row = rows_[r];
        const uint64_t h = hashes_[r % ahead];
        if (r + ahead < count_) stage(r + ahead);
        const uint64_t tag = h >> 32 << 32;
        for (size_t i = h & mask_;; i = (i + 1) & mask_) {
            uint64_t &slot = slots_[i];
            if (slot == 0) {
                slot = tag | (r + 1);
                return true;
            }
            if ((slot & ~uint64_t{UINT32_MAX}) != tag) continue;
            const kvblob_row_t &other = rows_[(slot & UINT32_MAX) - 1];
            if (other.key_len == row.key_len && std::memcmp(other.key, row.key, row.key_len) == 0) return false;
        }
    }

private:
    static constexpr uint64_t ahead = 8;
    // Hashes row r's key, where it can be read (whether it is acceptable is
    // checked when its turn comes), and prefetches its first slot.
    void stage(uint64_t r)
    {
        const kvblob_row_t &row = rows_[r];
        const uint64_t h = row.key && row.key_len <= max_key_bytes_ ? key_hash(row.key, row.key_len) : 0;
        hashes_[r % ahead] = h;
        __builtin_prefetch(&slots_[h & mask_], 1);
    }

    std::vector<uint64_t> slots_;  // 0: empty; else the hash's high half and row + 1
    size_t mask_ = 0;
    uint64_t hashes_[ahead] = {};
    const kvblob_row_t *rows_ = nullptr;
    uint64_t count_ = 0, max_key_bytes_ = 0;
};

// This thread's KeyTable, kept from one batch to the next. Out of line, so
// that its address is looked up once per batch: inlined, the compiler
// looked the thread_local up again at each use, two or three calls to
// __tls_get_addr a row (callgrind, a 4 KiB x 32 get).
[[gnu::noinline]] KeyTable &thread_key_table()
{
    thread_local KeyTable table;
    return table;
}

// Batches too large for KeyTable's slots (over four billion rows, more than
// any machine holds today) are checked with a set of the keys.
class LargeKeySet {
public:
    bool insert(const kvblob_row_t &row)
    {
        return keys_.insert({reinterpret_cast<const char *>(row.key), row.key_len}).second;
    }

private:
    std::unordered_set<std::string_view> keys_;
};

}  // namespace

AdmissionVerdict admit(const kvblob_caps_t &caps, OpKind kind, const kvblob_batch_t &batch, RegionFinder find,
                       bool keys_distinct)
{
    if (batch.row_count == 0 || !batch.rows) return refuse("R-ADM-3", "an operation needs at least one row");
    if (batch.row_count > caps.max_rows_per_op)
        return refuse("R-ADM-3", std::to_string(batch.row_count) + " rows, over max_rows_per_op " +
                                     std::to_string(caps.max_rows_per_op));
    if (batch.hint && !(caps.flags & KVBLOB_CAP_HINTS))
        return refuse("R-ADM-7", "a hint, but the driver does not declare hints");
    const bool moves_bytes = kind == OpKind::put || kind == OpKind::get;
    AdmissionVerdict ok;
    KeyTable &keys = thread_key_table();
    std::unique_ptr<LargeKeySet> large_keys;
    const bool check_repeats = batch.row_count > 1 && !keys_distinct;
    if (check_repeats && batch.row_count > KeyTable::max_rows) large_keys = std::make_unique<LargeKeySet>();
    else if (check_repeats) keys.start(batch, caps.max_key_bytes);
    // Most spans of a batch name the region the span before named: its
    // record is looked up once.
    kvblob_region_t *last_handle = nullptr;
    const RegionRecord *last_region = nullptr;
    for (uint64_t r = 0; r < batch.row_count; ++r) {
        const auto &row = batch.rows[r];
        if (row.key_len == 0 || !row.key) return refuse("R-ADM-4", row_words(r) + " has an empty key");
        if (row.key_len > caps.max_key_bytes)
            return refuse("R-ADM-4", row_words(r) + " has a key of " + std::to_string(row.key_len) +
                                         " bytes, over max_key_bytes " + std::to_string(caps.max_key_bytes));
        if (check_repeats && !(large_keys ? large_keys->insert(row) : keys.insert(r)))
            return refuse("R-ADM-4", row_words(r) + " repeats a key of this operation");
        if (!moves_bytes) {
            if (row.span_count) return refuse("R-ADM-5", row_words(r) + ": probe and remove rows carry no spans");
            continue;
        }
        if (row.span_count == 0 || !row.spans) return refuse("R-ADM-5", row_words(r) + " has no span");
        if (row.span_count > caps.max_spans_per_row)
            return refuse("R-ADM-5", row_words(r) + " has " + std::to_string(row.span_count) +
                                         " spans; the driver takes " + std::to_string(caps.max_spans_per_row) +
                                         ((caps.flags & KVBLOB_CAP_MULTI_SPAN) ? "" : " (it does not declare multi_span)"));
        uint64_t total = 0;
        for (uint32_t s = 0; s < row.span_count; ++s) {
            const auto &span = row.spans[s];
            if (span.region != last_handle || !last_region) {
                last_region = find(span.region);
                last_handle = span.region;
                if (last_region &&
                    std::find(ok.regions.begin(), ok.regions.end(), span.region) == ok.regions.end())
                    ok.regions.push_back(span.region);
            }
            const RegionRecord *region = last_region;
            if (!region)
                return refuse("R-ADM-6",
                              row_words(r) + " span " + std::to_string(s) + " names a region that is not registered");
            if (span.length == 0 || span.offset > region->size || span.length > region->size - span.offset)
                return refuse("R-ADM-6", row_words(r) + " span " + std::to_string(s) +
                                             " is not wholly inside its region of " + std::to_string(region->size) +
                                             " bytes");
            total += span.length;
        }
        if (total > caps.max_object_bytes)
            return refuse("R-ADM-5", row_words(r) + " is " + std::to_string(total) + " bytes, over max_object_bytes " +
                                         std::to_string(caps.max_object_bytes));
        if (r == 0) ok.uniform_row_bytes = total;
        if (ok.row_bytes.empty() && total == ok.uniform_row_bytes) continue;
        if (ok.row_bytes.empty()) ok.row_bytes.assign(r, ok.uniform_row_bytes);
        ok.row_bytes.push_back(total);
    }
    return ok;
}

}  // namespace kvblob
