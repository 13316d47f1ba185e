// The tiered driver (plugins/tiered) when a tier fails: a remote tier (a
// real Redis, started by tests/redis/with_redis.sh) killed mid-run and
// started again on the same port, a full top tier, a bottom tier that
// DECLINES, a tier whose driver refuses an option, a tier whose get fails
// without a refusal. Each ends with the answer
// plugins/tiered/README.md documents, and nothing stored is lost. What a
// tier holds is read by opening that tier's store directly (the memory
// driver with the same store name, the Redis driver on the same server).
#include <doctest/doctest.h>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <tuple>

#include "plugins/driver_harness.hpp"
#include "support/kept_for_good.hpp"
#include "support/process.hpp"
#include "support/redis_server.hpp"
#include "support/temp_dir.hpp"

using kvblob::OpKind;
using namespace std::chrono_literals;
using namespace redis_test;

namespace {

// Until answers(port) is want, or 120 s as a hang guard (a loaded machine
// may take seconds to start or reap a server). Polls the server's state:
// nothing is ordered by the time waited.
bool until_server(int port, bool want)
{
    const auto give_up = std::chrono::steady_clock::now() + 120s;
    while (server_answers(port) != want)
        if (std::chrono::steady_clock::now() > give_up) return false;
        else std::this_thread::sleep_for(50ms);
    return true;
}

// rows keys "<tag>/<i>", each row size bytes of buffer at i * size.
Batch rows_of(const std::string &tag, uint64_t rows, uint64_t size, const Buffer &b)
{
    Batch batch;
    for (uint64_t r = 0; r < rows; ++r) batch.row(tag + "/" + std::to_string(r), {make_span(b.handle(), r * size, size)});
    return batch;
}
Batch keys_of(const std::string &tag, uint64_t rows)
{
    Batch batch;
    for (uint64_t r = 0; r < rows; ++r) batch.row(tag + "/" + std::to_string(r));
    return batch;
}
bool same_rows(const Buffer &a, const Buffer &b, uint64_t bytes)
{
    return std::equal(a.bytes.begin(), a.bytes.begin() + static_cast<long>(bytes), b.bytes.begin());
}

}  // namespace

