// Completion notification from the drivers' side (ABI 1.1): every bundled
// driver and the vendor template declare KVBLOB_CAP_NOTIFY at 1.1 and
// announce each operation once final and once its access ended, so the
// host's wait sleeps instead of polling; offered only 1.0, each declares no
// 1.1 bit, never touches a notify the 1.0 record does not hold, and works
// polled exactly as before.
#include <dlfcn.h>
#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "plugins/driver_harness.hpp"
#include "support/temp_dir.hpp"
#include "kvblob/tools/fill_pattern.hpp"

using kvblob::OpKind;
using namespace std::chrono_literals;

namespace {

struct Subject {
    std::string what;
    std::string file;  // a short name or a path
    kvblob::Options options;
    bool stores = true;  // gets read back what puts stored (not the null driver)
};

// Every bundled driver the machine can open, and the template. The file
// driver's root lives as long as the list.
std::vector<Subject> subjects(const TempDir &root)
{
    const std::string lib = KVBLOB_PLUGIN_DIR;
    std::vector<Subject> out = {
        {"memory (blocking)", "memory", {{"mode", "blocking"}, {"store", unique_store("notify")}}},
        {"memory (background)", "memory", {{"mode", "background"}, {"store", unique_store("notify")}}},
        {"file", "file", {{"root", root.path()}}},
        {"mooncake (fake library)", "mooncake",
         {{"library", KVBLOB_FAKE_MOONCAKE}, {"master_server_address", unique_store("fake-mc-notify")}}},
        {"null", lib + "/libkvblob_null.so", {}, false},
        {"template", lib + "/libkvblob_minimal.so", {}},
    };
    // The Redis driver where a server is at hand (tests/redis/with_redis.sh).
    if (const char *url = std::getenv("KVBLOB_REDIS_URL"); url && !std::strchr(url, ','))
        out.push_back({"redis", "redis", {{"url", url}}});
    return out;
}

// How many announcements reached the completion descriptor since it was
// last read (an eventfd adds them up); 0 when none.
uint64_t announcements(int fd)
{
    uint64_t count = 0;
    return ::read(fd, &count, sizeof count) == sizeof count ? count : 0;
}

}  // namespace

TEST_CASE("notify: every bundled driver and the template announce each operation once final and once access ended")
{
    TempDir root("kvblob-notify");
    REQUIRE_FALSE(root.path().empty());
    for (const auto &s : subjects(root)) {
        INFO(s.what);
        auto plugin = kvblob::Plugin::load(s.file);
        CHECK(plugin.abi_version() == KVBLOB_ABI_1_1);
        auto driver = plugin.open(s.options);
        REQUIRE(driver.has(KVBLOB_CAP_NOTIFY));
        const int fd = driver.completion_fd();
        REQUIRE(fd >= 0);
        CHECK(announcements(fd) == 0);

        std::vector<uint8_t> src(4096), dst(4096, 0);
        fill_pattern(src.data(), src.size(), 21);
        auto rs = driver.register_region({sizeof(kvblob_region_desc_t), KVBLOB_MEMORY_HOST, src.data(), src.size(), 0, 0});
        auto rd = driver.register_region({sizeof(kvblob_region_desc_t), KVBLOB_MEMORY_HOST, dst.data(), dst.size(), 0, 0});
        const std::string key = unique_store("notify-key");
        for (OpKind kind : {OpKind::put, OpKind::get}) {
            INFO(kvblob::to_string(kind));
            Batch b;
            b.row(key, {make_span(rs.handle(), 0, 4096)});
            Batch g;
            g.row(key, {make_span(rd.handle(), 0, 4096)});
            auto op = driver.submit(kind, (kind == OpKind::put ? b : g).get());
            // Only an announcement ends this wait early: with the capability
            // declared the host never polls between its first look and the
            // deadline.
            REQUIRE(op.wait(60s));
            CHECK(op.results().at(0).result == (kind == OpKind::get && !s.stores ? KVBLOB_ROW_MISS : KVBLOB_ROW_READY));
            REQUIRE(op.release() == KVBLOB_OK);
            // Released: every announcement of the operation has returned,
            // and there were exactly two.
            CHECK(announcements(fd) == 2);
        }
        if (s.stores) CHECK(std::memcmp(src.data(), dst.data(), src.size()) == 0);
    }
}

