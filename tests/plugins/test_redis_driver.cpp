// The Redis driver against real servers started by tests/redis/with_redis.sh
// (KVBLOB_REDIS_URL names them). Without it, these tests say why and pass
// nothing off as checked.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "plugins/driver_harness.hpp"
#include "support/process.hpp"
#include "kvblob/tools/fill_pattern.hpp"

using kvblob::OpKind;
using namespace std::chrono_literals;

namespace {

const char *redis_url() { return std::getenv("KVBLOB_REDIS_URL"); }

int port_of(const std::string &url) { return std::stoi(url.substr(url.rfind(':') + 1)); }

bool server_answers(int port)
{
    return run_command("redis-cli -p " + std::to_string(port) + " ping").output.find("PONG") != std::string::npos;
}

}  // namespace

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

    // SHUTDOWN NOSAVE while the 64 MiB batch is on its way.
    auto op = h.submit(OpKind::put, puts);
    std::thread killer([&] { run_command("redis-cli -p " + std::to_string(port) + " shutdown nosave"); });
    REQUIRE(op.wait(30s));
    killer.join();
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
    for (int i = 0; i < 100 && !server_answers(port); ++i) std::this_thread::sleep_for(50ms);
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
    constexpr uint64_t rows = 300, size = 1024;
    auto src = h.buffer(rows * size), dst = h.buffer(rows * size);
    fill_pattern(src.bytes.data(), src.bytes.size(), 7);
    Batch puts, gets;
    for (uint64_t r = 0; r < rows; ++r) {
        puts.row("spread/" + std::to_string(r), {make_span(src.handle(), r * size, size)});
        gets.row("spread/" + std::to_string(r), {make_span(dst.handle(), r * size, size)});
    }
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
    for (const auto &r : h.run(OpKind::get, gets)) CHECK(r.result == KVBLOB_ROW_READY);
    CHECK(src.bytes == dst.bytes);
}
