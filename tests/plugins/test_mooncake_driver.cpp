// The Mooncake driver's mapping of store answers, its open without the
// library or with another version of it, and, over the fake library
// (tests/fakes/mooncake), the failures the real store cannot be made to show
// on demand. (The battery runs over the fake library too:
// conformance_mooncake_fake; the real store's tests are
// test_mooncake_real.cpp.)
#include <doctest/doctest.h>

#include <string>

#include "kvblob/host/plugin.hpp"
#include "mooncake/answers.hpp"
#include "mooncake/own_leases.hpp"
#include "mooncake/writing_keys.hpp"
#include "plugins/driver_harness.hpp"
#include "support/kept_for_good.hpp"
#include "kvblob/tools/fill_pattern.hpp"

using namespace kvblob::mooncake;

TEST_CASE("mooncake answers: every store answer becomes the row result its rule asks for")
{
    // put: a key the put found existing is asked about with an empty get
    CHECK(existing_answer(INVALID_PARAMS).result == KVBLOB_ROW_READY);        // stored whole (R-ROW-7)
    CHECK(existing_answer(0).result == KVBLOB_ROW_READY);                     // an empty object, stored
    CHECK(existing_answer(REPLICA_IS_NOT_READY).result == KVBLOB_ROW_NOT_READY);  // another writer holds it (R-ROW-2)
    CHECK(existing_answer(OBJECT_NOT_FOUND).result == KVBLOB_ROW_NOT_READY);  // removed since: not stored, not MISS
    CHECK(existing_answer(RPC_FAIL).result == KVBLOB_ROW_FAULT);
    CHECK(put_answer(OBJECT_ALREADY_EXISTS, true).result == KVBLOB_ROW_NOT_READY);  // never READY unasked
    CHECK(put_answer(OK, true).result == KVBLOB_ROW_FAULT);  // 0 alone proves nothing
    CHECK(put_answer(REPLICA_IS_NOT_READY, true).result == KVBLOB_ROW_NOT_READY);
    CHECK(put_answer(NO_AVAILABLE_HANDLE, true).result == KVBLOB_ROW_DECLINED);
    CHECK(put_answer(SEGMENT_NOT_FOUND, true).result == KVBLOB_ROW_DECLINED);
    CHECK(put_answer(RPC_TIMEOUT, true).result == KVBLOB_ROW_FAULT);
    CHECK(put_answer(RPC_TIMEOUT, true).message == "RPC_TIMEOUT (-901)");
    // TRANSFER_FAIL: over when the call answered within the store's
    // completion timeout; possibly still under way otherwise (R-REG-2).
    CHECK_FALSE(put_answer(TRANSFER_FAIL, true).access_unprovable);
    CHECK(put_answer(TRANSFER_FAIL, false).access_unprovable);
    // get
    CHECK(get_answer(4096, 4096, true).result == KVBLOB_ROW_READY);
    CHECK(get_answer(100, 4096, true).result == KVBLOB_ROW_FAULT);  // R-ROW-5
    CHECK(get_answer(INVALID_PARAMS, 4096, true).result == KVBLOB_ROW_FAULT);
    CHECK(get_answer(OBJECT_NOT_FOUND, 4096, true).result == KVBLOB_ROW_MISS);  // R-ROW-4
    CHECK(get_answer(REPLICA_IS_NOT_READY, 4096, true).result == KVBLOB_ROW_NOT_READY);
    CHECK(get_answer(LEASE_EXPIRED, 4096, true).result == KVBLOB_ROW_FAULT);  // R-ROW-6
    CHECK(get_answer(REPLICA_IS_GONE, 4096, true).result == KVBLOB_ROW_FAULT);  // not MISS: R-ROW-4
    const Answer transfer = get_answer(TRANSFER_FAIL, 4096, false);
    CHECK((transfer.result == KVBLOB_ROW_FAULT && transfer.access_unprovable));  // R-REG-2
    CHECK_FALSE(get_answer(RPC_FAIL, 4096, true).access_unprovable);
    CHECK(get_answer(RPC_FAIL, 4096, true).message == "RPC_FAIL (-900)");
    CHECK(get_answer(-12345, 4096, true).message == "Mooncake error -12345 (not a code of v0.3.12.post1)");
    // probe: is_exist's 0 is absent or incomplete; get_size tells which
    CHECK(probe_answer(1, 0).result == KVBLOB_ROW_READY);
    CHECK(probe_answer(0, OBJECT_NOT_FOUND).result == KVBLOB_ROW_MISS);
    CHECK(probe_answer(0, REPLICA_IS_NOT_READY).result == KVBLOB_ROW_NOT_READY);
    CHECK(probe_answer(0, RPC_FAIL).result == KVBLOB_ROW_FAULT);  // never MISS on a failure (R-ROW-4)
    CHECK(probe_answer(RPC_FAIL, 0).result == KVBLOB_ROW_FAULT);
    // remove
    CHECK(remove_answer(OK).result == KVBLOB_ROW_READY);
    CHECK(remove_answer(OBJECT_NOT_FOUND).result == KVBLOB_ROW_MISS);
    CHECK(remove_answer(OBJECT_HAS_LEASE).result == KVBLOB_ROW_NOT_READY);
    CHECK(remove_answer(INTERNAL_ERROR).result == KVBLOB_ROW_FAULT);
    // a batch call that failed as a whole
    const Answer whole_put = whole_call_failure("mooncake_store_batch_put_from", -1, true);
    CHECK((whole_put.result == KVBLOB_ROW_FAULT && whole_put.access_unprovable));
    CHECK(whole_put.message.find("INTERNAL_ERROR (-1)") != std::string::npos);
    CHECK_FALSE(whole_call_failure("mooncake_store_batch_is_exist", -1, false).access_unprovable);
    CHECK(unwritten_slot("mooncake_store_batch_get_into", true).access_unprovable);
}

