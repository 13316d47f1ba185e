// The tiered driver's gets: the top tier asked in the submitting thread,
// the rows it did not answer submitted to the next tier there too, and each
// later step taken by whichever of the get's worker and a poll of it first
// finds the tier operation settled (GetFlow, tiered_driver.hpp).
//
// Measured (kvblob-bench --tier, 2 shared cores): a get through a memory
// top tier spent most of its time handing over between threads: this
// driver's worker, the tiers', then the waiting caller. A get the top tier
// answers whole within the submit's watch (submit_watch_us: its polls run
// the memory driver's rows here) is final before submit returns; a get of
// rows below reaches the next tier without waiting for this driver's
// worker to wake, and that tier's rows run here too within the watch, or
// in a caller's poll after it, where the tier lets its waiters run them
// (the file driver); where the get ends within the watch, the worker only
// promotes.
#include "tiered_driver.hpp"

#include <algorithm>
#include <chrono>

namespace kvblob::tiered {

namespace {

// The rows a tier left to the next: neither READY nor CANCELLED, nor
// FAULT where the tier may still touch their memory (as end_get's walk
// decides), in the order of rows.
std::vector<size_t> still_to_ask(const std::vector<size_t> &rows, const std::vector<TierAnswer> &got)
{
    std::vector<size_t> next;
    for (size_t k = 0; k < rows.size(); ++k)
        if (got[k].result != KVBLOB_ROW_READY && got[k].result != KVBLOB_ROW_CANCELLED && !got[k].tier_may_touch)
            next.push_back(rows[k]);
    return next;
}

// Final, with its access no longer open (ended, or unprovable): a poll,
// which may run the tier's rows in this thread.
bool settled_op(const kvblob::Operation &tier_op)
{
    return tier_op.is_final() && tier_op.access() != KVBLOB_ACCESS_OPEN;
}

}  // namespace

void GetFlow::reset()
{
    tier = 0;
    current.reset();
    rows.clear();
    asking.clear();
    refused.clear();
    asked.clear();
    claimed = worker_waiting = handed_off = false;
    plan = Block();
    from.clear();
    // used is left as it is: end_from_top writes every entry it reads, and
    // a resize to the size it has already writes nothing (cleared, it was
    // filled with empty entries on every get, then overwritten).
}

bool TieredDriver::start_get(TieredOp &op)
{
    if (keys_staged_.load()) return false;  // hold_back's rows: run() sorts them
    // The last get's flow where only its submitting thread ever touched it
    // (that get ended within the watch, and op was released and used
    // again since): none else holds it.
    std::shared_ptr<GetFlow> flow = std::move(op.spare_flow);
    if (flow && !flow->handed_off) flow->reset();
    else flow = std::make_shared<GetFlow>();
    op.spare_flow = flow;  // set now: op may be gone once the flow is claimed
    begin_rows(op, flow->rows);
    if (flow->rows.empty()) return false;  // every row CANCELLED already: run() ends it
    {
        std::lock_guard lock(flow->mu);
        flow->asking = flow->rows;
        submit_step(op, *flow, 0, std::move(flow->asking));
        // As far as the tiers go within the watch: a tier operation not
        // final once this thread ran what rows of it the tier let it run
        // (settled's poll) is watched for submit_watch, and where the top
        // tier answered every row READY the get is final before submit
        // returns, with no thread between. Measured (kvblob-bench --tier
        // top, 64 KiB x 32, memory over file): without the watch, waking
        // the worker, which then waited on the top tier's last rows, cost
        // a third of the get's time. The watch starts after this thread's
        // own rows: a get of 1 MiB rows from the file tier ran rows here
        // past a watch counted from the submit, and then handed the rows
        // still running on the tier's workers to this driver's worker, one
        // wake more before the caller's.
        while (!flow->claimed) {
            // A tier that refused the get has nothing to watch; watch_for's
            // first poll is settled()'s.
            if (flow->current && !watch_for(*flow->current, settings_.submit_watch)) break;
            step(op, *flow);
        }
        if (flow->claimed && flow->plan.rows.empty()) return true;
        flow->handed_off = true;  // to a poll of op and the worker, or to the worker alone
        if (!flow->claimed) {
            op.flow = flow;
            op.queued.store(true);  // so that a poll of op looks (DriverBase::poll, run_queued)
        }
    }
    // Claimed already: the worker only promotes, and never touches op.
    workers_.push([this, &op, flow] { wait_flow(op, flow); });
    return true;
}

void TieredDriver::submit_step(TieredOp &op, GetFlow &flow, size_t t, std::vector<size_t> rows)
{
    flow.tier = t;
    flow.asking = std::move(rows);
    flow.refused.clear();
    flow.current = submit_to(op, t, kvblob::OpKind::get, flow.asking, flow.refused);
    if (!flow.current) return;  // refused whole: the refusals are its answers
    std::lock_guard lock(op.mu);
    op.cancellable.push_back(&*flow.current);
    if (op.cancel_requested.load()) flow.current->cancel();
}

bool TieredDriver::watch_for(const kvblob::Operation &tier_op, std::chrono::microseconds watch)
{
    // The host's wait: it watches the tier's announcements rather than
    // asking the tier again and again, and sleeps once the tier's
    // operations have lately taken long, leaving the core to the tier's
    // worker (measured: kvblob-bench --tier top, 4 KiB x 32 gets, 8.5-8.8 us
    // against 8.6-9.3 with a poll every 16 pauses). Its deadline is set
    // after the first poll, which may run rows for a while.
    return settled_op(tier_op) || tier_op.wait_until(std::chrono::steady_clock::now() + watch);
}

bool TieredDriver::settled(const GetFlow &flow)
{
    return !flow.current || settled_op(*flow.current);
}

void TieredDriver::step(TieredOp &op, GetFlow &flow)
{
    std::vector<TierAnswer> got = std::move(flow.refused);
    if (flow.current) {
        flow.current->results(flow.results);
        if (flow.tier == 0 && end_from_top(op, flow, flow.results)) return;
        collect(op, flow.tier, *flow.current, flow.results, got, flow.tier + 1 == tiers_.size());
        {
            std::lock_guard lock(op.mu);
            op.cancellable.clear();
        }
        flow.current.reset();  // released before op's access ends
    }
    std::vector<size_t> next = still_to_ask(flow.asking, got);
    flow.asked.push_back(std::move(got));
    if (!next.empty() && flow.tier + 1 < tiers_.size()) {
        submit_step(op, flow, flow.tier + 1, std::move(next));
        return;
    }
    flow.claimed = true;
    flow.plan = end_get(op, flow.rows, std::move(flow.asked), flow.from);  // op may be gone from here on
}

bool TieredDriver::end_from_top(TieredOp &op, GetFlow &flow, const std::vector<kvblob::RowStatus> &results)
{
    const auto ready = [](const kvblob::RowStatus &r) { return r.result == KVBLOB_ROW_READY; };
    if (!std::all_of(results.begin(), results.end(), ready)) return false;
    // A tier that keeps the caller's memory for good: end_get marks op so.
    if (flow.current->access() != KVBLOB_ACCESS_ENDED) return false;
    {
        std::lock_guard lock(op.mu);
        op.cancellable.clear();
    }
    flow.current.reset();  // released before op's access ends
    // Written in place over the kept capacity: a push_back per row was a
    // call per row, a seventh of the recency record's cost (measured with
    // perf).
    flow.used.resize(flow.rows.size());
    for (size_t k = 0; k < flow.rows.size(); ++k) {
        const support::Row &row = op.rows[flow.rows[k]];
        flow.used[k] = {&row.key, row.key_hash, row.total};
    }
    // The keys are recorded before any row is READY: a caller that reads a
    // READY row before the get is final may remove its key at once, and a
    // touch after that remove would record the key again, its bytes counted
    // for an object the top tier no longer holds.
    drop(recency_.touch(flow.used, !write_back_));
    set_rows_ready(op, flow.rows);
    flow.claimed = true;
    end_access(op);
    finish(op);  // the last touch
    return true;
}

void TieredDriver::wait_flow(TieredOp &op, const std::shared_ptr<GetFlow> &flow)
{
    {
        std::unique_lock lock(flow->mu);
        while (!flow->claimed) {
            if (!settled(*flow)) {
                // While it waits, a poll may poll the tier operation, not
                // step past it (nor release it).
                flow->worker_waiting = true;
                lock.unlock();
                while (!flow->current->wait(std::chrono::hours(1))) {
                }
                lock.lock();
                flow->worker_waiting = false;
            }
            step(op, *flow);
        }
    }
    // The plan is the claimer's, read after its lock: op is not touched.
    promote_planned(flow->plan, flow->from);
}

bool TieredDriver::run_queued(Op &base)
{
    auto &op = static_cast<TieredOp &>(base);
    const std::shared_ptr<GetFlow> flow = op.flow;
    if (!flow) return false;
    // Never waits: another poll, or a step, holds it.
    std::unique_lock lock(flow->mu, std::try_to_lock);
    if (!lock.owns_lock() || flow->claimed) return false;
    if (flow->worker_waiting) {
        // The worker's wait holds the tier operation: only help it along.
        (void)flow->current->is_final();
        return false;
    }
    while (!flow->claimed && settled(*flow)) step(op, *flow);  // op may be gone once claimed
    return flow->claimed;
}

void TieredDriver::run_get(TieredOp &op, const std::vector<size_t> &all, std::vector<std::vector<TierAnswer>> asked)
{
    std::vector<int> from;
    Block plan = end_get(op, all, std::move(asked), from);
    promote_planned(plan, from);
}

void TieredDriver::promote_planned(Block &plan, std::vector<int> &from)
{
    if (plan.rows.empty()) return;
    promote(plan, from);
    std::lock_guard lock(promotions_mu_);
    if (--promotions_ == 0) promotions_cv_.notify_all();
}

// Top first; a row that MISSes (or fails) at a tier is asked of the next.
// READY from the first tier that has it; otherwise a FAULT that may have
// written the destination (R-ROW-3: no MISS after that), else the last
// tier's answer. Rows READY below are then planned for promotion.
Block TieredDriver::end_get(TieredOp &op, const std::vector<size_t> &all,
                            std::vector<std::vector<TierAnswer>> asked, std::vector<int> &from)
{
    std::vector<TierAnswer> answers(op.rows.size());
    std::vector<int> ready_tier(op.rows.size(), -1);
    std::vector<std::optional<TierAnswer>> fault(op.rows.size());
    std::vector<size_t> rows = all;
    // Rows of a key staged below go to the bottom tier alone (start_get
    // leaves a get to run() while any key is).
    std::vector<size_t> below;
    if (asked.empty()) below = hold_back(op, rows);
    std::vector<Recency::Use> used;  // the rows READY from the top tier
    for (size_t t = 0; t < tiers_.size(); ++t) {
        if (t + 1 == tiers_.size()) rows.insert(rows.end(), below.begin(), below.end());
        if (rows.empty()) {
            if (below.empty()) break;
            continue;
        }
        auto got = t < asked.size() ? std::move(asked[t]) : ask(op, t, kvblob::OpKind::get, rows, true);
        std::vector<size_t> next;
        for (size_t k = 0; k < rows.size(); ++k) {
            const size_t i = rows[k];
            TierAnswer &a = got[k];
            if (a.result == KVBLOB_ROW_READY) {
                answers[i] = {KVBLOB_ROW_READY, 0, t == 0 ? std::string() : "from " + tiers_[t].label()};
                ready_tier[i] = static_cast<int>(t);
                if (t == 0) used.push_back({&op.rows[i].key, op.rows[i].key_hash, op.rows[i].total});
                continue;
            }
            if (a.result == KVBLOB_ROW_CANCELLED) {
                // Nothing of this tier's touched the row; an earlier FAULT did.
                answers[i] = fault[i] ? *fault[i] : std::move(a);
                continue;
            }
            if (a.tier_may_touch) {  // asked of no tier below
                answers[i] = std::move(a);
                continue;
            }
            if (a.result == KVBLOB_ROW_FAULT && !a.refused && !fault[i]) fault[i] = a;
            answers[i] = std::move(a);
            next.push_back(i);
        }
        rows = std::move(next);
        // Most recently used now. A key this driver did not place there is
        // held below for sure only in write=through (every object reaches
        // the top from below).
        if (t == 0 && !used.empty()) drop(recency_.touch(used, !write_back_));
    }
    for (size_t i : rows)
        if (fault[i]) answers[i] = *fault[i];
    for (size_t i : all) set_row(op, i, answers[i].result, answers[i].code, std::move(answers[i].message));
    // The rows to promote are planned (room in the promotion buffer), not
    // copied: access ends and the get is final at once, and the promotion
    // reads each row again from the tier that answered it (read_promoted).
    Block plan;
    if (!op.cancel_requested.load()) plan = plan_promoted(op, all, ready_tier, from);
    if (!plan.rows.empty()) {
        std::lock_guard lock(promotions_mu_);
        ++promotions_;
    }
    end_access(op);
    finish(op);  // the last touch
    return plan;
}

}  // namespace kvblob::tiered
