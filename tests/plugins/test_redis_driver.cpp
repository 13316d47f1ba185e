// The Redis driver against real servers started by tests/redis/with_redis.sh
// (KVBLOB_REDIS_URL names them). Without it, these tests say why and pass
// nothing off as checked.
#include <doctest/doctest.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "plugins/driver_harness.hpp"
#include "support/process.hpp"
#include "support/redis_server.hpp"
#include "kvblob/tools/fill_pattern.hpp"

using kvblob::OpKind;
using namespace std::chrono_literals;
using namespace redis_test;

// Gets of 64 KiB or more read their value straight into the row's memory
// (plugins/redis/timed_io.hpp, receive_bulk_into); any reply that is not
// the value of the row's size goes back to hiredis' reader whole. One
// pipeline mixes them, so a reply taken wrongly shifts every row after it.
// (Before the kill test below, which leaves its server down.)
TEST_CASE("redis driver: large gets read into place, and every other reply in their pipeline is still read right")
{
    if (!redis_url() || std::string(redis_url()).find(',') != std::string::npos) {
        MESSAGE("skipped: needs one server in KVBLOB_REDIS_URL (run through tests/redis/with_redis.sh single)");
        return;
    }
    DriverHarness h("redis", {{"url", redis_url()}});
    constexpr uint64_t big = 256 << 10, edge = 64 << 10, small = 4 << 10;
    auto src = h.buffer(4 * big);
    fill_pattern(src.bytes.data(), src.bytes.size(), 7);
    const std::string run = "direct/" + std::to_string(::getpid()) + "/";
    Batch puts;
    puts.row(run + "big", {make_span(src.handle(), 0, big)});
    puts.row(run + "edge", {make_span(src.handle(), big, edge)});
    puts.row(run + "small", {make_span(src.handle(), 2 * big, small)});
    puts.row(run + "longer", {make_span(src.handle(), 0, 2 * big)});
    puts.row(run + "shorter", {make_span(src.handle(), 0, big / 2)});
    puts.row(run + "corrupt", {make_span(src.handle(), big, big)});
    puts.row(run + "split", {make_span(src.handle(), 3 * big, big)});
    for (const auto &r : h.run(OpKind::put, puts)) REQUIRE(r.result == KVBLOB_ROW_READY);
    REQUIRE(h.hook(h.hooks().stage_corrupt, run + "corrupt") == KVBLOB_OK);

    constexpr uint8_t untouched = 0xA5;
    auto dst = h.buffer(9 * big, untouched);
    Batch gets;
    gets.row(run + "absent", {make_span(dst.handle(), 0, big)});           // MISS first: a short reply
    gets.row(run + "big", {make_span(dst.handle(), big, big)});            // READY, read into place
    gets.row(run + "longer", {make_span(dst.handle(), 2 * big, big)});     // stored longer: FAULT, untouched
    gets.row(run + "edge", {make_span(dst.handle(), 3 * big, edge)});      // READY at the threshold
    gets.row(run + "small", {make_span(dst.handle(), 4 * big, small)});    // READY through the reader
    gets.row(run + "shorter", {make_span(dst.handle(), 5 * big, big)});    // stored shorter: FAULT
    gets.row(run + "corrupt", {make_span(dst.handle(), 6 * big, big)});    // corrupted: FAULT, never READY
    gets.row(run + "split", {make_span(dst.handle(), 7 * big, big / 2),    // two spans: READY
                             make_span(dst.handle(), 7 * big + big / 2, big / 2)});
    gets.row(run + "absent-too", {make_span(dst.handle(), 8 * big, big)});  // MISS last
    const auto got = h.run(OpKind::get, gets);
    REQUIRE(got.size() == 9);
    const auto all_untouched = [&](uint64_t at, uint64_t n) {
        return std::all_of(dst.bytes.begin() + at, dst.bytes.begin() + at + n, [](uint8_t b) { return b == untouched; });
    };
    const auto same = [&](uint64_t at, uint64_t from, uint64_t n) {
        return std::equal(dst.bytes.begin() + at, dst.bytes.begin() + at + n, src.bytes.begin() + from);
    };
    CHECK(got[0].result == KVBLOB_ROW_MISS);
    CHECK(all_untouched(0, big));
    CHECK(got[1].result == KVBLOB_ROW_READY);
    CHECK(same(big, 0, big));
    CHECK(got[2].result == KVBLOB_ROW_FAULT);
    CHECK(all_untouched(2 * big, big));
    CHECK(got[3].result == KVBLOB_ROW_READY);
    CHECK(same(3 * big, big, edge));
    CHECK(got[4].result == KVBLOB_ROW_READY);
    CHECK(same(4 * big, 2 * big, small));
    CHECK(got[5].result == KVBLOB_ROW_FAULT);
    CHECK(got[6].result == KVBLOB_ROW_FAULT);
    CHECK(got[7].result == KVBLOB_ROW_READY);
    CHECK(same(7 * big, 3 * big, big));
    CHECK(got[8].result == KVBLOB_ROW_MISS);
    CHECK(all_untouched(8 * big, big));

    Batch removes;
    for (const char *k : {"big", "edge", "small", "longer", "shorter", "corrupt", "split"}) removes.row(run + k);
    for (const auto &r : h.run(OpKind::remove, removes)) CHECK(r.result == KVBLOB_ROW_READY);
}

