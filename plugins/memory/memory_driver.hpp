// The reference in-memory driver: every rule of contract.md, executable.
//
// Modes (option mode=):
//   blocking    the operation is final, and its access ended, when put/get
//               returns;
//   background  the handle comes back at once; worker threads complete it,
//               and with waiter_runs (the default) the polls that wait for
//               it copy its rows beside them (row_share.hpp);
//   controlled  nothing moves until advance() (kvblob.scenarios/1) releases
//               each stage: START, TRANSFER_END, then COMMIT and ACCESS_END
//               in either order. This is how tests show that results and
//               access are independent (R-ACC-1).
// Access ends as soon as an operation's bytes have moved, before its results
// are final (R-ACC-2: a declared bound of 0); with access_delay_ms=N, N ms
// after they are final instead (a declared bound of N ms), as a store whose
// transport lets go of the caller's memory only after it answered. In
// controlled mode access ends when advance() says, and no bound is declared.
#pragma once

#include <kvblob/support/driver_base.hpp>
#include <kvblob/support/staged_full_pool.hpp>
#include <kvblob/support/work_queue.hpp>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "access_timer.hpp"
#include "store.hpp"

namespace kvblob::memory {

using support::Op;
using support::OpKind;

enum class Mode { blocking, background, controlled };

// An operation with what the driver decided per row before it commits.
struct MemoryOp : Op {
    struct Outcome {
        kvblob_row_result result = KVBLOB_ROW_PENDING;
        int32_t code = 0;
        std::string message;
        // put: the object built, committed at COMMIT to the key's claim.
        struct Staged {
            Staged(std::nullptr_t = nullptr) {}
            Staged(Object built, Store::Claim at) : object(std::move(built)), claim(at) {}
            Object object;
            Store::Claim claim;
        } staged;
    };
    std::vector<Outcome> outcomes;
    // put: each row's object size and its buffer, taken for every row at
    // start with one lock of the store's buffer pool; what no row used goes
    // back at commit.
    std::vector<size_t> object_sizes;
    std::vector<BlobBytes> buffers;
    // Controlled mode: stages claimed so far, under mu.
    std::mutex mu;
    bool started = false, transferred = false, committed = false, access_ended = false;

    void recycle() override
    {
        outcomes.clear();  // start() sizes them anew
        object_sizes.clear();
        buffers.clear();  // only where no commit ran (cancelled before START)
        started = transferred = committed = access_ended = false;
        Op::recycle();
    }
};

class MemoryDriver : public support::DriverBase, public support::StagedFullPool {
public:
    static std::unique_ptr<MemoryDriver> open(const kvblob_open_args_t &args, kvblob_caps_t &caps);
    ~MemoryDriver() override;

    // kvblob.scenarios/1, with stage_full_pool from StagedFullPool. Three
    // are keys the data path looks up (stage_key).
    kvblob_status stage_foreign_writer(const std::string &key);
    kvblob_status stage_failing_read(const std::string &key) { return stage_key(failing_reads_, key); }
    kvblob_status stage_held_get(const std::string &key) { return stage_key(held_keys_, key); }
    kvblob_status stage_corrupt(const std::string &key);
    kvblob_status stage_unprovable(const std::string &key) { return stage_key(unprovable_keys_, key); }
    kvblob_status release_staged();
    kvblob_status advance(kvblob_op_t *op, kvblob_stage stage);
    uint64_t echo_hint(kvblob_op_t *op, void *buf, uint64_t capacity);

protected:
    std::unique_ptr<Op> make_op() override { return std::make_unique<MemoryOp>(); }
    void start(Op &op) override;
    void on_cancel(Op &op) override;
    void stop() override;
    bool run_queued(Op &op) override;

private:
    MemoryDriver(const kvblob_caps_t &caps, const kvblob_host_services_t *host, std::shared_ptr<Store> store,
                 Mode mode, unsigned workers, std::chrono::milliseconds access_delay, bool waiter_runs);

    void run(MemoryOp &op);  // every stage, in order
    void complete(MemoryOp &op);  // commit, then access and results
    // Background mode with waiter_runs: rows until none is unclaimed, the
    // worker's job (holds_job) and waiting polls alike (row_share.hpp).
    void share_rows(MemoryOp &op, bool holds_job);
    static uint64_t rows_per_claim(const MemoryOp &op);
    void transfer_row(MemoryOp &op, size_t i);
    void transfer_put(MemoryOp &op, size_t i);
    void transfer_get(MemoryOp &op, size_t i);
    void transfer_probe(MemoryOp &op, size_t i);
    void transfer_remove(MemoryOp &op, size_t i);
    void commit(MemoryOp &op);  // publishes objects and results (not finish)
    void dispatch(MemoryOp &op);
    // Adds key to keys (failing_reads_, held_keys_ or unprovable_keys_) and
    // sets keys_staged_, so that operations look.
    kvblob_status stage_key(std::set<std::string> &keys, const std::string &key);

    std::shared_ptr<Store> store_;
    const Mode mode_;
    // access_delay_ms: how long after final an operation's access ends (0:
    // before final), on access_timer_'s thread.
    const std::chrono::milliseconds access_delay_;
    AccessTimer access_timer_;

    // Staged scenarios, under hooks_mu_.
    std::mutex hooks_mu_;
    std::set<std::string> failing_reads_, held_keys_, unprovable_keys_;
    // Keys this driver staged a foreign writer on: the store is shared, the
    // claims are this driver's, and go with it (release_staged or close).
    std::set<std::string> foreign_keys_;
    std::vector<MemoryOp *> held_ops_;
    // Set while any keyed scenario is staged, so that operations take
    // hooks_mu_ only then: no driver-wide lock on the data path otherwise.
    std::atomic<bool> keys_staged_{false};

    // Background mode's workers; with waiter_runs, a poll that finds rows
    // of its operation unclaimed runs them itself.
    const bool waiter_runs_;
    support::WorkQueue workers_;
};

}  // namespace kvblob::memory
