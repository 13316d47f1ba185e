// Sharing one operation's rows between the thread that runs its job (a
// worker) and the polls that wait for it. A caller that waits for an
// operation has a core and nothing to do with it; where the rows are
// independent bounded local work (copies, page-cache reads and writes), it
// takes rows no thread took yet instead of watching. On a quiet machine
// the operation runs on two cores; on a busy one, whichever of the two has
// a time slice moves it on (docs/notes/2026-12-04-performance-experiments.md, "Sharing rows").
//
// Rows are claimed per_claim at a time, so that threads that share an
// operation's small rows do not pass the counters' cache line back and
// forth for every row. Every claimed row is settled once run; the job
// holds one more count, settled when it stops claiming. Whoever settles the
// last count completes the operation: every other thread has stopped
// touching it by then, since each claims its next rows before it settles
// those it ran, and touches the operation only while rows it claimed are
// unsettled (or, for the job, while its own count is).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace kvblob::support {

class RowShare {
public:
    // Before the job is pushed: rows to share, claimed per_claim at a time.
    // The handle may be out already (a held get is pushed when its driver
    // releases it) and polled from another thread meanwhile: the row count
    // is stored last (release), and a poll reads it first (acquire), so a
    // poll that sees rows sees the counters set for them.
    void open(uint64_t rows, uint64_t per_claim)
    {
        per_claim_ = std::max<uint64_t>(1, per_claim);
        next_.store(0, std::memory_order_relaxed);
        unsettled_.store(rows + 1, std::memory_order_relaxed);
        rows_.store(rows, std::memory_order_release);
    }
    // As new: no rows to share, for an operation used again (Op::recycle).
    void reset()
    {
        rows_.store(0, std::memory_order_relaxed);
        per_claim_ = 1;
        next_.store(0, std::memory_order_relaxed);
        unsettled_.store(0, std::memory_order_relaxed);
    }
    // Rows no thread claimed yet (never, for an operation not opened).
    bool unclaimed() const
    {
        const uint64_t rows = rows_.load(std::memory_order_acquire);
        return next_.load(std::memory_order_relaxed) < rows;
    }

    // Runs run_row(i) for rows claimed until none is left. holds_job: the
    // caller runs the operation's job and settles its count at the end.
    // True when this call settled the last count: the caller completes the
    // operation. False: a job's thread must not touch the operation again
    // (a poll's caller still holds it: it cannot be released meanwhile).
    template <class RunRow>
    bool work(RunRow &&run_row, bool holds_job)
    {
        // Read once: once rows run here are settled, the operation may be
        // gone, and the loop still looks at these.
        const uint64_t rows = rows_.load(std::memory_order_acquire), per_claim = per_claim_;
        uint64_t first = next_.fetch_add(per_claim, std::memory_order_relaxed);
        while (first < rows) {
            const uint64_t end = std::min(rows, first + per_claim);
            for (uint64_t i = first; i < end; ++i) run_row(i);
            // Claimed before settling: the rows run here keep the operation
            // alive until then.
            const uint64_t next = next_.fetch_add(per_claim, std::memory_order_relaxed);
            if (settle(end - first)) return true;
            first = next;
        }
        return holds_job && settle(1);
    }

private:
    // acq_rel: the one who settles last sees every row's work.
    bool settle(uint64_t n) { return unsettled_.fetch_sub(n, std::memory_order_acq_rel) == n; }

    std::atomic<uint64_t> rows_{0};
    uint64_t per_claim_ = 1;
    alignas(64) std::atomic<uint64_t> next_{0};
    std::atomic<uint64_t> unsettled_{0};
};

}  // namespace kvblob::support
