// Operation: one admitted operation the caller holds, and how it waits
// for it (notified where the driver announces, polled otherwise).
#include "kvblob/host/driver.hpp"

#include <algorithm>
#include <thread>
#include <utility>

#include "driver_core.hpp"
#include "watch.hpp"

namespace kvblob {

Operation::Operation(std::shared_ptr<DriverCore> core, kvblob_op_t *handle, uint64_t rows)
    : core_(std::move(core)), handle_(handle), rows_(rows)
{
}
Operation::Operation(Operation &&o) noexcept
    : core_(std::move(o.core_)),
      handle_(std::exchange(o.handle_, nullptr)),
      rows_(o.rows_),
      released_(std::exchange(o.released_, false))
{
}
Operation &Operation::operator=(Operation &&o) noexcept
{
    if (this != &o) {
        abandon();
        core_ = std::move(o.core_);
        handle_ = std::exchange(o.handle_, nullptr);
        rows_ = o.rows_;
        released_ = std::exchange(o.released_, false);
    }
    return *this;
}
Operation::~Operation() { abandon(); }

void Operation::abandon() noexcept
{
    if (!handle_) return;
    core_->abandon(handle_);
    handle_ = nullptr;
}

DriverCore &Operation::owned(const char *member) const
{
    if (!handle_)
        throw CallError(KVBLOB_E_INVALID, "R-OPS-1",
                        std::string("Operation::") + member + "() on " +
                            (released_ ? "an operation already released: after release the handle is dead"
                                       : "an object that holds no operation (moved from, or default-constructed)") +
                            "; no driver is asked");
    return *core_;
}

kvblob_status Operation::release()
{
    kvblob_status st = owned("release").release(handle_);
    if (st == KVBLOB_OK) {
        handle_ = nullptr;
        released_ = true;
    }
    return st;
}

bool Operation::is_final() const { return owned("is_final").is_final(handle_); }
kvblob_access Operation::access() const { return owned("access").access(handle_); }

bool Operation::settled() const { return is_final() && access() != KVBLOB_ACCESS_OPEN; }

// Settled already (a driver that finished inside its submit, or a poll that
// ran the rows itself): answered before the clock is read. Each read is a
// call of its own, and a settled wait was mostly clock.
bool Operation::wait(std::chrono::milliseconds timeout) const
{
    DriverCore &core = owned("wait");
    return settled() || wait_settled(core, std::chrono::steady_clock::now() + timeout);
}

bool Operation::wait_until(std::chrono::steady_clock::time_point deadline) const
{
    DriverCore &core = owned("wait_until");
    return settled() || wait_settled(core, deadline);
}

bool Operation::wait_settled(DriverCore &core, std::chrono::steady_clock::time_point deadline) const
{
    const auto start = std::chrono::steady_clock::now();
    if (core.notifies()) {
        // Every operation of the driver announces through one generation:
        // the watch is the wait's, once, and a round woken by another
        // operation's announcement sleeps again at once. Watching per round
        // kept every waiter spinning whenever announcements came more often
        // than the watch lasts. Its length follows what the driver's
        // operations have lately taken (WaitHistory, watch.hpp).
        const auto watch_end = start + core.waits().next_watch();
        bool slept = false;
        // The generation is read before the state is asked, so an
        // announcement between the two still wakes the wait below.
        for (;;) {
            const uint64_t seen = core.notifier().current();
            if (settled()) {
                const auto now = std::chrono::steady_clock::now();
                core.waits().record(wait_took(start, now, core.notifier().last_announced(), slept));
                return true;
            }
            if (std::chrono::steady_clock::now() >= deadline) return false;
            // The last round's: an announcement reads the time only for a
            // waiter it finds asleep, so a round that found the generation
            // moved without sleeping has no announced time of its own, and
            // an earlier round's would be another operation's, older.
            const auto look_again = std::chrono::steady_clock::now() + look_again_unannounced;
            slept = core.notifier().wait_past(seen, std::min(deadline, look_again), watch_end);
        }
    }
    // Polled: watched first, then looked at after sleeps that double, none
    // past the deadline.
    const auto settled_now = [this] { return settled(); };
    if (watch(deadline, settled_now)) return true;
    auto pause = std::chrono::microseconds(1);
    while (!settled()) {
        const auto now = std::chrono::steady_clock::now();
        if (now >= deadline) return false;
        std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(pause, deadline - now));
        pause = std::min(pause * 2, std::chrono::microseconds(1000));
    }
    return true;
}

int Operation::completion_fd() const noexcept
{
    if (!core_ || !core_->notifies()) return -1;
    return core_->notifier().fd();
}

std::vector<RowStatus> Operation::results() const
{
    std::vector<RowStatus> out;
    results(out);
    return out;
}

void Operation::results(std::vector<RowStatus> &out) const { owned("results").results(handle_, out); }
std::string Operation::message(uint64_t row) const { return owned("message").message(handle_, row); }
kvblob_status Operation::cancel() const { return owned("cancel").cancel(handle_); }

}  // namespace kvblob
