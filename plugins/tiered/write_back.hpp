// write=back: the rows a put stored in the top tier, queued, then read
// back from the top tier into the tiered driver's own memory and written
// to the tiers below by one thread of their own, in order of arrival.
//
// Bounded in bytes and in rows (each row is one write below, so the row
// bound bounds how long a drain waits for small rows): a put reserves room
// for its rows before it stores them in the top tier, and waits for room
// where there is none, so puts go at the pace of the tiers below once the
// queue is full (nothing is DECLINED for it). drain and close wait until
// every queued row was written below (or failed); a row the bottom tier did
// not store is logged by the writer and counted here, never dropped
// silently.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace kvblob::tiered {

// An allocator whose resize leaves new bytes as they are: the driver's
// buffers are written whole (by a tier's get) before they are read, and
// zeroing them first cost as much as the copy.
template <class T>
struct Uninitialized : std::allocator<T> {
    template <class U>
    struct rebind {
        using other = Uninitialized<U>;
    };
    Uninitialized() = default;
    template <class U>
    Uninitialized(const Uninitialized<U> &) noexcept
    {
    }
    template <class U>
    void construct(U *p) noexcept
    {
        ::new (static_cast<void *>(p)) U;
    }
    template <class U, class... A>
    void construct(U *p, A &&...a)
    {
        ::new (static_cast<void *>(p)) U(std::forward<A>(a)...);
    }
};
using Bytes = std::vector<uint8_t, Uninitialized<uint8_t>>;

// One put's rows (a write=back block: queued with their keys and sizes,
// their bytes read back from the top tier by the writer), or a get's rows
// to promote: their payloads back to back in bytes.
struct Block {
    struct Row {
        std::string key;
        uint64_t offset = 0, length = 0;
        uint64_t key_hash = 0;  // support::key_hash(key), as admission gave it
    };
    Bytes bytes;             // once filled, never empty: a region has a positive size
    uint64_t reserved = 0;   // the rows' bytes, reserved in the queue or the promotion buffer
    std::vector<Row> rows;
};

// How much nicer than the engine's threads the writer runs (Linux: nice is
// per thread; the writer adds this to the niceness it was created with, up
// to 19, the lowest). It writes below what is READY already, so the
// engine's own threads come first on a busy machine:
// woken at the end of a put, at the engine's priority it took the core the
// put's caller still needed (a scheduler trace of kvblob-bench --tier top
// --option write=back on 2 vCPUs showed it preempting the caller). It is
// never starved: the queue's limit makes puts wait for it.
inline constexpr int writer_nicer_by = 10;

// A put does not wake the writer: the writer looks at its queue every
// writer_looks_every while it has had work within writer_looks_for, and
// only past that sleeps until the next put wakes it. Waking it from each
// put cost the put a system call and, on a virtual machine, an interrupt
// to the writer's core (kvblob-bench --tier top --option write=back,
// 64 KiB x 32 on 2 vCPUs: 8.5 us of a 65 us put with the memory tier in
// the submitting thread). So rows reach the tiers below within
// writer_looks_every of their put, or at once where somebody waits for
// them: a put waiting for room, a remove or a staged scenario settling
// its keys, drain, close. An idle writer wakes 100 times a second for at
// most writer_looks_for, then sleeps.
inline constexpr std::chrono::milliseconds writer_looks_every{10};
inline constexpr std::chrono::milliseconds writer_looks_for{1000};

class WriteBack {
public:
    // Writes a block below; returns, per row, whether the bottom tier
    // stored it.
    using Writer = std::function<std::vector<bool>(Block &)>;

    WriteBack(uint64_t limit, uint64_t row_limit, Writer writer);
    ~WriteBack() { finish(); }
    WriteBack(const WriteBack &) = delete;
    WriteBack &operator=(const WriteBack &) = delete;

    uint64_t limit() const { return limit_; }
    uint64_t row_limit() const { return row_limit_; }
    // Reserves room for the first rows of sizes (bytes each), as many as
    // fit, waiting until the first fits; how many. 0 for a first row larger
    // than the limit (it can never fit), or once stop is true (a cancel of
    // the put: its rows have reserved nothing, so they had no effect;
    // interrupt() wakes the wait to look). waiting is called, without the
    // lock, when the first row does not fit at once and the put waits.
    size_t reserve_some(const std::vector<uint64_t> &sizes, const std::atomic<bool> &stop,
                        const std::function<void()> &waiting);
    // Wakes the puts waiting in reserve_some to look at their stop flag.
    void interrupt();
    // Reserves room for every row of sizes at once, or for none: never
    // waits. Whether it did.
    bool try_reserve(const std::vector<uint64_t> &sizes);
    void unreserve(uint64_t bytes);
    // The keys a put is about to store in the top tier are pending from
    // now (claim) until written below, or until the put did not store them
    // there (unclaim): an eviction never takes a pending key. Keys are
    // counted by their hash (support::key_hash, the row's from admission),
    // not copied: two keys that share a hash are pending together, which
    // only makes an eviction pass one by or a remove wait longer, never
    // lets one through early (copies of a put's keys were a tenth of a
    // 4 KiB write=back put, with their frees on the writer's thread).
    void claim(const std::vector<uint64_t> &key_hashes);
    void unclaim(uint64_t key_hash);
    // Queues block, whose bytes were reserved and whose keys were claimed.
    void push(Block block);
    // The writer starts no block while any put holds it (hold, then
    // release once) and nobody waits for it: a put holds it until it is
    // final, so that its READY does not wait for the writer's time on the
    // cores, and lets go before it waits for room (the writer frees it).
    void hold();
    void release();
    // Whether a row of key is queued or being written.
    bool pending(const std::string &key) const;
    // Waits until no row of these keys is queued or being written (a
    // remove, or a scenario staged below, must not be overtaken by a write
    // that was queued before it).
    void settle(const std::vector<std::string> &keys);
    // Waits until the queue is empty, up to deadline: true when it is.
    bool wait_empty(std::chrono::steady_clock::time_point deadline);
    // Writes what is queued, then stops the thread. Idempotent.
    void finish();

    uint64_t written() const;
    uint64_t failed() const;

private:
    void loop();
    // Whether the writer may start the next block. A hold only spares a
    // put's own thread the writer's time on the cores: it never keeps the
    // writer from what somebody waits for (a put holding it may itself
    // wait, on a worker, behind a put that waits for room only the writer
    // frees).
    bool ready() const { return stopping_ || (!queue_.empty() && (holds_ == 0 || hurrying_ != 0)); }
    // Under mu_, as ready() may have turned true: wakes the writer where it
    // sleeps until woken, or where somebody waits for it.
    void wake_if_needed();
    // A waiter for the writer's progress (RAII, under mu_): wakes the
    // writer, and while it waits every change that may let the writer go
    // on wakes it too.
    struct Hurry;

    const uint64_t limit_, row_limit_;
    Writer writer_;
    mutable std::mutex mu_;
    std::condition_variable work_cv_, done_cv_;
    std::deque<Block> queue_;
    bool writing_ = false, stopping_ = false;
    uint64_t used_ = 0, rows_used_ = 0;  // reserved: queued, being written, or about to be
    uint64_t holds_ = 0;                  // puts holding the writer (hold)
    bool writer_sleeps_ = false;          // until woken: no work within writer_looks_for
    uint64_t hurrying_ = 0;               // threads waiting for the writer's progress (Hurry)
    std::unordered_map<uint64_t, uint64_t> pending_;  // by key hash: rows queued or being written
    uint64_t written_ = 0, failed_ = 0;
    std::thread thread_;
};

}  // namespace kvblob::tiered
