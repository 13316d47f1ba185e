// The tiered driver: a stack of drivers loaded through the host library
// (kvblob::Plugin), top first, offered as one driver. See README.md here for
// its semantics and docs/contract.md, "Composed stores".
//
// Each admitted operation runs on one of this driver's worker threads,
// which submits to the tiers in turn and waits for each tier operation to be
// final and its access ended (Operation::wait) before it reads the next.
// The tiered operation's access ends only after every tier operation under
// it ended its access and was released, and no later than its results are
// final (a get's promotions read the row again from its tier): the
// declared access-end bound is 0 (R-ACC-2). A tier operation whose access
// became unprovable makes the tiered operation's access unprovable too.
#pragma once

#include <kvblob/host/plugin.hpp>
#include <kvblob/support/driver_base.hpp>
#include <kvblob/support/work_queue.hpp>

#include "copy_buffers.hpp"
#include "key_stripes.hpp"
#include "recency.hpp"
#include "tier_batch.hpp"
#include "write_back.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace kvblob::tiered {

using support::Op;

// A row's answer from one tier, or the tiered driver's own for a tier that
// refused the whole operation (refused: nothing of the row's was touched).
struct TierAnswer {
    kvblob_row_result result = KVBLOB_ROW_PENDING;
    int32_t code = 0;
    std::string message;
    bool refused = false;
    // The tier's submit failed without a refusal (kvblob::CallError::refused):
    // it may still read or write the row's memory, so its FAULT is the row's
    // answer, and no other tier is asked to write that memory.
    bool tier_may_touch = false;
};

// Bytes of promotion copies the driver holds at a time, across operations
// (TieredDriver::plan_promoted).
inline constexpr uint64_t promote_buffer_bytes = uint64_t(64) << 20;

// A get on its way down the tiers (get_path.cpp): the tier asked now and
// its operation, shared by the worker that waits for it and the polls of
// the get. Whoever finds the tier operation settled takes the next step,
// under mu: reads its answers and releases it, then submits the rows still
// to ask to the next tier, or ends the get (claimed). A poll never waits: it
// takes a step only while no worker waits on the tier operation (the
// worker's wait holds it), and otherwise only polls it. Promotions run on
// the worker, after.
struct GetFlow {
    std::mutex mu;
    size_t tier = 0;                              // the tier asked now
    std::optional<kvblob::Operation> current;     // its get; none where it refused the get
    std::vector<size_t> rows;                     // the get's rows
    std::vector<size_t> asking;                   // those asked of tier, in its order
    std::vector<TierAnswer> refused;              // tier's refusals, where it refused the get
    std::vector<std::vector<TierAnswer>> asked;   // per tier answered: its answers
    bool claimed = false, worker_waiting = false;
    bool handed_off = false;                      // ever seen by another thread: never used again
    Block plan;                                   // promotions, for the worker (plan_promoted)
    std::vector<int> from;
    std::vector<Recency::Use> used;               // end_from_top's keys, kept from one get to the next
    std::vector<kvblob::RowStatus> results;       // the tier operation's, read by step, kept likewise
    // As new, keeping its vectors' memory (TieredOp::spare_flow).
    void reset();
};

struct TieredOp : Op {
    // The tier operations a cancel is forwarded to, under mu.
    std::mutex mu;
    std::vector<const kvblob::Operation *> cancellable;
    // Set by start_get before the worker is queued (op.queued then set):
    // what a poll of the get looks at (run_queued).
    std::shared_ptr<GetFlow> flow;
    // A write=back put holds the queue's writer (WriteBack::hold) until it
    // is final, or until it waits for room.
    bool holds_writer = false;
    // The batch of its rows submitted to a tier (submit_to), its arrays
    // kept from one use to the next.
    TierBatch tier_batch;
    // The last get's flow, used again by the next where no other thread
    // ever saw it (a get the top tier answered whole within the watch),
    // with its vectors: with the tier batch's kept mapping, a 4 KiB x 32
    // get through a memory tier in blocking mode went from 8.6 to 8.0 us.
    std::shared_ptr<GetFlow> spare_flow;
    // A write=back put's answers, its top tier's and its own, kept with
    // their capacity for the next put: at 32 rows each is 1.5 KiB, past the
    // allocator's per-thread cache, and allocating them was most of the
    // allocation time in a 64 KiB x 32 write=back put (perf, kvblob-bench
    // --tier top --option write=back).
    std::vector<TierAnswer> top_answers, answers;
    void recycle() override
    {
        cancellable.clear();
        flow.reset();
        holds_writer = false;
        Op::recycle();
    }
};

