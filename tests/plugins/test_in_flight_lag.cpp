// max_ops_in_flight counts what R-ADM-10 counts: operations admitted and not
// yet both final and ended. plugins/support counts one out only after the
// announcement of its end returns (a drain that sees none in flight may
// close the driver), so for a moment an operation the caller has seen end
// is still counted; an admission at the limit then looks at the live
// operations themselves. The host's observer holds that moment open here:
// it sees each announcement first, from inside the driver's notify.
#include <doctest/doctest.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <vector>

#include "plugins/driver_harness.hpp"

using kvblob::OpKind;
using namespace std::chrono_literals;

TEST_CASE("in flight: an operation seen final and ended no longer counts, though its announcement is under way")
{
    std::mutex mu;
    std::condition_variable cv;
    bool held = false, go = false;
    const auto plugin = kvblob::Plugin::load("memory");
    // Controlled mode: each operation moves only when the test advances it.
    auto driver = plugin.open(
        {{"store", unique_store("in-flight-lag")}, {"mode", "controlled"}, {"max_ops_in_flight", "2"}}, {},
        [&](kvblob_op_t *, kvblob_notify_event event) {
            // The first put's access end, its last bit: the thread that
            // announces it waits here until the test lets it go.
            std::unique_lock lock(mu);
            if (event != KVBLOB_NOTIFY_ACCESS || held) return;
            held = true;
            cv.notify_all();
            cv.wait(lock, [&] { return go; });
        });
    REQUIRE(driver.scenarios() != nullptr);
    const auto &hooks = *driver.scenarios();
    const auto advance = [&](kvblob::Operation &op, std::initializer_list<kvblob_stage> stages) {
        for (auto stage : stages) REQUIRE(hooks.advance(driver.handle(), op.handle(), stage) == KVBLOB_OK);
    };
    std::vector<uint8_t> memory(3 * 64, 1);
    auto region = driver.register_region({sizeof(kvblob_region_desc_t), KVBLOB_MEMORY_HOST, memory.data(),
                                          memory.size(), 0, 0});
    const auto put = [&](int i) {
        Batch b;
        b.row("in-flight/" + std::to_string(i), {make_span(region.handle(), 64 * i, 64)});
        return driver.submit(OpKind::put, b.get());
    };
    auto first = put(0);
    advance(first, {KVBLOB_STAGE_START, KVBLOB_STAGE_TRANSFER_END, KVBLOB_STAGE_COMMIT});
    auto ending = std::async(std::launch::async, [&] {
        return hooks.advance(driver.handle(), first.handle(), KVBLOB_STAGE_ACCESS_END);
    });
    {
        std::unique_lock lock(mu);
        REQUIRE(cv.wait_for(lock, 120s, [&] { return held; }));  // a hang guard: the announcer's signal orders this
    }
    // Seen final with access ended, as any caller sees it, while its
    // announcement is still under way.
    CHECK(first.is_final());
    CHECK(first.access() == KVBLOB_ACCESS_ENDED);
    // So two more are within the limit of 2 (R-ADM-10); neither moves.
    std::vector<kvblob::Operation> more;
    for (int i = 1; i <= 2; ++i) CHECK_NOTHROW(more.push_back(put(i)));
    {
        std::lock_guard lock(mu);
        go = true;
    }
    cv.notify_all();
    CHECK(ending.get() == KVBLOB_OK);
    CHECK(first.release() == KVBLOB_OK);
    for (auto &op : more) {
        advance(op, {KVBLOB_STAGE_START, KVBLOB_STAGE_TRANSFER_END, KVBLOB_STAGE_COMMIT, KVBLOB_STAGE_ACCESS_END});
        CHECK(op.wait(120s));
        CHECK(op.release() == KVBLOB_OK);
    }
}
