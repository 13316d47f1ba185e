// An operation's job in a work queue whose rows the polls that wait for it
// share (row_share.hpp): how QueuedDriver and the memory driver's
// background mode push it, and what a poll runs of it.
#pragma once

#include <atomic>
#include <cstdint>

#include "kvblob/support/driver_base.hpp"
#include "kvblob/support/work_queue.hpp"

namespace kvblob::support {

// Pushes op's job: share_rows(op, true) on a worker, or in a poll that
// takes it back. share_rows(op, holds_job) runs rows until none is
// unclaimed, and completes op when RowShare::work says so. It is given op
// rather than holding it, so that it is the driver's pointer alone, and the
// job (it and op) fits in WorkQueue::Job itself: a job that did not was an
// allocation on every operation (measured with perf on a 4 KiB get).
template <class ShareRows>
void push_shared(WorkQueue &queue, Op &op, uint64_t rows_per_claim, ShareRows share_rows)
{
    op.share.open(op.rows.size(), rows_per_claim);
    op.queued.store(true, std::memory_order_relaxed);
    queue.push(
        [&op, share_rows] {
            op.queued.store(false, std::memory_order_relaxed);
            share_rows(op, true);
        },
        &op);
}

// In a poll of op: the rows no thread claimed yet; then, once none is left,
// the job itself if no worker took it, since its count alone would keep
// op from completing until a worker gets a time slice. Rows first: a
// watching worker that finds its job taken goes back to sleep, and the next
// push pays for its wake. Whether this ran anything.
template <class ShareRows>
bool run_unclaimed(WorkQueue &queue, Op &op, ShareRows &&share_rows)
{
    bool ran = false;
    if (op.share.unclaimed()) {
        share_rows(op, false);  // the poll's caller holds op
        ran = true;
    }
    return queue.run_queued(&op) || ran;  // &op only as the job's tag
}

}  // namespace kvblob::support
