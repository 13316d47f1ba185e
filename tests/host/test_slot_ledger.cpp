// The engine helpers never hand a slot back while a driver may touch it:
// transfer_blocks returns each block's access, keeps an operation whose
// access is still open in the ledger, refuses to reuse its slots until it
// ends, and retires for good the slots of an operation whose access is
// unprovable. The spy stages both (access=manual: open after final until
// told; access=unprovable).
#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "fixtures/spy.hpp"
#include "kvblob/host/block_sequence.hpp"
#include "kvblob/host/plugin.hpp"
#include "support/kept_for_good.hpp"

using kvblob::OpKind;
using namespace std::chrono_literals;

namespace {

constexpr uint64_t block = 512;

struct Engine {
    explicit Engine(const std::string &access)
        : plugin(kvblob::Plugin::load(KVBLOB_FIXTURE_DIR "/libkvblob_spy.so")),
          driver(plugin.open({{"access", access}})),
          spy(static_cast<const kvblob_spy *>(driver.table().get_extension(driver.handle(), "kvblob.test.spy/1"))),
          memory(std::make_unique<std::vector<uint8_t>>(4 * block))
    {
        REQUIRE(spy);
        kvblob_region_desc_t desc{sizeof desc, KVBLOB_MEMORY_HOST, memory->data(), memory->size(), 0, 0};
        region = driver.register_region(desc);
    }
    std::vector<kvblob::BlockResult> get(const std::vector<uint64_t> &slots, std::chrono::milliseconds timeout)
    {
        std::vector<std::string> keys;
        for (auto s : slots) keys.push_back("block-" + std::to_string(s));
        return kvblob::transfer_blocks(driver, OpKind::get, keys, region.handle(), slots, block, timeout, ledger);
    }

    kvblob::Plugin plugin;
    kvblob::Driver driver;
    const kvblob_spy *spy;
    std::unique_ptr<std::vector<uint8_t>> memory;
    kvblob::Region region;
    kvblob::SlotLedger ledger;  // destroyed first: its operations go back to the driver object
};

}  // namespace

TEST_CASE("a slot whose access is still open after final is not reused until the access ends (R-REG-1)")
{
    Engine e("manual");
    const auto got = e.get({0, block}, 50ms);
    REQUIRE(got.size() == 2);
    for (const auto &row : got) {
        CHECK(row.status.result == KVBLOB_ROW_READY);  // final...
        CHECK(row.access == KVBLOB_ACCESS_OPEN);       // ...and the driver may still write the slot
    }
    CHECK(kvblob::resume_bound(got) == 0);  // bytes still being written are not delivered
    CHECK(e.ledger.held_operations() == 1);
    CHECK_FALSE(e.ledger.reusable(e.region.handle(), 0, block, 20ms));
    CHECK_FALSE(e.ledger.reusable(e.region.handle(), block / 2, block, 0ms));  // overlapping bytes too
    CHECK(e.ledger.reusable(e.region.handle(), 2 * block, block, 0ms));        // a slot it never named

    const uint64_t gets = e.spy->calls[s_get].load();
    try {
        e.get({block}, 20ms);
        FAIL("a slot the driver may still write was handed to another transfer");
    } catch (const kvblob::CallError &err) {
        CHECK(err.rule() == "R-REG-1");
        CHECK(std::string(err.what()).find("the slot at offset 512 may still be touched") != std::string::npos);
    }
    CHECK(e.spy->calls[s_get].load() == gets);  // refused before dispatch

    e.spy->end_access_all(e.driver.handle());
    CHECK(e.ledger.reusable(e.region.handle(), 0, block, 1s));
    CHECK(e.ledger.held_operations() == 0);
    CHECK(e.ledger.reusable(e.region.handle(), block, block, 0ms));
    CHECK_FALSE(e.ledger.retired(e.region.handle(), 0, 2 * block));
    e.get({0, block}, 50ms);  // the slots are the engine's again
    e.spy->end_access_all(e.driver.handle());
}

TEST_CASE("a slot whose access is unprovable is retired for good (R-REG-2)")
{
    Engine e("unprovable");
    const auto got = e.get({block}, 50ms);
    CHECK(got.at(0).access == KVBLOB_ACCESS_UNPROVABLE);
    CHECK(kvblob::resume_bound(got) == 0);
    CHECK(e.ledger.retired(e.region.handle(), block, block));
    CHECK(e.ledger.retired_slots() == 1);
    CHECK(e.ledger.held_operations() == 0);
    CHECK_FALSE(e.ledger.reusable(e.region.handle(), block, block, 1s));
    try {
        e.get({block}, 20ms);
        FAIL("a retired slot was reused");
    } catch (const kvblob::CallError &err) {
        CHECK(err.rule() == "R-REG-2");
        CHECK(std::string(err.what()).find("retired") != std::string::npos);
    }
    // Other slots of the region serve on.
    CHECK(e.ledger.reusable(e.region.handle(), 0, block, 0ms));
    CHECK(e.get({0}, 50ms).at(0).status.result == KVBLOB_ROW_READY);
    // The region stays registered for good: its memory must stay alive, on purpose.
    kvblob::keep_alive_for_good(e.memory.release());
}

TEST_CASE("a slot whose access ended is the engine's at once")
{
    Engine e("ended");
    const auto got = e.get({0, block, 2 * block}, 1s);
    for (const auto &row : got) CHECK(row.access == KVBLOB_ACCESS_ENDED);
    CHECK(kvblob::resume_bound(got) == 3);
    CHECK(e.ledger.held_operations() == 0);
    CHECK(e.ledger.reusable(e.region.handle(), 0, 3 * block, 0ms));
}