// Gets under 64 KiB take their value where it lies in hiredis' reader
// buffer (plugins/redis/timed_io.hpp, receive_in_place); a value not all
// read yet, nil and every other reply go through hiredis. Hundreds of rows
// of uneven sizes, over 1 MiB of replies in one pipeline, so that values
// straddle the reads; a value taken wrongly shifts every row after it.
TEST_CASE("redis driver: small gets are checked where they lie in the reader's buffer, across reads, between other replies")
{
    if (!redis_url() || std::string(redis_url()).find(',') != std::string::npos) {
        MESSAGE("skipped: needs one server in KVBLOB_REDIS_URL (run through tests/redis/with_redis.sh single)");
        return;
    }
    DriverHarness h("redis", {{"url", redis_url()}});
    constexpr size_t rows = 400;
    constexpr uint64_t slot = 16 << 10;
    auto src = h.buffer(rows * slot);
    fill_pattern(src.bytes.data(), src.bytes.size(), 9);
    const auto size_of = [](size_t i) { return uint64_t{1} + (i * 7919) % (slot - 1); };  // 1 byte to 16 KiB - 1
    const std::string run = "inplace/" + std::to_string(::getpid()) + "/";
    const auto key = [&](size_t i) { return run + std::to_string(i); };
    // Every seventh row is never stored (MISS: nil), every eleventh is
    // stored one byte longer than it is asked for (FAULT, R-ROW-5), and row
    // 200 is corrupted at rest (FAULT, R-ROW-6).
    Batch puts;
    std::vector<size_t> stored;
    for (size_t i = 0; i < rows; ++i) {
        if (i % 7 == 3) continue;
        puts.row(key(i), {make_span(src.handle(), i * slot, size_of(i) + (i % 11 == 5 ? 1 : 0))});
        stored.push_back(i);
    }
    for (const auto &r : h.run(OpKind::put, puts)) REQUIRE(r.result == KVBLOB_ROW_READY);
    REQUIRE(h.hook(h.hooks().stage_corrupt, key(200)) == KVBLOB_OK);

    constexpr uint8_t untouched = 0xA5;
    auto dst = h.buffer(rows * slot, untouched);
    Batch gets;
    for (size_t i = 0; i < rows; ++i) {
        const uint64_t n = size_of(i);
        if (i % 5 == 0 && n > 1) {  // two spans
            gets.row(key(i), {make_span(dst.handle(), i * slot, n / 2),
                              make_span(dst.handle(), i * slot + n / 2, n - n / 2)});
        } else {
            gets.row(key(i), {make_span(dst.handle(), i * slot, n)});
        }
    }
    const auto got = h.run(OpKind::get, gets);
    REQUIRE(got.size() == rows);
    size_t ready = 0;
    for (size_t i = 0; i < rows; ++i) {
        CAPTURE(i);
        const uint64_t n = size_of(i);
        const auto at = dst.bytes.begin() + static_cast<long>(i * slot);
        const bool untouched_row = std::all_of(at, at + static_cast<long>(n), [](uint8_t b) { return b == untouched; });
        if (i % 7 == 3) {
            CHECK(got[i].result == KVBLOB_ROW_MISS);
            CHECK(untouched_row);
        } else if (i % 11 == 5) {
            CHECK(got[i].result == KVBLOB_ROW_FAULT);
            CHECK(untouched_row);
        } else if (i == 200) {
            CHECK(got[i].result == KVBLOB_ROW_FAULT);
        } else {
            CHECK(got[i].result == KVBLOB_ROW_READY);
            CHECK(std::equal(at, at + static_cast<long>(n), src.bytes.begin() + static_cast<long>(i * slot)));
            ready += got[i].result == KVBLOB_ROW_READY;
        }
    }
    CHECK(ready > 250);

    Batch removes;
    for (size_t i : stored) removes.row(key(i));
    for (const auto &r : h.run(OpKind::remove, removes)) CHECK(r.result == KVBLOB_ROW_READY);
}