// Where log lines of the tiers go: this driver's own host log service while
// the driver lives (a tier's late line after close is dropped).
struct LogForward {
    std::mutex mu;
    kvblob_host_services_t host{};
    bool open = true;
    // Every tier's secrets, not only the speaking tier's (which the host
    // scrubs from what a tier says): a value given to two tiers is secret in
    // what either says. Set before any tier opens, then only read: this
    // driver scrubs the lines it forwards, its refusals and the tiers' row
    // messages with them.
    std::vector<std::string> secrets;
    void line(size_t tier, const std::string &driver, kvblob_log_level level, const std::string &text);
    void line_of_driver(kvblob_log_level level, const std::string &text);  // the tiered driver's own, while opening
};

// The tiered driver's own options (plugin.cpp's table).
struct Settings {
    bool write_back = false;             // write=back; write=through otherwise
    uint64_t write_back_queue_bytes = 0;  // write=back: the queue's limit
    uint64_t write_back_queue_rows = 0;   // write=back: and in rows
    uint64_t top_bytes = 0;              // the top tier's byte budget (0: none)
    size_t lru_keys = 0;                 // keys the recency record holds at most
    std::chrono::microseconds submit_watch{0};  // a get's or write=back put's submit watches a tier op this long
    unsigned workers = 1;
};

struct Tier {
    size_t index = 0;
    std::string driver;                // the name it was given (tier.N.driver)
    std::optional<kvblob::Plugin> plugin;
    std::optional<kvblob::Driver> handle;
    std::string label() const { return "tier " + std::to_string(index) + " (" + driver + ")"; }
};

class TieredDriver : public support::DriverBase {
public:
    static std::unique_ptr<TieredDriver> open(const kvblob_open_args_t &args, kvblob_caps_t &caps);
    ~TieredDriver() override;

    // The drain slot: every operation (DriverBase::drain), then every
    // promotion of a get already final, then, in write=back, every queued
    // row written below, within the one timeout.
    kvblob_status drain_everything(uint64_t timeout_ns);

    // The unregister_region slot: every tier's registration first, BUSY
    // when any tier refuses (its registration, and the memory, stay).
    kvblob_status unregister_everywhere(kvblob_region_t *region);

    // kvblob.scenarios/1, forwarded to the bottom tier (the store the upper
    // tiers cache), each offered only where the bottom tier offers it
    // (scenarios_offered). A hook that stages a key stages it below, then
    // takes the key out of every upper tier (purge), and, until
    // release_staged, gets and probes of the key skip the upper tiers
    // (bypass): the bottom tier's answer is the stack's, as the hook
    // documents. advance and echo_hint are not forwarded (tiered_driver.cpp
    // says why).
    kvblob_status stage_foreign_writer(const std::string &key);
    kvblob_status stage_full_pool();
    kvblob_status stage_failing_read(const std::string &key);
    kvblob_status stage_held_get(const std::string &key);
    kvblob_status stage_corrupt(const std::string &key);
    kvblob_status stage_unprovable(const std::string &key);
    kvblob_status release_staged();
    // The table of the hooks above that the bottom tier offers (static
    // storage in this plugin's image, R-LOAD-12); nullptr when none.
    const kvblob_scenarios_t *scenarios_offered() const;

protected:
    std::unique_ptr<Op> make_op() override { return std::make_unique<TieredOp>(); }
    void start(Op &op) override;
    void on_cancel(Op &op) override;
    // A poll of a get with a GetFlow: polls the tier operation (a tier that
    // lets waiters run its rows runs them here) and, while no worker waits
    // on it, steps the flow as far as the tiers let it without waiting.
    bool run_queued(Op &op) override;
    void stop() override;
    kvblob_status store_register(support::Region &region, std::string &why) override;
    void store_unregister(support::Region &region) override;

private:
    TieredDriver(const kvblob_caps_t &caps, const kvblob_host_services_t *host, std::vector<Tier> tiers,
                 std::shared_ptr<LogForward> forward, const Settings &settings);

