// write=back puts from the submitting thread. Measured (kvblob-bench
// --tier top --option write=back, 2 shared cores): a 4 KiB put of 32 rows
// spent most of its time handing over to this driver's worker and back to
// the waiting caller, against the few microseconds the top tier's put
// takes. Where the queue has room for every row at once (never waiting
// for it here), no key is staged below and no byte budget applies, the top
// tier's put is submitted in submit, and a top tier done within the watch
// (submit_watch_us: the memory driver's mode=blocking, or polls that copied
// the rows) ends the put before submit returns; where it is not, the
// put's end waits for it on a thread of back_put_ends_ (tiered_driver.hpp
// says why not a worker). Everything else runs as before, on a worker
// (TieredDriver::write_back).
#include "tiered_driver.hpp"

namespace kvblob::tiered {

bool TieredDriver::start_back_put(TieredOp &op)
{
    if (!write_back_ || keys_staged_.load() || full_pool_staged_.load() || recency_.has_budget()) return false;
    std::vector<size_t> rows;
    std::vector<uint64_t> sizes;
    for (size_t i = 0; i < op.rows.size(); ++i)
        if (begin_row(op, i)) {
            rows.push_back(i);
            sizes.push_back(op.rows[i].total);
        }
    // Rows begun here stay begun: run() goes on with them.
    if (rows.empty() || !write_back_->try_reserve(sizes)) return false;
    {
        std::vector<uint64_t> keys;
        for (size_t i : rows) keys.push_back(op.rows[i].key_hash);
        std::shared_lock lock(evict_mu_);
        write_back_->claim(keys);
    }
    write_back_->hold();
    op.holds_writer = true;
    std::vector<TierAnswer> &top = op.top_answers;
    auto tier_op = std::make_shared<std::optional<kvblob::Operation>>(submit_to(op, 0, kvblob::OpKind::put, rows, top));
    auto &held = *tier_op;
    if (!held || watch_for(*held, settings_.submit_watch)) {
        if (held) collect(op, 0, *held, top);
        held.reset();
        end_back_put(op, std::move(rows), top);
        return true;
    }
    {
        std::lock_guard lock(op.mu);
        op.cancellable.push_back(&*held);
        if (op.cancel_requested.load()) held->cancel();
    }
    back_put_ends_.push([this, &op, rows, tier_op]() mutable {
        auto &t = *tier_op;
        while (!t->wait(std::chrono::hours(1))) {
        }
        std::vector<TierAnswer> top;
        collect(op, 0, *t, top);
        {
            std::lock_guard lock(op.mu);
            op.cancellable.clear();
        }
        t.reset();
        end_back_put(op, std::move(rows), top);
    });
    return true;
}

void TieredDriver::queue_stored(TieredOp &op, const std::vector<size_t> &rows, std::vector<TierAnswer> &top,
                                std::vector<TierAnswer> &answers, std::vector<size_t> &declined)
{
    Block block;
    block.rows.reserve(rows.size());
    std::vector<Recency::Use> stored;
    stored.reserve(rows.size());
    for (size_t k = 0; k < rows.size(); ++k) {
        const size_t i = rows[k];
        const support::Row &row = op.rows[i];
        if (top[k].result == KVBLOB_ROW_READY) {
            block.rows.push_back({row.key, block.reserved, row.total, row.key_hash});
            block.reserved += row.total;
            answers[i] = {KVBLOB_ROW_READY, 0, {}, false};
            stored.push_back({&row.key, row.key_hash, row.total});
            continue;
        }
        write_back_->unreserve(row.total);
        write_back_->unclaim(row.key_hash);
        if (top[k].result == KVBLOB_ROW_DECLINED && !top[k].refused) declined.push_back(i);
        else answers[i] = std::move(top[k]);
    }
    if (!stored.empty()) drop(recency_.hold(stored, false));
    if (!block.rows.empty()) write_back_->push(std::move(block));
}

void TieredDriver::end_back_put(TieredOp &op, std::vector<size_t> rows, std::vector<TierAnswer> &top)
{
    std::vector<TierAnswer> &answers = op.answers;  // op's until end_op, its last touch
    answers.assign(op.rows.size(), {});
    // A full top tier: the worker's write=back evicts and asks again, or
    // writes the row through (back_chunk).
    std::vector<size_t> again;
    queue_stored(op, rows, top, answers, again);
    if (again.empty()) {
        end_op(op, rows, answers);
        return;
    }
    workers_.push([this, &op, rows, again] {
        write_back(op, again, op.answers);
        end_op(op, rows, op.answers);
    });
}

}  // namespace kvblob::tiered