TEST_CASE("redis driver: a server killed mid-batch gives FAULT rows and never a lie, and a restarted one serves again")
{
    if (!redis_url() || std::string(redis_url()).find(',') != std::string::npos) {
        MESSAGE("skipped: needs one server in KVBLOB_REDIS_URL (run through tests/redis/with_redis.sh single)");
        return;
    }
    const std::string url = redis_url();
    const int port = port_of(url);
    DriverHarness h("redis", {{"url", url}, {"command_timeout_ms", "2000"}});
    constexpr uint64_t rows = 256, size = 256 << 10;
    auto src = h.buffer(rows * size);
    auto dst = h.buffer(rows * size);
    fill_pattern(src.bytes.data(), src.bytes.size(), 42);
    Batch puts;
    for (uint64_t r = 0; r < rows; ++r) puts.row("fault/" + std::to_string(r), {make_span(src.handle(), r * size, size)});

    // The server dies while the 64 MiB batch is on its way. It is stopped
    // before the batch is submitted, so the batch cannot finish first
    // however the machine schedules this thread, and killed once submitted:
    // the driver sees its connection die with the batch part written.
    const std::string info = run_command("redis-cli -p " + std::to_string(port) + " info server").output;
    const auto pid_at = info.find("process_id:");
    REQUIRE(pid_at != std::string::npos);
    const auto pid = static_cast<pid_t>(std::stol(info.substr(pid_at + 11)));
    REQUIRE(::kill(pid, SIGSTOP) == 0);
    auto op = h.submit(OpKind::put, puts);
    REQUIRE(::kill(pid, SIGKILL) == 0);
    REQUIRE(op.wait(60s));
    const auto put_results = op.results();
    uint64_t faults = 0;
    for (const auto &r : put_results) {
        CHECK((r.result == KVBLOB_ROW_READY || r.result == KVBLOB_ROW_FAULT));
        faults += r.result == KVBLOB_ROW_FAULT;
    }
    CHECK(faults > 0);

    // With the server down, reads are FAULT (not MISS: absence is not
    // known) and no destination byte is called READY.
    Batch gets;
    for (uint64_t r = 0; r < rows; ++r) gets.row("fault/" + std::to_string(r), {make_span(dst.handle(), r * size, size)});
    for (const auto &r : h.run(OpKind::get, gets)) CHECK(r.result == KVBLOB_ROW_FAULT);

    // A server back on the same port serves new operations at once: the
    // dropped connections are made again.
    ChildProcess restarted({"/usr/bin/env", "redis-server", "--port", std::to_string(port), "--bind", "127.0.0.1",
                            "--save", "", "--appendonly", "no", "--logfile", "/dev/null"});
    // Until it answers, or 120 s as a hang guard: a loaded machine may take
    // seconds to start it.
    const auto give_up = std::chrono::steady_clock::now() + 120s;
    while (!server_answers(port) && std::chrono::steady_clock::now() < give_up) std::this_thread::sleep_for(50ms);
    REQUIRE(server_answers(port));
    CHECK(h.one(OpKind::put, "after-restart", {make_span(src.handle(), 0, size)}) == KVBLOB_ROW_READY);
    CHECK(h.one(OpKind::get, "after-restart", {make_span(dst.handle(), 0, size)}) == KVBLOB_ROW_READY);
    CHECK(std::equal(src.bytes.begin(), src.bytes.begin() + size, dst.bytes.begin()));
    run_command("redis-cli -p " + std::to_string(port) + " shutdown nosave");
}

