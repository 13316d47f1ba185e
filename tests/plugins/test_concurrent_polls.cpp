// Threads that poll one operation at once (R-CON-1): the host asks the
// driver's poll without its lock, so a poll that answered "not final" just
// before the operation became final may be judged after another thread's
// poll saw it final. That is no step back from final (R-ROW-1): the host
// must not accuse a correct driver of one. The memory driver in controlled
// mode holds each put short of final while two threads poll it, then lets
// it end.
#include <doctest/doctest.h>

#include <atomic>
#include <barrier>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "plugins/driver_harness.hpp"

using kvblob::OpKind;

TEST_CASE("concurrent polls: a poll that answered before another saw final is not a step back (R-ROW-1)")
{
    constexpr int rounds = 2000, pollers = 2;
    std::atomic<int> accusations{0};
    std::mutex mu;
    std::string first_accusation;
    const auto plugin = kvblob::Plugin::load("memory");
    auto driver = plugin.open({{"store", unique_store("concurrent-polls")}, {"mode", "controlled"}},
                              [&](kvblob_log_level level, const std::string &message) {
                                  if (level != KVBLOB_LOG_MISBEHAVING) return;
                                  ++accusations;
                                  std::lock_guard lock(mu);
                                  if (first_accusation.empty()) first_accusation = message;
                              });
    REQUIRE(driver.scenarios() != nullptr);
    const auto &hooks = *driver.scenarios();
    std::vector<uint8_t> memory(64, 1);
    auto region = driver.register_region({sizeof(kvblob_region_desc_t), KVBLOB_MEMORY_HOST, memory.data(),
                                          memory.size(), 0, 0});
    std::barrier meet(pollers + 1);
    kvblob::Operation *current = nullptr;
    std::vector<std::thread> threads;
    for (int t = 0; t < pollers; ++t)
        threads.emplace_back([&] {
            for (int r = 0; r < rounds; ++r) {
                meet.arrive_and_wait();  // the round's put is submitted
                while (!current->is_final()) {
                }
                meet.arrive_and_wait();  // each poller saw it final
            }
        });
    for (int r = 0; r < rounds; ++r) {
        Batch b;
        b.row("concurrent-polls/" + std::to_string(r), {make_span(region.handle(), 0, 64)});
        kvblob::Operation op = driver.submit(OpKind::put, b.get());
        REQUIRE(hooks.advance(driver.handle(), op.handle(), KVBLOB_STAGE_START) == KVBLOB_OK);
        REQUIRE(hooks.advance(driver.handle(), op.handle(), KVBLOB_STAGE_TRANSFER_END) == KVBLOB_OK);
        current = &op;
        meet.arrive_and_wait();
        // Final while the pollers poll: the last stages, as soon as they run.
        REQUIRE(hooks.advance(driver.handle(), op.handle(), KVBLOB_STAGE_COMMIT) == KVBLOB_OK);
        REQUIRE(hooks.advance(driver.handle(), op.handle(), KVBLOB_STAGE_ACCESS_END) == KVBLOB_OK);
        meet.arrive_and_wait();
        REQUIRE(op.release() == KVBLOB_OK);
    }
    for (auto &t : threads) t.join();
    CHECK(driver.metrics().contract_breaks.empty());
    INFO("first accusation: " << first_accusation);
    CHECK(accusations.load() == 0);
}
