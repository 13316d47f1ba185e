// A release that finds an announcement of its operation still in the host's
// notify waits for it to end (R-NTF-3: nothing names an operation after its
// release returned), asleep and woken by the announcer (DriverBase::release,
// wait_announced): never a yield, which on cores that busy threads share may
// hand the core away until the next scheduler tick. Shown on a driver of the
// test's own whose host holds the notify of FINAL until the release sleeps.
#include <doctest/doctest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "kvblob/support/driver_base.hpp"
#include "plugins/probe_caps.hpp"

using kvblob::support::Op;
using kvblob::support::OpKind;

namespace {

// The host's side: its notify of FINAL says it is inside, then waits for
// the gate, then records whether the release had returned by then.
struct HeldNotify {
    std::mutex mu;
    std::condition_variable cv;
    bool inside = false, open = false;
    std::atomic<bool> released{false};
    bool released_before_notify_ended = false;
    int finals = 0;

    static void notify(void *context, kvblob_op_t *, kvblob_notify_event event)
    {
        auto &self = *static_cast<HeldNotify *>(context);
        if (event != KVBLOB_NOTIFY_FINAL) return;
        std::unique_lock lock(self.mu);
        ++self.finals;
        self.inside = true;
        self.cv.notify_all();
        self.cv.wait(lock, [&] { return self.open; });
        self.released_before_notify_ended = self.released.load();
    }
    void wait_inside()
    {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return inside; });
    }
    void open_gate()
    {
        std::lock_guard lock(mu);
        open = true;
        cv.notify_all();
    }
};

// Starts nothing: the test ends each operation from a thread of its own.
class EndedByTestDriver : public kvblob::support::DriverBase {
public:
    EndedByTestDriver(const kvblob_host_services_t &host, kvblob_caps_t &caps) : DriverBase(caps, &host)
    {
        kvblob_open_args_t args{};
        args.struct_size = sizeof args;
        args.abi_version = KVBLOB_ABI_1_1;
        args.host = &host;
        offer_notify(args, caps);
    }
    // Every row READY, access ended, then final (whose notify the host holds).
    void end(kvblob_op_t *handle)
    {
        Op &op = *started_.at(handle);
        for (size_t i = 0; i < op.rows.size(); ++i)
            if (begin_row(op, i)) set_row(op, i, KVBLOB_ROW_READY);
        end_access(op);
        finish(op);
    }
    using DriverBase::poll;
    using DriverBase::release;
    using DriverBase::releases_waiting;
    using DriverBase::submit;

protected:
    void start(Op &op) override
    {
        std::lock_guard lock(mu_);
        started_[&op] = &op;
    }

private:
    std::mutex mu_;
    std::unordered_map<const kvblob_op_t *, Op *> started_;
};

}  // namespace

TEST_CASE("a release waits, asleep, for its operation's announcement still in the host's notify")
{
    HeldNotify held;
    kvblob_host_services_t host{};
    host.struct_size = sizeof host;
    host.context = &held;
    host.notify = &HeldNotify::notify;
    kvblob_caps_t caps = probe_caps();
    EndedByTestDriver driver(host, caps);
    REQUIRE((caps.flags & KVBLOB_CAP_NOTIFY) != 0);

    const std::string key = "announced";
    kvblob_row_t row{sizeof(kvblob_row_t), 0, reinterpret_cast<const uint8_t *>(key.data()), key.size(), nullptr};
    kvblob_batch_t batch{sizeof(kvblob_batch_t), 0, &row, 1, nullptr};
    kvblob_op_t *op = nullptr;
    std::string why;
    REQUIRE_MESSAGE(driver.submit(OpKind::probe, &batch, &op, why) == KVBLOB_OK, why);

    std::thread announcer([&] { driver.end(op); });
    held.wait_inside();
    // Final and access ended, as a host sees them once woken: release may
    // come now, while the announcement is still in notify.
    uint32_t fin = 0;
    REQUIRE(driver.poll(op, &fin) == KVBLOB_OK);
    REQUIRE(fin == 1);

    kvblob_status released = KVBLOB_E_INVALID;
    std::thread releaser([&] {
        released = driver.release(op);
        held.released.store(true);
    });
    // The release's signal that it sleeps until the announcement ends.
    while (driver.releases_waiting() == 0) std::this_thread::yield();
    CHECK_FALSE(held.released.load());

    held.open_gate();  // the announcer returns from notify, and wakes the release
    releaser.join();
    announcer.join();
    CHECK(released == KVBLOB_OK);
    CHECK_FALSE(held.released_before_notify_ended);
    CHECK(held.finals == 1);
    CHECK(driver.releases_waiting() == 0);
}