TEST_CASE("notify: a wait blocked on an operation the driver completes later is woken by the announcement")
{
    // Controlled mode: nothing completes until the test advances the stages,
    // so the waiter is asleep (or about to be) when the driver announces.
    MemoryHarness h({{"mode", "controlled"}, {"store", unique_store("notify-ctl")}});
    auto &d = h.driver();
    REQUIRE(d.has(KVBLOB_CAP_NOTIFY));
    const int fd = d.completion_fd();  // counts what is announced from here on
    REQUIRE(fd >= 0);
    auto src = h.buffer(1024, 7);
    Batch b;
    b.row(unique_store("held"), {make_span(src.handle(), 0, 1024)});
    auto op = h.submit(OpKind::put, b);
    CHECK_FALSE(op.is_final());
    auto waiter = std::async(std::launch::async, [&] { return op.wait(60s); });
    const auto &hooks = h.hooks();
    REQUIRE(hooks.advance(d.handle(), op.handle(), KVBLOB_STAGE_TRANSFER_END) == KVBLOB_OK);
    REQUIRE(hooks.advance(d.handle(), op.handle(), KVBLOB_STAGE_COMMIT) == KVBLOB_OK);
    CHECK(op.is_final());
    REQUIRE(hooks.advance(d.handle(), op.handle(), KVBLOB_STAGE_ACCESS_END) == KVBLOB_OK);
    CHECK(waiter.get());
    CHECK(announcements(fd) == 2);
    CHECK(op.release() == KVBLOB_OK);
}

namespace {

// A host that speaks ABI 1.0 alone, written against the C table: it offers
// 1.0, lends a 1.0 services record (whose notify member, past the record's
// size, is a trap) and a 1.0 capability record, and polls.
struct OldHost {
    static inline std::atomic<int> trapped{0};
    static void trap(void *, kvblob_op_t *, kvblob_notify_event) { ++trapped; }
    static void log(void *, kvblob_log_level, const char *) {}

    explicit OldHost(const std::string &file) : lib(dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL), &dlclose)
    {
        REQUIRE_MESSAGE(lib, dlerror());
        auto entry = reinterpret_cast<kvblob_negotiate_fn>(dlsym(lib.get(), KVBLOB_ENTRY_SYMBOL));
        REQUIRE(static_cast<bool>(entry));
        kvblob_negotiation_t n{};
        n.struct_size = sizeof n;
        n.host_min_abi_version = n.host_max_abi_version = KVBLOB_ABI_1_0;
        REQUIRE(entry(&n) == KVBLOB_OK);
        REQUIRE(n.chosen_abi_version == KVBLOB_ABI_1_0);
        table = n.plugin;
        REQUIRE(table);
        CHECK(table->abi_version == KVBLOB_ABI_1_0);
        CHECK(table->struct_size == KVBLOB_PLUGIN_SIZE_1_0);
    }

    kvblob_driver_t *open(const kvblob::Options &options)
    {
        std::vector<kvblob_option_t> raw;
        for (const auto &[k, v] : options) raw.push_back({sizeof(kvblob_option_t), 0, k.c_str(), v.c_str()});
        services.struct_size = KVBLOB_HOST_SERVICES_SIZE_1_0;
        services.log = &log;
        services.notify = &trap;  // past struct_size: a 1.0 driver never reads it
        kvblob_open_args_t args{sizeof args, KVBLOB_ABI_1_0, raw.data(), raw.size(), &services};
        caps.struct_size = KVBLOB_CAPS_SIZE_1_0;
        caps.access_end_bound_ns = 0xA5A5A5A5A5A5A5A5ull;  // not 1.0's: must stay as it is
        char err[512] = {0};
        kvblob_driver_t *d = nullptr;
        REQUIRE_MESSAGE(table->open(&args, &caps, &d, err, sizeof err) == KVBLOB_OK, err);
        return d;
    }

    // Submits, polls until final and access ended, and returns row 0's result.
    kvblob_row_result run(kvblob_driver_t *d, kvblob_status (*kvblob_plugin_t::*slot)(kvblob_driver_t *, const kvblob_batch_t *,
                                                                                        kvblob_op_t **, char *, uint32_t),
                          Batch &b)
    {
        kvblob_op_t *op = nullptr;
        char err[512] = {0};
        REQUIRE_MESSAGE((table->*slot)(d, &b.get(), &op, err, sizeof err) == KVBLOB_OK, err);
        const auto deadline = std::chrono::steady_clock::now() + 60s;
        for (;;) {
            uint32_t final = 0;
            REQUIRE(table->poll(d, op, &final) == KVBLOB_OK);
            if (final && table->access(d, op) == KVBLOB_ACCESS_ENDED) break;
            REQUIRE(std::chrono::steady_clock::now() < deadline);
            std::this_thread::yield();
        }
        kvblob_row_status_t row{};
        row.struct_size = sizeof row;
        REQUIRE(table->results(d, op, 0, 1, &row) == KVBLOB_OK);
        REQUIRE(table->release(d, op) == KVBLOB_OK);
        return static_cast<kvblob_row_result>(row.result);
    }