TEST_CASE("mooncake own leases: a remove waits only for a lease the driver's own call took, until it ends")
{
    using namespace std::chrono_literals;
    OwnLeases leases(10s, 2);
    CHECK_FALSE(leases.until("never-read").has_value());
    const auto before = OwnLeases::Clock::now();
    leases.took("a");
    const auto a = leases.until("a");
    REQUIRE(a.has_value());
    CHECK(*a >= before + 10s);  // the master granted it before the call returned
    CHECK(*a <= OwnLeases::Clock::now() + 10s + OwnLeases::tick);  // rounded up to a tick, no more
    leases.took("b");
    leases.took("c");  // over capacity: the oldest is forgotten, not waited for
    CHECK_FALSE(leases.until("a").has_value());
    CHECK(leases.until("c").has_value());
    // A lease that has ended is not waited for.
    OwnLeases instant(1ms);
    instant.took("x");
    const auto end = instant.until("x");
    if (end) CHECK(*end <= OwnLeases::Clock::now() + 1ms + OwnLeases::tick);
    // ttl 0: the master grants no lease worth waiting for.
    OwnLeases none(0ms);
    none.took("y");
    CHECK_FALSE(none.until("y").has_value());
}

TEST_CASE("mooncake own leases: a key read again within a tick is remembered once, and its lease still ends last")
{
    using namespace std::chrono_literals;
    OwnLeases leases(10s);
    const auto start = OwnLeases::Clock::now();
    for (int i = 0; i < 10000; ++i) {
        leases.took("hot");
        leases.took("other");
    }
    const auto elapsed = OwnLeases::Clock::now() - start;
    // At most one entry per key per tick the loop spanned (and the tick it
    // began in), where every read used to add one.
    const auto ticks = static_cast<size_t>(elapsed / OwnLeases::tick) + 2;
    CHECK(leases.remembered() <= 2 * ticks);
    CHECK(leases.remembered() < 20000);
    // The last read's lease, not the first's: a read a tick after the
    // loop's last moves the lease's end past the one the loop left. (The
    // clock is read before that read, so a thread held off the core
    // anywhere here only moves both ends later.)
    const auto left = leases.until("hot");
    REQUIRE(left.has_value());
    auto later = OwnLeases::Clock::now();
    while (later < *left - 10s + OwnLeases::tick) later = OwnLeases::Clock::now();
    leases.took("hot");
    const auto hot = leases.until("hot");
    REQUIRE(hot.has_value());
    CHECK(*hot >= later + 10s);
    CHECK(*hot > *left);
    // Over capacity, a refreshed key's older entries go first and it stays.
    OwnLeases small(10s, 2);
    small.took("a");
    small.took("b");
    small.took("a");
    CHECK(small.until("a").has_value());
}

