// Driver::shutdown(timeout) bounds what close waits for (issue 30): the
// driver's drain gets the caller's timeout, and when an operation's access
// outlasts it, shutdown answers at once and whatever the driver may still
// touch stays alive. Letting go of the Driver afterwards must not wait a
// second time (it once drained again for 10 s, so close(0.5) came back only
// when access ended). The memory driver holds each operation's access open
// for access_delay_ms; the observer sees the driver announce its end.
#include <doctest/doctest.h>

#include <atomic>
#include <vector>

#include "kvblob/host/batch.hpp"
#include "kvblob/host/plugin.hpp"

using kvblob::Batch;
using kvblob::make_span;
using kvblob::OpKind;
using namespace std::chrono_literals;

namespace {

// The driver outlives the test (it cannot be closed while access is open):
// what its observer touches must too.
std::atomic<int> access_announced{0};
std::vector<uint8_t> &kept_buffer()
{
    static auto *b = new std::vector<uint8_t>(4096);
    return *b;
}

}  // namespace

TEST_CASE("shutdown past its timeout answers at once, and the Driver's end does not wait again")
{
    auto plugin = kvblob::Plugin::load(KVBLOB_PLUGIN_DIR "/libkvblob_memory.so");
    // 8 s: far past the 100 ms asked, and short of the 10 s a second drain
    // used to wait, so a second wait would see the access end.
    auto driver = plugin.open({{"mode", "blocking"}, {"store", "close-timeout"}, {"access_delay_ms", "8000"}}, {},
                              [](kvblob_op_t *, kvblob_notify_event event) {
                                  if (event & KVBLOB_NOTIFY_ACCESS) access_announced.fetch_add(1);
                              });
    REQUIRE(driver.has(KVBLOB_CAP_NOTIFY));
    kvblob_region_desc_t desc{sizeof desc, KVBLOB_MEMORY_HOST, kept_buffer().data(), kept_buffer().size(), 0, 0};
    auto region = driver.register_region(desc);
    Batch b;
    b.row("k", {make_span(region.handle(), 0, 64)});
    auto op = driver.submit(OpKind::put, b.get());
    // Blocking mode: final inside the call, its access open for 8 s more.
    REQUIRE(op.is_final());
    REQUIRE(op.access() == KVBLOB_ACCESS_OPEN);
    const int announced_before = access_announced.load();
    // The caller lets go of everything, as an engine's close does (the
    // operation is cancelled and parked, the region pinned), then shuts down.
    op = kvblob::Operation();
    region = kvblob::Region();
    CHECK(driver.shutdown(100ms) == KVBLOB_E_TIMEOUT);
    { auto gone = std::move(driver); }  // the last holder lets go
    CHECK(access_announced.load() == announced_before);  // nothing waited for the access to end
}