    std::unique_ptr<void, int (*)(void *)> lib;
    const kvblob_plugin_t *table = nullptr;
    kvblob_host_services_t services{};
    kvblob_caps_t caps{};
};

std::string file_of(const Subject &s)
{
    if (s.file.find('/') != std::string::npos) return s.file;
    return std::string(KVBLOB_PLUGIN_DIR) + "/libkvblob_" + s.file + ".so";
}

}  // namespace

TEST_CASE("notify: offered only ABI 1.0, every bundled driver and the template declare no 1.1 bit and work polled")
{
    TempDir root("kvblob-notify-1-0");
    REQUIRE_FALSE(root.path().empty());
    for (const auto &s : subjects(root)) {
        INFO(s.what);
        OldHost host(file_of(s));
        OldHost::trapped = 0;
        kvblob_driver_t *d = host.open(s.options);
        CHECK((host.caps.flags & ~KVBLOB_CAP_KNOWN_MASK_1_0) == 0);
        CHECK(host.caps.access_end_bound_ns == 0xA5A5A5A5A5A5A5A5ull);

        std::vector<uint8_t> src(4096), dst(4096, 0);
        fill_pattern(src.data(), src.size(), 22);
        kvblob_region_t *rs = nullptr, *rd = nullptr;
        char err[512] = {0};
        kvblob_region_desc_t ds{sizeof ds, KVBLOB_MEMORY_HOST, src.data(), src.size(), 0, 0};
        kvblob_region_desc_t dd{sizeof dd, KVBLOB_MEMORY_HOST, dst.data(), dst.size(), 0, 0};
        REQUIRE(host.table->register_region(d, &ds, &rs, err, sizeof err) == KVBLOB_OK);
        REQUIRE(host.table->register_region(d, &dd, &rd, err, sizeof err) == KVBLOB_OK);
        const std::string key = unique_store("old-host-key");
        Batch put, get;
        put.row(key, {make_span(rs, 0, 4096)});
        get.row(key, {make_span(rd, 0, 4096)});
        CHECK(host.run(d, &kvblob_plugin_t::put, put) == KVBLOB_ROW_READY);
        CHECK(host.run(d, &kvblob_plugin_t::get, get) == (s.stores ? KVBLOB_ROW_READY : KVBLOB_ROW_MISS));
        if (s.stores) CHECK(std::memcmp(src.data(), dst.data(), src.size()) == 0);
        CHECK(OldHost::trapped == 0);

        CHECK(host.table->drain(d, 10'000'000'000ull) == KVBLOB_OK);
        CHECK(host.table->unregister_region(d, rs) == KVBLOB_OK);
        CHECK(host.table->unregister_region(d, rd) == KVBLOB_OK);
        CHECK(host.table->close(d) == KVBLOB_OK);
    }
}

TEST_CASE("notify: a host told to offer no newer ABI than 1.0 loads a 1.1 driver at 1.0, polled")
{
    kvblob::LoadOptions load;
    load.newest_abi_version = KVBLOB_ABI_1_0;
    auto plugin = kvblob::Plugin::load("memory", load);
    CHECK(plugin.abi_version() == KVBLOB_ABI_1_0);
    auto driver = plugin.open({{"mode", "background"}, {"store", unique_store("notify-old")}});
    CHECK_FALSE(driver.has(KVBLOB_CAP_NOTIFY));
    CHECK(driver.completion_fd() == -1);
    std::vector<uint8_t> src(512, 3);
    auto rs = driver.register_region({sizeof(kvblob_region_desc_t), KVBLOB_MEMORY_HOST, src.data(), src.size(), 0, 0});
    Batch b;
    b.row(unique_store("old-key"), {make_span(rs.handle(), 0, 512)});
    auto op = driver.submit(OpKind::put, b.get());
    REQUIRE(op.wait(60s));
    CHECK(op.results().at(0).result == KVBLOB_ROW_READY);
    CHECK(op.release() == KVBLOB_OK);
}