TEST_CASE("mooncake writing keys: a key another put of the driver is writing is not claimed again until it ends")
{
    WritingKeys writing;
    const std::vector<std::string> first = {"k1", "k2"}, second = {"k2", "k3"};
    {
        WritingKeys::Claim a(writing, first);
        CHECK(a.claimed == std::vector<bool>{true, true});
        WritingKeys::Claim b(writing, second);
        CHECK(b.claimed == std::vector<bool>{false, true});  // k2 is a's
    }
    WritingKeys::Claim c(writing, second);  // both ended: free again
    CHECK(c.claimed == std::vector<bool>{true, true});
}

TEST_CASE("mooncake driver: without Mooncake's library, open fails naming the library it looked for")
{
    auto plugin = kvblob::Plugin::load("mooncake");  // the driver itself always loads
    std::string what;
    try {
        plugin.open({{"library", "libmooncake_store_not_here.so"}});
    } catch (const std::exception &e) {
        what = e.what();
    }
    CHECK(what.find("libmooncake_store_not_here.so") != std::string::npos);
    CHECK(what.find("option 'library'") != std::string::npos);
    CHECK(what.find("stage init") != std::string::npos);
}

TEST_CASE("mooncake driver: a master that does not answer fails open, naming the master")
{
    auto plugin = kvblob::Plugin::load("mooncake");
    std::string what;
    try {
        plugin.open({{"library", KVBLOB_FAKE_MOONCAKE}, {"master_server_address", "unreachable"}});
    } catch (const std::exception &e) {
        what = e.what();
    }
    CHECK(what.find("master unreachable") != std::string::npos);
    CHECK(what.find("RPC_FAIL (-900)") != std::string::npos);
}

namespace {

std::string open_error(kvblob::Options options)
{
    auto plugin = kvblob::Plugin::load("mooncake");
    try {
        plugin.open(std::move(options));
    } catch (const std::exception &e) {
        return e.what();
    }
    return {};
}

// A fake-library driver on a pool of its own.
kvblob::Options fake_options() { return {{"library", KVBLOB_FAKE_MOONCAKE}, {"master_server_address", unique_store("fake-mc")}}; }

// A buffer that lives for the process: an operation whose access is
// unprovable pins its region, and the host must keep that memory (R-REG-2).
Buffer &kept_buffer(DriverHarness &h, size_t size)
{
    return kept_for_good<Buffer>(h.buffer(size));
}

}  // namespace

TEST_CASE("mooncake driver: a library of another Mooncake version, of none said, or without the put that reports "
          "existing keys, is refused naming what it found")
{
    ::setenv("KVBLOB_FAKE_MOONCAKE_VERSION", "0.4.0", 1);
    const std::string other = open_error(fake_options());
    ::unsetenv("KVBLOB_FAKE_MOONCAKE_VERSION");
    CHECK(other.find("is Mooncake 0.4.0") != std::string::npos);
    CHECK(other.find("speaks the C API of Mooncake 0.3.12.post1") != std::string::npos);

    const std::string unsaid = open_error({{"library", "libc.so.6"}});
    CHECK(unsaid.find("does not say which Mooncake version") != std::string::npos);
    CHECK(unsaid.find("scripts/build-mooncake") != std::string::npos);

    const std::string old = open_error({{"library", KVBLOB_FAKE_MOONCAKE_OLD_RECIPE}});
    CHECK(old.find("no symbol kvblob_mooncake_batch_put_from_reporting_existing") != std::string::npos);
    CHECK(old.find("older scripts/build-mooncake; run that script again") != std::string::npos);
}