    void run(TieredOp &op);
    // ---- gets (get_path.cpp) ----
    // Ends op, then runs its promotions. asked: the answers of the first
    // tiers, asked already (start_get), each in the order run_get asks them.
    void run_get(TieredOp &op, const std::vector<size_t> &rows, std::vector<std::vector<TierAnswer>> asked = {});
    // run_get up to the end of op (the last touch): the rows to promote,
    // counted in promotions_ (from: each one's tier).
    Block end_get(TieredOp &op, const std::vector<size_t> &rows, std::vector<std::vector<TierAnswer>> asked,
                  std::vector<int> &from);
    // Promotes plan (promote), then counts it out of promotions_.
    void promote_planned(Block &plan, std::vector<int> &from);
    // A get's tiers asked from the submitting thread (GetFlow): false when
    // the get is left to run() whole (a key staged below). A tier
    // operation not final on return is watched for up to submit_watch
    // (watch_for polls it, which runs the tier's rows here where the tier
    // lets waiters run them) before the get's worker is woken to wait for it.
    bool start_get(TieredOp &op);
    // Whether tier_op is final with its access no longer open: a poll
    // (which runs the tier's rows in this thread, where the tier lets
    // waiters run them), then a wait of up to `watch` from its end
    // (Operation::wait_until).
    static bool watch_for(const kvblob::Operation &tier_op, std::chrono::microseconds watch);
    // Submits rows to tier t as the flow's step (flow.mu held).
    void submit_step(TieredOp &op, GetFlow &flow, size_t t, std::vector<size_t> rows);
    // Whether the flow's tier operation is final with access no longer
    // open (a poll of it: the tier may run its rows in this thread).
    static bool settled(const GetFlow &flow);
    // The next step of a settled flow (flow.mu held): its answers read and
    // its operation released; then the rows still to ask submitted to the
    // next tier, or op ended (claimed; op may be gone on return).
    void step(TieredOp &op, GetFlow &flow);
    // The hot set's case, results being the top tier's answers to the
    // flow's rows: where every row is READY there (and the tier ended its
    // access), op ends here, READY, its keys most recently used, without
    // end_get's walk over the tiers (end_get was a ninth of a 4 KiB get,
    // its recency touch included, measured with perf); false, touching
    // nothing, otherwise.
    bool end_from_top(TieredOp &op, GetFlow &flow, const std::vector<kvblob::RowStatus> &results);
    // The worker's part: waits for each tier operation a poll did not step
    // past, steps, until the flow is claimed; then promotes.
    void wait_flow(TieredOp &op, const std::shared_ptr<GetFlow> &flow);
    void run_put(TieredOp &op, const std::vector<size_t> &rows, std::vector<TierAnswer> &answers);
    // Sets rows' answers and ends op; then lets go of the write=back writer
    // where op held it.
    void end_op(TieredOp &op, const std::vector<size_t> &rows, std::vector<TierAnswer> &answers);
    // ---- write=back puts from the submitting thread (back_put.cpp) ----
    // Where the queue has room for every row at once and no key is staged:
    // the top tier's put submitted here, and, where it is done within the
    // watch (watch_for), the put ended here; false when it is left to
    // run() whole.
    bool start_back_put(TieredOp &op);
    // The top tier's answers (in rows' order, room reserved and keys
    // claimed): the rows it stored queued, op ended; rows it DECLINED are
    // left to a worker's write_back (eviction, or written through).
    void end_back_put(TieredOp &op, std::vector<size_t> rows, std::vector<TierAnswer> &top);
    // write=through: the last tier first, its answer the row's; then each
    // tier above, bottom up, as a cache.
    void write_through(TieredOp &op, const std::vector<size_t> &rows, std::vector<TierAnswer> &answers);
    // write=back: the top tier's answer is the row's; a stored row is copied
    // into the write-back queue. A row the top tier DECLINED even after
    // eviction is written through instead.
    void write_back(TieredOp &op, std::vector<size_t> rows, std::vector<TierAnswer> &answers);
    void back_chunk(TieredOp &op, const std::vector<size_t> &admitted, std::vector<TierAnswer> &answers,
                    std::vector<size_t> &through);
    // The top tier's answers top (in rows' order, room reserved and keys
    // claimed) to a write=back put: the rows it stored are queued as one
    // block, READY; the rows it DECLINED for want of room are left in
    // declined, their room and claim given back; any other answer is the
    // row's (back_put.cpp).
    void queue_stored(TieredOp &op, const std::vector<size_t> &rows, std::vector<TierAnswer> &top,
                      std::vector<TierAnswer> &answers, std::vector<size_t> &declined);
    // A put of rows into the top tier, making room first for the byte
    // budget and, where the tier DECLINES, by evicting least recently used
    // objects held below, then asking again.
    std::vector<TierAnswer> put_top(TieredOp &op, const std::vector<size_t> &rows, bool cancellable);
    // The same for rows of any source: sizes[k] is row k's; put(idx, first)
    // puts the rows at idx into the top tier (first: the first attempt,
    // not a retry after eviction) and answers each, in idx's order.
    using TopPut = std::function<std::vector<TierAnswer>(const std::vector<size_t> &idx, bool first)>;
    std::vector<TierAnswer> put_top_sized(const std::vector<uint64_t> &sizes, const TopPut &put);
    // Evicts least recently used objects safely held below, bytes of them
    // at least (fewer when there are not enough): true when any went.
    bool evict(uint64_t bytes);
    // Evicts victims the recency record let go of (evict_mu_ held, keys
    // claimed by a write=back put left out); how many went.
    size_t drop(std::vector<std::string> victims);
    size_t remove_from_top(std::vector<std::string> keys);
    // The write=back queue's writer: block into every tier below the top,
    // bottom first; per row, whether the bottom tier stored it.
    std::vector<bool> write_below(Block &block);
    // Submits rows of the driver's own block to tier t as kind (a put from
    // it, or a get into it), waits until final with access ended, and
    // answers each row.
    std::vector<TierAnswer> ask_own(size_t t, kvblob::OpKind kind, Block &block, const std::vector<size_t> &rows);
    // block's copy, which a tier may touch for good: kept, never freed nor
    // used again (block.bytes left empty, so no later tier is asked).
    void keep_for_good(Block &block);
    void run_probe(TieredOp &op, const std::vector<size_t> &rows, std::vector<TierAnswer> &answers);
    void run_remove(TieredOp &op, const std::vector<size_t> &rows, std::vector<TierAnswer> &answers);
    // A get's rows READY below, planned for promotion before the get is
    // final: room in the driver's promotion buffer (promote_buffer_bytes
    // across operations) is counted for each, a row past it is not
    // promoted; nothing is copied, so the get's access ends when its
    // results are final (the declared bound is 0, R-ACC-2) and the caller's
    // READY waits for no copy. from: per row of the plan, the tier that
    // answered READY.
    Block plan_promoted(TieredOp &op, const std::vector<size_t> &rows, const std::vector<int> &ready_tier,
                        std::vector<int> &from);
    // After the get is final: reads each planned row again from the tier
    // that answered it, into the driver's own buffer; a row that tier no
    // longer answers READY (removed since, say) is left out.
    void read_promoted(Block &copy, std::vector<int> &from);
    // Puts each row read into every tier above the one it came from, then
    // lets go of the copy's room in the buffer.
    void promote(Block &copy, std::vector<int> &from);
    // Submits rows of op to tier t as kind, waits until the tier operation
    // is final and its access ended, and answers each row (in rows' order).
    // cancellable: a cancel of op is forwarded to it.
    std::vector<TierAnswer> ask(TieredOp &op, size_t t, kvblob::OpKind kind, const std::vector<size_t> &rows,
                                bool cancellable);
    // ask's halves: the submit (none, with out each row's refusal, when the
    // tier refused it), and the answers of a tier operation that is final
    // with its access no longer open (out sized to its rows). miss_messages
    // false: a MISS row's message is not fetched (a get's MISS above the
    // last tier is never the row's answer: the row is asked below).
    std::optional<kvblob::Operation> submit_to(TieredOp &op, size_t t, kvblob::OpKind kind,
                                               const std::vector<size_t> &rows, std::vector<TierAnswer> &out);
    void collect(TieredOp &op, size_t t, const kvblob::Operation &tier_op, std::vector<TierAnswer> &out,
                 bool miss_messages = true);
    // The same, with the tier operation's results fetched already.
    void collect(TieredOp &op, size_t t, const kvblob::Operation &tier_op,
                 const std::vector<kvblob::RowStatus> &results, std::vector<TierAnswer> &out,
                 bool miss_messages = true);