TEST_CASE("tiered faults: the Redis tier killed mid-run, upper rows still READY, lower never, and a restarted server stored again")
{
    if (!redis_url() || std::string(redis_url()).find(',') != std::string::npos) {
        MESSAGE("skipped: needs one server in KVBLOB_REDIS_URL (run through tests/redis/with_redis.sh single)");
        return;
    }
    const std::string url = redis_url();
    const int port = port_of(url);
    const std::string store = unique_store("tiered-faults-redis");
    // A short command timeout: with the server gone a row's answer comes in
    // bounded time whatever the machine's load.
    DriverHarness tiered("tiered", {{"tier.0.driver", "memory"}, {"tier.0.store", store}, {"tier.1.driver", "redis"},
                                    {"tier.1.url", url}, {"tier.1.command_timeout_ms", "2000"}});
    DriverHarness top("memory", {{"store", store}});
    constexpr uint64_t rows = 16, size = 64 << 10;
    auto src = tiered.buffer(rows * size);
    fill_pattern(src.bytes.data(), src.bytes.size(), 51);

    // "held" rows are in both tiers (written through); "below" rows only in
    // Redis, put there by a driver of its own.
    {
        Batch held = rows_of("faults/held", rows, size, src);
        for (const auto &r : tiered.run(OpKind::put, held)) REQUIRE(r.result == KVBLOB_ROW_READY);
        DriverHarness bottom("redis", {{"url", url}});
        auto below_src = bottom.buffer(rows * size);
        fill_pattern(below_src.bytes.data(), below_src.bytes.size(), 52);
        Batch below = rows_of("faults/below", rows, size, below_src);
        for (const auto &r : bottom.run(OpKind::put, below)) REQUIRE(r.result == KVBLOB_ROW_READY);
    }
    Batch held_keys = keys_of("faults/held", rows), below_keys = keys_of("faults/below", rows);
    for (const auto &r : top.run(OpKind::probe, held_keys)) REQUIRE(r.result == KVBLOB_ROW_READY);
    for (const auto &r : top.run(OpKind::probe, below_keys)) REQUIRE(r.result == KVBLOB_ROW_MISS);

    // The server dies with a get in flight: stopped (SIGSTOP) before a get
    // of held and lower rows together is submitted, so the lower rows are
    // on their way to it whatever the machine's schedule, then killed
    // (SIGKILL: no goodbye on its connections).
    const std::string info = run_command("redis-cli -p " + std::to_string(port) + " info server").output;
    const auto pid_at = info.find("process_id:");
    REQUIRE(pid_at != std::string::npos);
    const auto pid = static_cast<pid_t>(std::stol(info.substr(pid_at + 11)));
    auto mixed_dst = tiered.buffer(2 * rows * size, 0xA5);
    Batch mixed;
    for (uint64_t r = 0; r < rows; ++r) {
        mixed.row("faults/held/" + std::to_string(r), {make_span(mixed_dst.handle(), 2 * r * size, size)});
        mixed.row("faults/below/" + std::to_string(r), {make_span(mixed_dst.handle(), (2 * r + 1) * size, size)});
    }
    REQUIRE(::kill(pid, SIGSTOP) == 0);
    auto in_flight = tiered.submit(OpKind::get, mixed);
    REQUIRE(::kill(pid, SIGKILL) == 0);
    REQUIRE(in_flight.wait(240s));
    const auto mixed_rows = in_flight.results();
    for (uint64_t r = 0; r < rows; ++r) {
        CHECK(mixed_rows[2 * r].result == KVBLOB_ROW_READY);      // from the top tier
        CHECK(std::equal(mixed_dst.bytes.begin() + static_cast<long>(2 * r * size),
                         mixed_dst.bytes.begin() + static_cast<long>((2 * r + 1) * size),
                         src.bytes.begin() + static_cast<long>(r * size)));
        CHECK(mixed_rows[2 * r + 1].result == KVBLOB_ROW_FAULT);  // only in the dead server: never READY
    }
    REQUIRE(until_server(port, false));

    // Rows the top tier holds: READY, with their bytes.
    auto dst = tiered.buffer(rows * size, 0xA5);
    Batch held_gets = rows_of("faults/held", rows, size, dst);
    for (const auto &r : tiered.run(OpKind::get, held_gets)) CHECK(r.result == KVBLOB_ROW_READY);
    CHECK(same_rows(src, dst, rows * size));
    for (const auto &r : tiered.run(OpKind::probe, held_keys)) CHECK(r.result == KVBLOB_ROW_READY);

    // Rows only below: never READY. The top tier's MISS does not answer for
    // them (it does not know they are absent); the last tier's answer does
    // (docs/contract.md, composed stores, "get"): FAULT, the Redis driver's
    // answer for a server it cannot reach (its command timeout included).
    auto lost = tiered.buffer(rows * size);
    Batch below_gets = rows_of("faults/below", rows, size, lost);
    for (const auto &r : tiered.run(OpKind::get, below_gets)) CHECK(r.result == KVBLOB_ROW_FAULT);
    for (const auto &r : tiered.run(OpKind::probe, below_keys)) CHECK(r.result != KVBLOB_ROW_READY);

    // A put while it is down: the last tier is written first and fails, so
    // the row fails and no tier above holds what the last did not store.
    Batch during = rows_of("faults/during", rows, size, src);
    for (const auto &r : tiered.run(OpKind::put, during)) CHECK(r.result == KVBLOB_ROW_FAULT);
    Batch during_keys = keys_of("faults/during", rows);
    for (const auto &r : top.run(OpKind::probe, during_keys)) CHECK(r.result == KVBLOB_ROW_MISS);

    // The server back on the same port (empty: --save ''): new puts reach
    // it again through the same tiered driver, which reconnects.
    ChildProcess restarted({"/usr/bin/env", "redis-server", "--port", std::to_string(port), "--bind", "127.0.0.1",
                            "--save", "", "--appendonly", "no", "--logfile", "/dev/null"});
    REQUIRE(until_server(port, true));
    Batch after = rows_of("faults/after", rows, size, src);
    for (const auto &r : tiered.run(OpKind::put, after)) CHECK(r.result == KVBLOB_ROW_READY);
    {
        DriverHarness bottom("redis", {{"url", url}});
        auto check = bottom.buffer(rows * size);
        Batch after_gets = rows_of("faults/after", rows, size, check);
        for (const auto &r : bottom.run(OpKind::get, after_gets)) CHECK(r.result == KVBLOB_ROW_READY);
        CHECK(same_rows(src, check, rows * size));
    }
    // The held rows are still READY from the top tier, and the server's
    // restart lost the rows only it held: a MISS now, which it can know.
    for (const auto &r : tiered.run(OpKind::get, held_gets)) CHECK(r.result == KVBLOB_ROW_READY);
    for (const auto &r : tiered.run(OpKind::get, below_gets)) CHECK(r.result == KVBLOB_ROW_MISS);

    Batch removes = keys_of("faults/after", rows);
    for (const auto &r : tiered.run(OpKind::remove, removes)) CHECK(r.result == KVBLOB_ROW_READY);
    // Absent below since the restart, present above: removed from every
    // tier whichever answer the last tier gives.
    for (const auto &r : tiered.run(OpKind::remove, held_keys))
        CHECK((r.result == KVBLOB_ROW_READY || r.result == KVBLOB_ROW_MISS));
    for (const auto &r : top.run(OpKind::probe, held_keys)) CHECK(r.result == KVBLOB_ROW_MISS);
    run_command("redis-cli -p " + std::to_string(port) + " shutdown nosave");
}

