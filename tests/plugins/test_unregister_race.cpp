// R-REG-1 under contention: a region is unregistered only once every
// operation naming it has ended its access, as access() answers it. An
// operation's end counts it out of each region it names and marks its
// access ended; an unregister that ran between the two succeeded while
// access() still answered OPEN. The memory driver in controlled mode holds
// a put of 64 regions short of its access end while another thread asks to
// unregister its first region until it may, then asks access() at once.
#include <doctest/doctest.h>

#include <barrier>
#include <string>
#include <thread>
#include <vector>

#include "plugins/driver_harness.hpp"

TEST_CASE("unregister: a region unregistered while its operation ends finds that operation's access ended (R-REG-1)")
{
    constexpr int rounds = 2000, regions_per_op = 64;
    const auto plugin = kvblob::Plugin::load("memory");
    auto driver = plugin.open({{"store", unique_store("unregister-race")}, {"mode", "controlled"}});
    REQUIRE(driver.scenarios() != nullptr);
    const auto &hooks = *driver.scenarios();
    const kvblob_plugin_t &table = driver.table();
    kvblob_driver_t *d = driver.handle();
    std::vector<std::vector<uint8_t>> memory(regions_per_op, std::vector<uint8_t>(64, 1));
    std::vector<kvblob_region_t *> regions(regions_per_op);
    kvblob_op_t *op = nullptr;
    std::barrier meet(2);
    int open_after_unregister = 0, other_answers = 0;
    std::thread unregistering([&] {
        for (int r = 0; r < rounds; ++r) {
            meet.arrive_and_wait();  // the put is admitted, its access not ended
            kvblob_status st;
            while ((st = table.unregister_region(d, regions[0])) == KVBLOB_E_BUSY) {
            }
            const kvblob_access access = table.access(d, op);
            if (st != KVBLOB_OK) ++other_answers;
            else if (access != KVBLOB_ACCESS_ENDED) ++open_after_unregister;
            meet.arrive_and_wait();
        }
    });
    for (int r = 0; r < rounds; ++r) {
        char err[256] = {0};
        for (int i = 0; i < regions_per_op; ++i) {
            kvblob_region_desc_t desc{sizeof desc, KVBLOB_MEMORY_HOST, memory[i].data(), 64, 0, 0};
            REQUIRE(table.register_region(d, &desc, &regions[i], err, sizeof err) == KVBLOB_OK);
        }
        Batch b;
        for (int i = 0; i < regions_per_op; ++i)
            b.row("unregister-race/" + std::to_string(r) + "/" + std::to_string(i), {make_span(regions[i], 0, 64)});
        REQUIRE(table.put(d, &b.get(), &op, err, sizeof err) == KVBLOB_OK);
        for (auto stage : {KVBLOB_STAGE_START, KVBLOB_STAGE_TRANSFER_END, KVBLOB_STAGE_COMMIT})
            REQUIRE(hooks.advance(d, op, stage) == KVBLOB_OK);
        meet.arrive_and_wait();
        REQUIRE(hooks.advance(d, op, KVBLOB_STAGE_ACCESS_END) == KVBLOB_OK);
        meet.arrive_and_wait();  // region 0 unregistered
        REQUIRE(table.access(d, op) == KVBLOB_ACCESS_ENDED);
        REQUIRE(table.release(d, op) == KVBLOB_OK);
        for (int i = 1; i < regions_per_op; ++i) REQUIRE(table.unregister_region(d, regions[i]) == KVBLOB_OK);
    }
    unregistering.join();
    CHECK(other_answers == 0);
    CHECK(open_after_unregister == 0);
}