    // Forwards a keyed hook to the bottom tier, then purges key from the
    // upper tiers and bypasses them for it (bypass: until release_staged).
    kvblob_status stage_keyed(kvblob_status (*kvblob_scenarios_t::*slot)(kvblob_driver_t *, const uint8_t *, uint64_t),
                              const std::string &key, bool bypass);
    // Removes key from tier t (an upper tier): OK when it answered READY or
    // MISS.
    kvblob_status purge(size_t t, const std::string &key);
    // Takes out of rows those naming a key staged below (bypass_), and
    // returns them: they are asked of the bottom tier alone.
    std::vector<size_t> hold_back(TieredOp &op, std::vector<size_t> &rows);

    std::vector<Tier> tiers_;
    std::shared_ptr<LogForward> forward_;
    // The stack's secrets (LogForward::secrets): fixed once the tiers opened.
    const std::vector<std::string> &secrets() const { return forward_->secrets; }
    const Settings settings_;

    // The top tier's keys, least recently used first (recency.hpp).
    Recency recency_;
    // Held exclusively while an eviction picks and removes its victims,
    // shared while a write=back put claims its keys: a key claimed is never
    // taken, and a key taken is removed before the put that claims it next
    // stores it again.
    std::shared_mutex evict_mu_;
    // A promotion's keys, shared from its read to its last put; a remove's,
    // exclusively across its tiers (key_stripes.hpp).
    KeyStripes key_stripes_;
    // write=back's queue, or null; stopped (finish) once, at close.
    std::unique_ptr<WriteBack> write_back_;
    bool write_back_finished_ = false;
    // Bytes of promotion copies held now (plan_promoted), at most
    // promote_buffer_bytes.
    std::atomic<uint64_t> promoting_bytes_{0};
    // The memory of promotions' and write=back blocks' copies, kept for
    // the next (as much as the promotion buffer holds, idle).
    CopyBuffers copy_buffers_{promote_buffer_bytes};
    // Gets whose promotions have not ended yet, counted before the get is
    // final, so a drain that saw it final waits for them too.
    std::mutex promotions_mu_;
    std::condition_variable promotions_cv_;
    size_t promotions_ = 0;
    // Memory of blocks a tier kept access to for good (R-REG-2).
    std::mutex kept_mu_;
    std::vector<Bytes> kept_for_good_;
    // write=back: stage_full_pool is staged below, so puts are written
    // through (the stack answers as the bottom tier does) until
    // release_staged.
    std::atomic<bool> full_pool_staged_{false};

    // Which kvblob.scenarios/1 slots this driver offers (bits of
    // tiered_driver.cpp's Hook), fixed at open.
    unsigned hooks_offered_ = 0;
    // Keys staged below whose gets and probes skip the upper tiers, until
    // release_staged; keys_staged_ is set while any is, so operations take
    // hooks_mu_ only then.
    std::mutex hooks_mu_;
    std::set<std::string> bypass_;
    std::atomic<bool> keys_staged_{false};

    // Each registered region's registrations with the tiers, by tier.
    std::mutex regions_mu_;
    std::unordered_map<const kvblob_region_t *, std::vector<kvblob::Region>> tier_regions_;

    support::WorkQueue workers_;
    // The ends of write=back puts that started in the submitting thread
    // (start_back_put) and whose top tier was not done within the watch.
    // Such a put has reserved room in the queue and claimed its keys, which
    // only its end gives up (it queues the rows): queued behind a worker
    // that waits for room or for those keys (a put, a remove), it would wait
    // for good. So its end waits on threads of its own, which wait only for
    // the top tier's operation.
    support::WorkQueue back_put_ends_;
};

}  // namespace kvblob::tiered