TEST_CASE("tiered faults: a full top tier leaves rows out of it, and every row is READY with its bytes")
{
    TempDir root("kvblob-tiered-faults");
    const std::string store = unique_store("tiered-faults-full");
    // 64 KiB of top tier for 256 KiB of rows.
    DriverHarness tiered("tiered", {{"tier.0.driver", "memory"}, {"tier.0.store", store}, {"tier.0.capacity", "64K"},
                                    {"tier.1.driver", "file"}, {"tier.1.root", root.path()}});
    DriverHarness top("memory", {{"store", store}});
    constexpr uint64_t rows = 16, size = 16 << 10;
    auto src = tiered.buffer(rows * size), dst = tiered.buffer(rows * size, 0xA5);
    fill_pattern(src.bytes.data(), src.bytes.size(), 53);
    for (uint64_t r = 0; r < rows; ++r) {  // one at a time: a hot set that outgrows the top
        Batch put;
        put.row("full/" + std::to_string(r), {make_span(src.handle(), r * size, size)});
        CHECK(tiered.run(OpKind::put, put).at(0).result == KVBLOB_ROW_READY);
    }
    Batch gets;
    for (uint64_t r = 0; r < rows; ++r) gets.row("full/" + std::to_string(r), {make_span(dst.handle(), r * size, size)});
    for (const auto &r : tiered.run(OpKind::get, gets)) CHECK(r.result == KVBLOB_ROW_READY);
    CHECK(same_rows(src, dst, rows * size));
    // The top tier holds only what fits; the file tier holds every row.
    Batch keys;
    for (uint64_t r = 0; r < rows; ++r) keys.row("full/" + std::to_string(r));
    uint64_t in_top = 0;
    for (const auto &r : top.run(OpKind::probe, keys)) in_top += r.result == KVBLOB_ROW_READY;
    CHECK(in_top < rows);
    DriverHarness bottom("file", {{"root", root.path()}});
    for (const auto &r : bottom.run(OpKind::probe, keys)) CHECK(r.result == KVBLOB_ROW_READY);
    for (const auto &r : tiered.run(OpKind::remove, keys)) CHECK(r.result == KVBLOB_ROW_READY);
}

TEST_CASE("tiered faults: a bottom tier that DECLINES is the row's answer, no tier above holds it, earlier rows stay")
{
    const std::string hot = unique_store("tiered-faults-hot"), cold = unique_store("tiered-faults-cold");
    DriverHarness tiered("tiered", {{"tier.0.driver", "memory"}, {"tier.0.store", hot}, {"tier.1.driver", "memory"},
                                    {"tier.1.store", cold}, {"tier.1.capacity", "64K"}});
    DriverHarness top("memory", {{"store", hot}});
    constexpr uint64_t small = 8 << 10, big = 128 << 10;
    auto src = tiered.buffer(big), dst = tiered.buffer(big, 0xA5);
    fill_pattern(src.bytes.data(), src.bytes.size(), 54);
    Batch fits = rows_of("declines/fits", 3, small, src);
    for (const auto &r : tiered.run(OpKind::put, fits)) REQUIRE(r.result == KVBLOB_ROW_READY);

    // More than the bottom tier can ever hold: DECLINED, as the last tier
    // answered, in a batch whose other row fits and is stored.
    Batch mixed;
    mixed.row("declines/too-big", {make_span(src.handle(), 0, big)});
    mixed.row("declines/fits-too", {make_span(src.handle(), 0, small)});
    const auto answers = tiered.run(OpKind::put, mixed);
    CHECK(answers.at(0).result == KVBLOB_ROW_DECLINED);
    CHECK(answers.at(1).result == KVBLOB_ROW_READY);
    CHECK(top.one(OpKind::probe, "declines/too-big") == KVBLOB_ROW_MISS);
    CHECK(tiered.one(OpKind::get, "declines/too-big", {make_span(dst.handle(), 0, big)}) == KVBLOB_ROW_MISS);
    CHECK(std::all_of(dst.bytes.begin(), dst.bytes.end(), [](uint8_t b) { return b == 0xA5; }));  // MISS wrote nothing

    // Nothing stored before is lost.
    Batch fits_back = rows_of("declines/fits", 3, small, dst);
    for (const auto &r : tiered.run(OpKind::get, fits_back)) CHECK(r.result == KVBLOB_ROW_READY);
    CHECK(same_rows(src, dst, 3 * small));
    CHECK(tiered.one(OpKind::get, "declines/fits-too", {make_span(dst.handle(), 0, small)}) == KVBLOB_ROW_READY);
}