TEST_CASE("mooncake driver (fake library): a batch call that fails as a whole gives every row FAULT, never READY or MISS")
{
    DriverHarness h("mooncake", fake_options());
    constexpr uint64_t rows = 8, size = 4096;
    auto &src = kept_buffer(h, rows * size);
    fill_pattern(src.bytes.data(), src.bytes.size(), 7);
    Batch puts;
    for (uint64_t r = 0; r < rows; ++r) puts.row("whole/" + std::to_string(r), {make_span(src.handle(), r * size, size)});

    // The fake's put fails as a whole after moving the first row's bytes, as
    // an exception inside the real library's call would.
    REQUIRE(h.hook(h.hooks().stage_unprovable, "whole/0") == KVBLOB_OK);
    auto put = h.submit(kvblob::OpKind::put, puts);
    REQUIRE(put.wait(std::chrono::seconds(30)));
    for (uint64_t r = 0; r < rows; ++r) {
        CHECK(put.results()[r].result == KVBLOB_ROW_FAULT);
        CHECK(put.message(r).find("failed as a whole") != std::string::npos);
    }
    CHECK(put.access() == KVBLOB_ACCESS_UNPROVABLE);  // a transfer may have been under way
    CHECK(src.region.unregister() != KVBLOB_OK);      // so the region stays pinned (R-REG-2)

    // Rows 1..7 were never stored: a probe says MISS, and so does a get.
    Batch probes;
    for (uint64_t r = 1; r < rows; ++r) probes.row("whole/" + std::to_string(r), {});
    for (const auto &row : h.run(kvblob::OpKind::probe, probes)) CHECK(row.result == KVBLOB_ROW_MISS);

    // A whole failure of a get: FAULT (not MISS), access unprovable.
    auto &dst = kept_buffer(h, size);
    REQUIRE(h.hook(h.hooks().stage_unprovable, "whole/1") == KVBLOB_OK);
    Batch gets;
    gets.row("whole/1", {make_span(dst.handle(), 0, size)});
    auto get = h.submit(kvblob::OpKind::get, gets);
    REQUIRE(get.wait(std::chrono::seconds(30)));
    CHECK(get.results()[0].result == KVBLOB_ROW_FAULT);
    CHECK(get.access() == KVBLOB_ACCESS_UNPROVABLE);

    // A whole failure of a probe: FAULT, not MISS (R-ROW-4); it moves no
    // bytes, so its access ends.
    REQUIRE(h.hook(h.hooks().stage_unprovable, "whole/2") == KVBLOB_OK);
    Batch probe;
    probe.row("whole/2", {});
    auto p = h.submit(kvblob::OpKind::probe, probe);
    REQUIRE(p.wait(std::chrono::seconds(30)));
    CHECK(p.results()[0].result == KVBLOB_ROW_FAULT);
    CHECK(p.message(0).find("mooncake_store_batch_is_exist failed as a whole") != std::string::npos);
    CHECK(p.access() == KVBLOB_ACCESS_ENDED);
}

TEST_CASE("mooncake driver (fake library): a key another client is writing is NOT_READY to put and probe, never READY or MISS")
{
    DriverHarness h("mooncake", fake_options());
    auto src = h.buffer(4096, 3);
    REQUIRE(h.hook(h.hooks().stage_foreign_writer, "held") == KVBLOB_OK);
    // The library answers 0 to the put and 0 to is_exist: the driver asks
    // further before it answers.
    CHECK(h.one(kvblob::OpKind::put, "held", {make_span(src.handle(), 0, 4096)}) == KVBLOB_ROW_NOT_READY);
    CHECK(h.one(kvblob::OpKind::probe, "held") == KVBLOB_ROW_NOT_READY);
    CHECK(h.one(kvblob::OpKind::probe, "never-written") == KVBLOB_ROW_MISS);
}

TEST_CASE("mooncake driver (fake library): an overlapping registration is refused naming the store's rule")
{
    DriverHarness h("mooncake", fake_options());
    std::vector<uint8_t> bytes(8192);
    kvblob_region_desc_t first{sizeof first, KVBLOB_MEMORY_HOST, bytes.data(), 8192, 0, 0};
    kvblob_region_desc_t inner{sizeof inner, KVBLOB_MEMORY_HOST, bytes.data() + 4096, 4096, 0, 0};
    auto region = h.driver().register_region(first);
    std::string what;
    try {
        h.driver().register_region(inner);
    } catch (const std::exception &e) {
        what = e.what();
    }
    CHECK(what.find("refuses a region overlapping one registered already") != std::string::npos);
    CHECK(what.find("no overlapped memory regions") != std::string::npos);
}
