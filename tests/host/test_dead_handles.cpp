// After Operation::release() the handle is dead (R-OPS-1): every member that
// would reach the driver refuses with a CallError saying why, and the driver
// is never called with it. The vendor template (examples/minimal_driver)
// dereferences the handle it is given, so a dead handle reaching it would
// crash this test; the spy counts its calls, so a refusal that still
// dispatched would show.
#include <doctest/doctest.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "fixtures/spy.hpp"
#include "host/spied_driver.hpp"
#include "kvblob/host/batch.hpp"
#include "kvblob/host/plugin.hpp"

// batch.hpp's helpers, in namespace kvblob like all of the public API.
using kvblob::Batch;
using kvblob::make_span;

using kvblob::OpKind;
using namespace std::chrono_literals;

namespace {

// Requires call to throw a CallError under R-OPS-1 whose text holds why.
void refused(const char *member, const std::function<void()> &call, const std::string &why)
{
    CAPTURE(member);
    try {
        call();
        FAIL("accepted: " << member);
    } catch (const kvblob::CallError &e) {
        CHECK(e.rule() == "R-OPS-1");
        CHECK(e.status() == KVBLOB_E_INVALID);
        CHECK_MESSAGE(std::string(e.what()).find(why) != std::string::npos, e.what());
        CHECK_MESSAGE(std::string(e.what()).find(member) != std::string::npos, e.what());
    }
}

// Every member of op that could reach a driver, each refused.
void every_member_refused(kvblob::Operation &op, const std::string &why)
{
    refused("message", [&] { op.message(0); }, why);
    refused("is_final", [&] { op.is_final(); }, why);
    refused("access", [&] { op.access(); }, why);
    refused("results", [&] { op.results(); }, why);
    refused("results", [&] {
        std::vector<kvblob::RowStatus> out;
        op.results(out);
    }, why);
    refused("cancel", [&] { op.cancel(); }, why);
    refused("wait", [&] { op.wait(10ms); }, why);
    refused("release", [&] { op.release(); }, why);
}

kvblob::Operation put_one(kvblob::Driver &driver, kvblob::Region &region)
{
    Batch b;
    b.row("k", {make_span(region.handle(), 0, 64)});
    return driver.submit(OpKind::put, b.get());
}

// The vendor template with one region, and one put of it that is final.
struct TemplatePut {
    TemplatePut()
    {
        kvblob_region_desc_t desc{sizeof desc, KVBLOB_MEMORY_HOST, memory.data(), memory.size(), 0, 0};
        region = driver.register_region(desc);
        op = put_one(driver, region);
        REQUIRE(op.wait(10s));
    }
    kvblob::Plugin plugin = kvblob::Plugin::load("minimal");
    kvblob::Driver driver = plugin.open();
    std::vector<uint8_t> memory = std::vector<uint8_t>(4096, 1);
    kvblob::Region region;
    kvblob::Operation op;
};

}  // namespace

TEST_CASE("after release, every member of an operation refuses: the vendor template never sees the dead handle")
{
    TemplatePut t;
    auto &op = t.op;
    REQUIRE(op.release() == KVBLOB_OK);
    CHECK(op.handle() == nullptr);
    every_member_refused(op, "already released");
}

TEST_CASE("after release, the spy is never called again, and a moved-from operation says it was moved")
{
    auto plugin = kvblob::Plugin::load(KVBLOB_FIXTURE_DIR "/libkvblob_spy.so");
    auto driver = plugin.open();
    const auto *spy = static_cast<const kvblob_spy *>(driver.table().get_extension(driver.handle(), "kvblob.test.spy/1"));
    REQUIRE(spy);
    std::vector<uint8_t> memory(4096);
    kvblob_region_desc_t desc{sizeof desc, KVBLOB_MEMORY_HOST, memory.data(), memory.size(), 0, 0};
    auto region = driver.register_region(desc);

    auto op = put_one(driver, region);
    REQUIRE(op.release() == KVBLOB_OK);
    const uint64_t results = spy->calls[s_results].load(), releases = spy->calls[s_release].load();
    every_member_refused(op, "already released");
    CHECK(spy->calls[s_results].load() == results);
    CHECK(spy->calls[s_release].load() == releases);

    auto live = put_one(driver, region);
    kvblob::Operation taken = std::move(live);
    every_member_refused(live, "moved from");
    kvblob::Operation empty;
    every_member_refused(empty, "holds no operation");
    // The operation it moved to is whole.
    CHECK(taken.results().at(0).result == KVBLOB_ROW_READY);
    CHECK(taken.release() == KVBLOB_OK);
    // Released into a moved-to object: still reported as released.
    kvblob::Operation again = std::move(taken);
    every_member_refused(again, "already released");
}

TEST_CASE("a row outside the operation is refused before the driver is asked for its message")
{
    TemplatePut t;
    auto &op = t.op;
    CHECK_NOTHROW(op.message(0));
    try {
        op.message(1);
        FAIL("a message for row 1 of a one-row operation");
    } catch (const kvblob::CallError &e) {
        CHECK(std::string(e.what()).find("outside the operation's 1 row(s)") != std::string::npos);
    }
    CHECK(op.release() == KVBLOB_OK);
}

TEST_CASE("release answers BUSY while another thread's call on the operation is still in the driver, which never sees the handle released under it")
{
    // Two threads sharing an operation (two Python threads, say): one
    // cancels it while the other releases it. Released under the cancel, the
    // handle would reach the driver dead, or as a new operation the driver
    // made of the same memory.
    SpiedDriver s(kvblob::Options{{"cancel", "gate"}});
    const auto &spy = s.spy();
    std::vector<uint8_t> memory(4096);
    auto region = s.region(memory);

    auto op = s.put(region);  // final, access ended: releasable
    const uint64_t cancels = spy.calls[s_cancel].load(), releases = spy.calls[s_release].load();
    std::thread canceller([&] { CHECK(op.cancel() == KVBLOB_OK); });
    while (spy.calls[s_cancel].load() == cancels) std::this_thread::yield();  // the cancel is in the driver
    CHECK(op.release() == KVBLOB_E_BUSY);
    CHECK(spy.calls[s_release].load() == releases);  // the driver was not asked
    spy.open_cancel_gate(s.driver.handle());
    canceller.join();
    CHECK(op.release() == KVBLOB_OK);
    CHECK(spy.calls[s_release].load() == releases + 1);
}
