// The way of executing that the file, Redis and Mooncake drivers share:
// worker threads run each admitted operation (run()), and a get naming a
// key staged with stage_held_get is parked until the driver releases it
// (held_gets.hpp), delaying no other operation (R-CON-3).
//
// With waiters_run, an operation's rows are shared instead (row_share.hpp):
// the worker's job and the polls that wait for the operation each run rows
// no thread took yet (run_row()), and whoever settles the last completes it.
//
// A driver derived from QueuedDriver starts the workers in its constructor
// and calls stop() first in its destructor: no worker may call run() on a
// driver half destroyed.
#pragma once

#include <kvblob/kvblob.h>

#include <chrono>
#include <string>

#include "kvblob/support/driver_base.hpp"
#include "kvblob/support/held_gets.hpp"
#include "kvblob/support/shared_jobs.hpp"
#include "kvblob/support/work_queue.hpp"

namespace kvblob::support {

class QueuedDriver : public DriverBase {
public:
    // kvblob.scenarios/1: gets naming key wait until release_held_gets.
    kvblob_status stage_held_get(const std::string &key)
    {
        held_gets_.stage(key);
        return KVBLOB_OK;
    }

protected:
    using DriverBase::DriverBase;

    // Takes every row of op to its result, then ends its access and
    // finishes it. On a worker thread; not with waiters_run.
    virtual void run(Op &op) = 0;
    // With waiters_run: takes row i of op to its result (begin_row, then
    // set_row), touching no other row. On a worker thread or in a poll,
    // beside other rows of op running on other threads.
    virtual void run_row(Op &op, size_t i) { set_row(op, i, KVBLOB_ROW_FAULT, 0, "driver error: no run_row"); }
    // With waiters_run: rows a thread claims at once (small rows: several,
    // so that the threads do not pass the claim counter back and forth for
    // each one).
    virtual uint64_t rows_per_claim(const Op &) const { return 1; }

    // waiters_run: the polls that wait for an operation run its rows beside
    // the worker (run_row, DriverBase::run_queued). Only for a driver whose
    // rows are independent bounded local work; never one that waits on a
    // network round trip, since poll never blocks. watch: how long a
    // worker out of jobs watches the queue before it sleeps (WorkQueue).
    // name: the workers' thread name ("kvblob-" and the driver's name).
    void start_workers(const std::string &name, unsigned threads, bool waiters_run = false,
                       std::chrono::microseconds watch = WorkQueue::watch_before_sleep)
    {
        waiters_run_ = waiters_run;
        workers_.start(threads, watch, name);
    }
    void start(Op &op) override
    {
        if (held_gets_.park(op)) return;
        push(op);
    }
    bool run_queued(Op &op) override
    {
        return waiters_run_ && run_unclaimed(workers_, op, [this](Op &o, bool holds_job) { share_rows(o, holds_job); });
    }
    // Lets the workers complete what is queued, then joins them.
    void stop() override { workers_.stop(); }
    // A held get has not started: cancel ends it whole (R-CAN-1).
    void on_cancel(Op &op) override
    {
        if (held_gets_.take(op)) cancel_unstarted(op);
    }
    // Forgets the staged keys and runs the parked gets now (release_staged).
    void release_held_gets()
    {
        for (Op *op : held_gets_.release()) push(*op);
    }

private:
    void push(Op &op)
    {
        if (!waiters_run_) return workers_.push([this, &op] { run(op); });
        push_shared(workers_, op, rows_per_claim(op), [this](Op &o, bool holds_job) { share_rows(o, holds_job); });
    }
    // Runs rows of op until none is unclaimed; completes op when this
    // thread settled its last row (or, for the job, its own count).
    void share_rows(Op &op, bool holds_job)
    {
        if (!op.share.work([&](uint64_t i) { run_row(op, i); }, holds_job)) return;
        end_access(op);
        finish(op);  // the last touch: op may be released from here on
    }

    bool waiters_run_ = false;  // set before the workers start
    WorkQueue workers_;
    HeldGets held_gets_;
};

}  // namespace kvblob::support