TEST_CASE("redis driver: a cluster's keys spread over every master, and a moved slot is followed")
{
    if (!redis_url() || std::string(redis_url()).find(',') == std::string::npos) {
        MESSAGE("skipped: needs a cluster in KVBLOB_REDIS_URL (run through tests/redis/with_redis.sh cluster)");
        return;
    }
    const std::string urls = redis_url();
    const std::string first = urls.substr(0, urls.find(','));
    // One seed is enough: the driver learns the other masters from it.
    DriverHarness h("redis", {{"url", first}, {"cluster", "on"}});
    // 64 KiB rows: gets take the driver's direct path (direct_get_min),
    // redirections included. Rows of 1 MiB, every one in hash slot 1423
    // (the tag {big1}), which the reshard below moves: their puts take the
    // direct path too (direct_put_min).
    constexpr uint64_t rows = 300, size = 64 << 10, big_rows = 8, big = 1 << 20;
    constexpr int big_slot = 1423;
    auto src = h.buffer(rows * size), dst = h.buffer(rows * size);
    auto big_src = h.buffer(big_rows * big), big_dst = h.buffer(big_rows * big);
    fill_pattern(src.bytes.data(), src.bytes.size(), 7);
    fill_pattern(big_src.bytes.data(), big_src.bytes.size(), 8);
    Batch puts, gets;
    for (uint64_t r = 0; r < rows; ++r) {
        puts.row("spread/" + std::to_string(r), {make_span(src.handle(), r * size, size)});
        gets.row("spread/" + std::to_string(r), {make_span(dst.handle(), r * size, size)});
    }
    for (uint64_t r = 0; r < big_rows; ++r) {
        puts.row("{big1}spread/" + std::to_string(r), {make_span(big_src.handle(), r * big, big)});
        gets.row("{big1}spread/" + std::to_string(r), {make_span(big_dst.handle(), r * big, big)});
    }
    auto keys_in_big_slot = [&](const std::string &url) {
        return std::atoi(run_command("redis-cli -p " + std::to_string(port_of(url)) + " cluster countkeysinslot " +
                                     std::to_string(big_slot))
                             .output.c_str());
    };
    for (const auto &r : h.run(OpKind::put, puts)) CHECK(r.result == KVBLOB_ROW_READY);
    std::string ports = urls;
    int masters_with_keys = 0;
    for (size_t at = 0; at != std::string::npos;) {
        const size_t next = ports.find(',', at);
        const std::string url = ports.substr(at, next == std::string::npos ? next : next - at);
        const auto out = run_command("redis-cli -p " + std::to_string(port_of(url)) + " dbsize").output;
        masters_with_keys += std::atoi(out.c_str()) > 0;
        at = next == std::string::npos ? next : next + 1;
    }
    CHECK(masters_with_keys == 3);
    CHECK(keys_in_big_slot(first) == static_cast<int>(big_rows));  // slot 1423 starts on the first master

    // Move 2000 slots (with their keys) from the first master to another
    // behind the driver's back: its slot map is stale, MOVED corrects it.
    const auto nodes = run_command("redis-cli -p " + std::to_string(port_of(first)) + " cluster myid").output;
    const std::string from = nodes.substr(0, nodes.find('\n'));
    const size_t second_at = urls.find(',') + 1;
    const std::string second = urls.substr(second_at, urls.find(',', second_at) - second_at);
    const auto to_out = run_command("redis-cli -p " + std::to_string(port_of(second)) + " cluster myid").output;
    const std::string to = to_out.substr(0, to_out.find('\n'));
    const auto moved = run_command("redis-cli --cluster reshard 127.0.0.1:" + std::to_string(port_of(first)) +
                                   " --cluster-from " + from + " --cluster-to " + to +
                                   " --cluster-slots 2000 --cluster-yes");
    REQUIRE(moved.exit_code == 0);
    CHECK(keys_in_big_slot(second) == static_cast<int>(big_rows));  // the large rows moved
    for (const auto &r : h.run(OpKind::get, gets)) CHECK(r.result == KVBLOB_ROW_READY);
    CHECK(src.bytes == dst.bytes);
    CHECK(big_src.bytes == big_dst.bytes);

    // Move them back: new puts meet MOVED too, and their values are resent.
    const auto back = run_command("redis-cli --cluster reshard 127.0.0.1:" + std::to_string(port_of(second)) +
                                  " --cluster-from " + to + " --cluster-to " + from +
                                  " --cluster-slots 2000 --cluster-yes");
    REQUIRE(back.exit_code == 0);
    Batch more_puts, more_gets;
    auto again = h.buffer(rows * size), big_again = h.buffer(big_rows * big);
    for (uint64_t r = 0; r < rows; ++r) {
        more_puts.row("spread-again/" + std::to_string(r), {make_span(src.handle(), r * size, size)});
        more_gets.row("spread-again/" + std::to_string(r), {make_span(again.handle(), r * size, size)});
    }
    for (uint64_t r = 0; r < big_rows; ++r) {
        more_puts.row("{big1}spread-again/" + std::to_string(r), {make_span(big_src.handle(), r * big, big)});
        more_gets.row("{big1}spread-again/" + std::to_string(r), {make_span(big_again.handle(), r * big, big)});
    }
    for (const auto &r : h.run(OpKind::put, more_puts)) CHECK(r.result == KVBLOB_ROW_READY);
    CHECK(keys_in_big_slot(first) == static_cast<int>(2 * big_rows));  // sent to the slot's owner again
    for (const auto &r : h.run(OpKind::get, more_gets)) CHECK(r.result == KVBLOB_ROW_READY);
    CHECK(src.bytes == again.bytes);
    CHECK(big_src.bytes == big_again.bytes);
}