TEST_CASE("tiered faults: a tier whose driver refuses an option refuses the open naming the tier, its driver and the rule")
{
    TempDir root("kvblob-tiered-faults");
    const std::string store = unique_store("tiered-faults-refused");
    const kvblob::Options good{{"tier.0.driver", "memory"}, {"tier.0.store", store}, {"tier.1.driver", "file"},
                               {"tier.1.root", root.path()}};
    DriverHarness tiered("tiered", good);
    auto src = tiered.buffer(4096), dst = tiered.buffer(4096);
    fill_pattern(src.bytes.data(), src.bytes.size(), 55);
    REQUIRE(tiered.one(OpKind::put, "refused/kept", {make_span(src.handle(), 0, 4096)}) == KVBLOB_ROW_READY);

    // Tier 1 (file) refuses an option it does not know; then tier 0
    // (memory) refuses a value it cannot read. Each is the tiered open's
    // R-OPN-1 at stage init, naming the tier's index and driver.
    const auto plugin = kvblob::Plugin::load("tiered");
    for (const auto &[key, value, tier] : std::vector<std::tuple<std::string, std::string, std::string>>{
             {"tier.1.no_such_option", "1", "tier 1 (file)"}, {"tier.0.capacity", "lots", "tier 0 (memory)"}}) {
        kvblob::Options refused = good;
        refused.emplace_back(key, value);
        CAPTURE(key);
        try {
            auto d = plugin.open(refused);
            FAIL("opened");
        } catch (const kvblob::LoadError &e) {
            const std::string said = e.what();
            CAPTURE(said);
            CHECK(e.stage() == kvblob::LoadStage::init);
            CHECK(e.rule() == "R-OPN-1");
            CHECK(said.find(tier + " refused: stage init, R-OPN-1") != std::string::npos);
            CHECK(said.find("'" + key.substr(7) + "'") != std::string::npos);
        }
    }
    // Nothing the stores held is lost by a refused open.
    CHECK(tiered.one(OpKind::get, "refused/kept", {make_span(dst.handle(), 0, 4096)}) == KVBLOB_ROW_READY);
    CHECK(same_rows(src, dst, 4096));
    CHECK(tiered.one(OpKind::remove, "refused/kept") == KVBLOB_ROW_READY);
}

// A fake, on purpose: no real store's get fails without a refusal, so the
// host's spy driver (tests/fixtures/spy_driver.cpp, admit=internal) stages
// one as the top tier, over a real memory tier that holds the key. The
// failure certifies nothing (R-ADM-1): the tier may still write the row's
// destination, so the row FAULTs rather than being read from below, and
// the stack keeps the caller's memory as the tier's host keeps the tier's.
TEST_CASE("tiered faults: a tier whose get fails without a refusal: FAULT, not asked below, access unprovable")
{
    const std::string cold = unique_store("tiered-faults-not-refused");
    DriverHarness tiered("tiered", {{"tier.0.driver", KVBLOB_FIXTURE_DIR "/libkvblob_spy.so"},
                                    {"tier.0.admit", "internal"},
                                    {"tier.1.driver", "memory"},
                                    {"tier.1.store", cold}});
    DriverHarness below("memory", {{"store", cold}});
    auto src = below.buffer(4096);
    fill_pattern(src.bytes.data(), src.bytes.size(), 56);
    REQUIRE(below.one(OpKind::put, "not-refused/held-below", {make_span(src.handle(), 0, 4096)}) == KVBLOB_ROW_READY);

    // Kept alive for good, on purpose: nothing proves the top tier let go of it.
    auto &memory = kept_for_good<std::vector<uint8_t>>(4096, uint8_t{0xA5});
    kvblob::Region region =
        tiered.driver().register_region({sizeof(kvblob_region_desc_t), KVBLOB_MEMORY_HOST, memory.data(), 4096, 0, 0});
    Batch get;
    get.row("not-refused/held-below", {make_span(region.handle(), 0, 4096)});
    auto op = tiered.driver().submit(OpKind::get, get.get());
    REQUIRE(op.wait(std::chrono::seconds(240)));
    const auto rows = op.results();
    CHECK(rows.at(0).result == KVBLOB_ROW_FAULT);
    const std::string said = op.message(0);
    CAPTURE(said);
    CHECK(said.find("failed the get, not a refusal") != std::string::npos);
    CHECK(op.access() == KVBLOB_ACCESS_UNPROVABLE);
    CHECK(region.unregister() == KVBLOB_E_UNPROVABLE);  // R-REG-2
    CHECK(tiered.driver().drain(std::chrono::seconds(60)) == KVBLOB_E_UNPROVABLE);
    // The bottom tier was not asked to write into the memory the top tier may still write.
    CHECK(std::all_of(memory.begin(), memory.end(), [](uint8_t b) { return b == 0xA5; }));
}
