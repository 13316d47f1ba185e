// The way of executing that the file, Redis and Mooncake drivers share:
// worker threads run each admitted operation (run()), and a get naming a
// key staged with stage_held_get is parked until the driver releases it
// (held_gets.hpp), delaying no other operation (R-CON-3).
//
// A driver derived from QueuedDriver starts the workers in its constructor
// and calls stop() first in its destructor: no worker may call run() on a
// driver half destroyed.
#pragma once

#include <kvblob/kvblob.h>

#include <string>

#include "kvblob/support/driver_base.hpp"
#include "kvblob/support/held_gets.hpp"
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
    // finishes it. On a worker thread.
    virtual void run(Op &op) = 0;

    // waiters_run: a poll that finds an operation still queued runs it in
    // the polling thread (DriverBase::run_queued). Only for a driver whose
    // run() is bounded local work; never one that waits on a network round
    // trip, since poll never blocks.
    void start_workers(unsigned threads, bool waiters_run = false)
    {
        waiters_run_ = waiters_run;
        workers_.start(threads);
    }
    void start(Op &op) override
    {
        if (held_gets_.park(op)) return;
        push(op);
    }
    bool run_queued(Op &op) override { return waiters_run_ && workers_.run_queued(&op); }
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
        op.queued.store(true, std::memory_order_relaxed);
        workers_.push(
            [this, &op] {
                op.queued.store(false, std::memory_order_relaxed);
                run(op);
            },
            &op);
    }

    bool waiters_run_ = false;  // set before the workers start
    WorkQueue workers_;
    HeldGets held_gets_;
};

}  // namespace kvblob::support
