// The tiered driver (plugins/tiered): its options, fall-through and
// promotion of gets, write-through and write=back puts, eviction of the
// least recently used objects from a full top tier, tiers that refuse to
// open. What each tier holds is read by opening that tier's store directly
// (the memory driver with the same store name, the file driver on the same
// root, a Redis driver on the same server).
#include <doctest/doctest.h>

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "kvblob/host/metrics.hpp"
#include "plugins/driver_harness.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

using kvblob::OpKind;

namespace {

kvblob::Options memory_over_file(const std::string &store, const std::string &root, kvblob::Options more = {})
{
    kvblob::Options o{{"tier.0.driver", "memory"}, {"tier.0.store", store}, {"tier.1.driver", "file"},
                      {"tier.1.root", root}};
    o.insert(o.end(), more.begin(), more.end());
    return o;
}

// The refusal of an open, as the loader words it.
std::string refusal_of(const kvblob::Options &options)
{
    auto plugin = kvblob::Plugin::load("tiered");
    try {
        auto d = plugin.open(options);
    } catch (const kvblob::LoadError &e) {
        return e.what();
    }
    FAIL("the tiered driver opened");
    return {};
}

bool holds(DriverHarness &h, const std::string &key) { return h.one(OpKind::probe, key) == KVBLOB_ROW_READY; }

// A driver's log lines, kept for a test to read after the driver closed.
struct Lines {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::string> lines;
    kvblob::LogSink sink()
    {
        return [this](kvblob_log_level, const std::string &line) {
            {
                std::lock_guard lock(mu);
                lines.push_back(line);
            }
            cv.notify_all();
        };
    }
    // Waits for a line holding text: the driver's own signal that it got
    // somewhere (within, so a driver that never says it fails the test).
    bool wait_for(const std::string &text, std::chrono::seconds within)
    {
        std::unique_lock lock(mu);
        return cv.wait_for(lock, within, [&] {
            for (const auto &l : lines)
                if (l.find(text) != std::string::npos) return true;
            return false;
        });
    }
    bool any(const std::string &text)
    {
        std::lock_guard lock(mu);
        for (const auto &l : lines)
            if (l.find(text) != std::string::npos) return true;
        return false;
    }
};

// The bytes under key in h's store, or empty when it is not READY there.
std::vector<uint8_t> stored(DriverHarness &h, const std::string &key, size_t size)
{
    auto b = h.buffer(size);
    if (h.one(OpKind::get, key, {make_span(b.handle(), 0, size)}) != KVBLOB_ROW_READY) return {};
    return b.bytes;
}

}  // namespace

TEST_CASE("tiered: a row only in tier 1 is READY from it, and promoted into tier 0")
{
    TempDir root("kvblob-tiered");
    const std::string store = unique_store("tiered-promote");
    DriverHarness file("file", {{"root", root.path()}});
    auto src = file.buffer(8192);
    fill_pattern(src.bytes.data(), src.bytes.size(), 31);
    REQUIRE(file.one(OpKind::put, "tp/below", {make_span(src.handle(), 0, 8192)}) == KVBLOB_ROW_READY);

    DriverHarness top("memory", {{"store", store}});
    CHECK_FALSE(holds(top, "tp/below"));

    DriverHarness tiered("tiered", memory_over_file(store, root.path()));
    auto dst = tiered.buffer(8192);
    Batch get;
    get.row("tp/below", {make_span(dst.handle(), 0, 8192)}).row("tp/absent", {make_span(dst.handle(), 0, 8192)});
    auto op = tiered.submit(OpKind::get, get);
    REQUIRE(op.wait(std::chrono::seconds(60)));
    const auto results = op.results();
    CHECK(results[0].result == KVBLOB_ROW_READY);
    CHECK(op.message(0).find("from tier 1 (file)") != std::string::npos);
    CHECK(results[1].result == KVBLOB_ROW_MISS);  // absent from every tier
    CHECK(dst.bytes == src.bytes);

    // The promotion runs after the get is final, reading the row again
    // from tier 1: tier 0 has it once that put is done (looked for until
    // then).
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!holds(top, "tp/below") && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    CHECK(holds(top, "tp/below"));
    auto copy = top.buffer(8192);
    REQUIRE(top.one(OpKind::get, "tp/below", {make_span(copy.handle(), 0, 8192)}) == KVBLOB_ROW_READY);
    CHECK(copy.bytes == src.bytes);
    CHECK_FALSE(holds(top, "tp/absent"));

    // The next get answers from the top tier.
    std::fill(dst.bytes.begin(), dst.bytes.end(), 0);
    Batch again;
    again.row("tp/below", {make_span(dst.handle(), 0, 8192)});
    auto second = tiered.submit(OpKind::get, again);
    REQUIRE(second.wait(std::chrono::seconds(60)));
    CHECK(second.results()[0].result == KVBLOB_ROW_READY);
    CHECK(second.message(0).empty());
    CHECK(dst.bytes == src.bytes);
}

TEST_CASE("tiered: a put writes through every tier, and remove reaches every tier")
{
    TempDir root("kvblob-tiered");
    const std::string store = unique_store("tiered-through");
    DriverHarness tiered("tiered", memory_over_file(store, root.path()));
    auto src = tiered.buffer(4096);
    fill_pattern(src.bytes.data(), src.bytes.size(), 7);
    CHECK(tiered.one(OpKind::put, "wt/a", {make_span(src.handle(), 0, 4096)}) == KVBLOB_ROW_READY);
    // Again: already held everywhere (R-ROW-7).
    CHECK(tiered.one(OpKind::put, "wt/a", {make_span(src.handle(), 0, 4096)}) == KVBLOB_ROW_READY);

    DriverHarness top("memory", {{"store", store}});
    DriverHarness file("file", {{"root", root.path()}});
    CHECK(holds(top, "wt/a"));
    CHECK(holds(file, "wt/a"));
    auto copy = file.buffer(4096);
    REQUIRE(file.one(OpKind::get, "wt/a", {make_span(copy.handle(), 0, 4096)}) == KVBLOB_ROW_READY);
    CHECK(copy.bytes == src.bytes);
    CHECK(tiered.one(OpKind::probe, "wt/a") == KVBLOB_ROW_READY);

    CHECK(tiered.one(OpKind::remove, "wt/a") == KVBLOB_ROW_READY);
    CHECK_FALSE(holds(top, "wt/a"));
    CHECK_FALSE(holds(file, "wt/a"));
    CHECK(tiered.one(OpKind::probe, "wt/a") == KVBLOB_ROW_MISS);
}

TEST_CASE("tiered: each tier's host counts its operations under the label tier.N")
{
    TempDir root("kvblob-tiered");
    DriverHarness tiered("tiered", memory_over_file(unique_store("tiered-labels"), root.path()));
    auto src = tiered.buffer(4096);
    REQUIRE(tiered.one(OpKind::put, "labels/a", {make_span(src.handle(), 0, 4096)}) == KVBLOB_ROW_READY);
    // Written through: each tier stored the row, and its own host counted it.
    const auto ready_puts = [](const std::string &driver, const std::string &label) {
        uint64_t rows = 0;
        for (const auto &m : kvblob::metrics_of_open_drivers())
            if (m.driver == driver && m.label == label)
                rows += m.kinds[static_cast<size_t>(OpKind::put)].rows[KVBLOB_ROW_READY];
        return rows;
    };
    CHECK(ready_puts("memory", "tier.0") >= 1);
    CHECK(ready_puts("file", "tier.1") >= 1);
    CHECK(ready_puts("tiered", "") >= 1);  // the engine's own open of the stack
}

TEST_CASE("tiered: a full top tier DECLINES, the row is still stored below and READY from there")
{
    TempDir root("kvblob-tiered");
    const std::string store = unique_store("tiered-full");
    DriverHarness tiered("tiered", memory_over_file(store, root.path(), {{"tier.0.capacity", "1K"}}));
    auto src = tiered.buffer(4096);
    fill_pattern(src.bytes.data(), src.bytes.size(), 9);
    CHECK(tiered.one(OpKind::put, "full/a", {make_span(src.handle(), 0, 4096)}) == KVBLOB_ROW_READY);

    DriverHarness top("memory", {{"store", store}});
    DriverHarness file("file", {{"root", root.path()}});
    CHECK_FALSE(holds(top, "full/a"));
    CHECK(holds(file, "full/a"));

    auto dst = tiered.buffer(4096);
    CHECK(tiered.one(OpKind::get, "full/a", {make_span(dst.handle(), 0, 4096)}) == KVBLOB_ROW_READY);
    CHECK(dst.bytes == src.bytes);
    CHECK_FALSE(holds(top, "full/a"));  // its promotion was DECLINED, and skipped
}

TEST_CASE("tiered: a get of the wrong size is a FAULT, never a MISS after a tier may have written (R-ROW-5, R-ROW-3)")
{
    TempDir root("kvblob-tiered");
    DriverHarness tiered("tiered", memory_over_file(unique_store("tiered-size"), root.path()));
    auto src = tiered.buffer(4096, 0x11);
    REQUIRE(tiered.one(OpKind::put, "size/a", {make_span(src.handle(), 0, 4096)}) == KVBLOB_ROW_READY);
    auto dst = tiered.buffer(8192);
    CHECK(tiered.one(OpKind::get, "size/a", {make_span(dst.handle(), 0, 2048)}) == KVBLOB_ROW_FAULT);
}

TEST_CASE("tiered: capabilities and limits are what every tier honours")
{
    TempDir root("kvblob-tiered");
    DriverHarness tiered("tiered", memory_over_file(unique_store("tiered-caps"), root.path(),
                                                    {{"tier.0.max_rows", "8"}, {"tier.1.max_key_bytes", "100"}}));
    const auto &caps = tiered.driver().caps();
    CHECK(caps.max_rows_per_op == 8);
    CHECK(caps.max_key_bytes == 100);
    CHECK(tiered.driver().has(KVBLOB_CAP_PROBE));
    CHECK(tiered.driver().has(KVBLOB_CAP_REMOVE));
}

TEST_CASE("tiered: options are refused naming the key, the tier and its driver")
{
    TempDir root("kvblob-tiered");
    const std::string store = unique_store("tiered-options");
    SUBCASE("a tier's own driver refuses an option")
    {
        auto why = refusal_of(memory_over_file(store, root.path(), {{"tier.1.no_such_option", "1"}}));
        CHECK(why.find("tier 1 (file)") != std::string::npos);
        CHECK(why.find("R-OPN-1") != std::string::npos);
        CHECK(why.find("no_such_option") != std::string::npos);
    }
    SUBCASE("a gap in the tiers")
    {
        auto why = refusal_of({{"tier.0.driver", "memory"}, {"tier.2.driver", "memory"}});
        CHECK(why.find("tier.1.driver") != std::string::npos);
        CHECK(why.find("R-OPN-1") != std::string::npos);
    }
    SUBCASE("a tier without a driver")
    {
        auto why = refusal_of({{"tier.0.driver", "memory"}, {"tier.1.root", root.path()}});
        CHECK(why.find("tier.1.driver") != std::string::npos);
    }
    SUBCASE("one tier only")
    {
        auto why = refusal_of({{"tier.0.driver", "memory"}});
        CHECK(why.find("tier.1.driver") != std::string::npos);
    }
    SUBCASE("an unknown option of its own")
    {
        auto why = refusal_of(memory_over_file(store, root.path(), {{"no_such_tiered_option", "1"}}));
        CHECK(why.find("no_such_tiered_option") != std::string::npos);
        CHECK(why.find("R-OPN-1") != std::string::npos);
    }
    SUBCASE("a watch out of bounds")
    {
        for (const char *us : {"-1", "1000001"}) {
            auto why = refusal_of(memory_over_file(store, root.path(), {{"submit_watch_us", us}}));
            CHECK(why.find("submit_watch_us") != std::string::npos);
            CHECK(why.find("one second") != std::string::npos);
        }
    }
    SUBCASE("a malformed tier key")
    {
        auto why = refusal_of(memory_over_file(store, root.path(), {{"tier.x.store", "a"}}));
        CHECK(why.find("tier.x.store") != std::string::npos);
    }
    SUBCASE("a tier's driver that cannot be loaded: its index, its driver and the loader's stage")
    {
        auto why = refusal_of({{"tier.0.driver", "memory"}, {"tier.1.driver", "no_such_driver_at_all"}});
        CHECK(why.find("tier 1 (no_such_driver_at_all)") != std::string::npos);
        CHECK(why.find("stage open") != std::string::npos);
    }
}

TEST_CASE("tiered: two tiers that are one store are refused, naming both, and tiers of their own open and keep nothing of the check")
{
    // The top tier's eviction would remove the only copy (contract,
    // "Eviction": only an object held whole below is evicted).
    {
        // Memory tiers given no store: both "default".
        const auto why = refusal_of({{"tier.0.driver", "memory"}, {"tier.1.driver", "memory"}});
        INFO(why);
        CHECK(why.find("R-OPN-1") != std::string::npos);
        CHECK(why.find("tier 0 (memory) and tier 1 (memory) are one store") != std::string::npos);
    }
    TempDir root("kvblob-tiered");
    {
        // File tiers of one root, written two ways, with another tier between.
        const auto why = refusal_of({{"tier.0.driver", "file"},
                                     {"tier.0.root", root.path()},
                                     {"tier.1.driver", "memory"},
                                     {"tier.1.store", unique_store("tiered-between")},
                                     {"tier.2.driver", "file"},
                                     {"tier.2.root", root.path() + "/."}});
        INFO(why);
        CHECK(why.find("tier 0 (file) and tier 2 (file) are one store") != std::string::npos);
    }
    // Stores of their own: opens, and the check's object is gone from the
    // bottom tier (a file tier: no file left under its root).
    const auto regular_files = [&] {
        size_t n = 0;
        for (const auto &entry : std::filesystem::recursive_directory_iterator(root.path()))
            n += entry.is_regular_file() ? 1 : 0;
        return n;
    };
    REQUIRE(regular_files() == 0);
    DriverHarness tiered("tiered", memory_over_file(unique_store("tiered-own-stores"), root.path()));
    CHECK(regular_files() == 0);
}

TEST_CASE("tiered: a tier's secret option is never repeated, in a refusal or a log line")
{
    TempDir root("kvblob-tiered");
    const std::string secret = "tiered-secret-value-4711";
    std::mutex mu;
    std::vector<std::string> lines;
    kvblob::LogSink sink = [&](kvblob_log_level, const std::string &line) {
        std::lock_guard lock(mu);
        lines.push_back(line);
    };
    auto plugin = kvblob::Plugin::load("tiered");
    // The tier refuses (an unknown option beside the secret).
    std::string why;
    try {
        auto d = plugin.open(memory_over_file(unique_store("tiered-secret"), root.path(),
                                              {{"tier.0.token", secret}, {"tier.0.no_such", "1"}}),
                             sink);
    } catch (const kvblob::LoadError &e) {
        why = e.what();
    }
    CHECK(why.find("tier 0 (memory)") != std::string::npos);
    CHECK(why.find(secret) == std::string::npos);
    {
        auto d = plugin.open(memory_over_file(unique_store("tiered-secret"), root.path(), {{"tier.0.token", secret}}),
                             sink);
        std::vector<uint8_t> bytes(1024, 3);
        kvblob_region_desc_t desc{sizeof desc, KVBLOB_MEMORY_HOST, bytes.data(), bytes.size(), 0, 0};
        auto region = d.register_region(desc);
        Batch get;
        get.row("secret/absent", {make_span(region.handle(), 0, 1024)});
        auto op = d.submit(OpKind::get, get.get());
        REQUIRE(op.wait(std::chrono::seconds(60)));
        CHECK(op.message(0).find(secret) == std::string::npos);
    }
    std::lock_guard lock(mu);
    for (const auto &line : lines) CHECK(line.find(secret) == std::string::npos);
}

TEST_CASE("tiered: a long secret of one tier that another tier's refusal repeats is not printed, whole or cut")
{
    // A 2,000-byte token (a JWT is that long) given to tier 0, and by mistake
    // in tier 1's root too: tier 1's refusal repeats the root. The host
    // knows it only as tier 0's secret, and the refusal is longer than the
    // 1 KiB an open's error has, so it is cut inside the secret.
    std::string secret;
    for (int i = 0; secret.size() < 2000; ++i) secret += "tok" + std::to_string(i * 7919 % 10007) + "-";
    auto plugin = kvblob::Plugin::load("tiered");
    std::string why;
    try {
        auto d = plugin.open({{"tier.0.driver", "memory"},
                              {"tier.0.store", unique_store("tiered-long-secret")},
                              {"tier.0.token", secret},
                              {"tier.1.driver", "file"},
                              {"tier.1.root", "/nonexistent/" + secret}});
    } catch (const kvblob::LoadError &e) {
        why = e.what();
    }
    INFO(why);
    REQUIRE(why.find("tier 1 (file)") != std::string::npos);
    CHECK(why.find(kvblob::removed_secret) != std::string::npos);
    // Not even a beginning of it: "tok0-" and on.
    CHECK(why.find(secret.substr(0, kvblob::min_scrubbed_secret)) == std::string::npos);
}

// ---- write=back ---------------------------------------------------------------

TEST_CASE("tiered: write=back puts are READY from the top tier, and drain writes them below")
{
    TempDir root("kvblob-tiered");
    const std::string store = unique_store("tiered-back");
    DriverHarness tiered("tiered", memory_over_file(store, root.path(), {{"write", "back"}}));
    CHECK_FALSE(tiered.driver().has(KVBLOB_CAP_DEVICE_MEMORY));  // the queue copies with the CPU
    auto src = tiered.buffer(3 * 4096);
    fill_pattern(src.bytes.data(), src.bytes.size(), 41);
    Batch put;
    for (int r = 0; r < 3; ++r) put.row("wb/" + std::to_string(r), {make_span(src.handle(), r * 4096, 4096)});
    for (const auto &row : tiered.run(OpKind::put, put)) CHECK(row.result == KVBLOB_ROW_READY);

    DriverHarness top("memory", {{"store", store}});
    for (int r = 0; r < 3; ++r) CHECK(holds(top, "wb/" + std::to_string(r)));
    // Read back through the stack at once (from the top tier).
    auto dst = tiered.buffer(4096);
    CHECK(tiered.one(OpKind::get, "wb/1", {make_span(dst.handle(), 0, 4096)}) == KVBLOB_ROW_READY);
    CHECK(std::equal(dst.bytes.begin(), dst.bytes.end(), src.bytes.begin() + 4096));

    REQUIRE(tiered.driver().drain(std::chrono::seconds(120)) == KVBLOB_OK);
    DriverHarness file("file", {{"root", root.path()}});
    for (int r = 0; r < 3; ++r) {
        const auto bytes = stored(file, "wb/" + std::to_string(r), 4096);
        REQUIRE(bytes.size() == 4096);
        CHECK(std::equal(bytes.begin(), bytes.end(), src.bytes.begin() + r * 4096));
    }
}

TEST_CASE("tiered: write=back rows reach the bottom tier with nobody waiting for them")
{
    // A put does not wake the writer, and nothing here waits for it (no
    // drain, remove or close): the writer's own look at its queue writes
    // the row below (plugins/tiered/write_back.hpp, writer_looks_every).
    TempDir root("kvblob-tiered");
    DriverHarness tiered("tiered", memory_over_file(unique_store("tiered-looks"), root.path(), {{"write", "back"}}));
    auto src = tiered.buffer(4096);
    fill_pattern(src.bytes.data(), src.bytes.size(), 43);
    REQUIRE(tiered.one(OpKind::put, "looks/0", {make_span(src.handle(), 0, 4096)}) == KVBLOB_ROW_READY);
    DriverHarness file("file", {{"root", root.path()}});
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    bool below = false;
    while (!(below = holds(file, "looks/0")) && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    REQUIRE(below);
    const auto bytes = stored(file, "looks/0", 4096);
    REQUIRE(bytes.size() == 4096);
    CHECK(std::equal(bytes.begin(), bytes.end(), src.bytes.begin()));
}

namespace {

// The names and nice values of this process's threads (Linux:
// /proc/self/task/*/stat, the name in field 2, niceness in field 19).
std::vector<std::pair<std::string, int>> thread_niceness()
{
    std::vector<std::pair<std::string, int>> out;
    for (const auto &task : std::filesystem::directory_iterator("/proc/self/task")) {
        std::ifstream in(task.path() / "stat");
        std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        const auto start_of_name = stat.find('(');
        const auto end_of_name = stat.rfind(')');
        if (start_of_name == std::string::npos || end_of_name == std::string::npos) continue;
        std::istringstream fields(stat.substr(end_of_name + 2));  // from field 3, the state
        std::string field;
        for (int f = 3; f <= 19 && fields >> field; ++f)
            if (f == 19) out.emplace_back(stat.substr(start_of_name + 1, end_of_name - start_of_name - 1), std::stoi(field));
    }
    return out;
}

}  // namespace

TEST_CASE("tiered: the write=back writer runs below the engine's priority")
{
    // Ten nicer than the thread that opened the driver, up to 19.
    const int engine = getpriority(PRIO_PROCESS, 0);
    const int writer = std::min(engine + 10, 19);
    if (writer == engine) {
        MESSAGE("skipped: this test runs at niceness 19 already, as low as the writer can go");
        return;
    }
    // The writer names its thread kvblob-writer (plugins/tiered/write_back.cpp).
    const auto at_writers = [writer] {
        const auto all = thread_niceness();
        return std::count(all.begin(), all.end(), std::pair<std::string, int>("kvblob-writer", writer));
    };
    const auto before = at_writers();
    TempDir root("kvblob-tiered");
    DriverHarness tiered("tiered", memory_over_file(unique_store("tiered-nice"), root.path(), {{"write", "back"}}));
    auto src = tiered.buffer(4096);
    CHECK(tiered.one(OpKind::put, "nice/0", {make_span(src.handle(), 0, 4096)}) == KVBLOB_ROW_READY);
    // Written below: the writer has run, and set its priority first.
    REQUIRE(tiered.driver().drain(std::chrono::seconds(120)) == KVBLOB_OK);
    CHECK(at_writers() == before + 1);
}

TEST_CASE("tiered: write=back rows still queued at close are written below before it returns")
{
    TempDir root("kvblob-tiered");
    std::vector<uint8_t> pattern(8192);
    fill_pattern(pattern.data(), pattern.size(), 43);
    Lines log;
    {
        auto plugin = kvblob::Plugin::load("tiered");
        auto d = plugin.open(memory_over_file(unique_store("tiered-back-close"), root.path(), {{"write", "back"}}),
                             log.sink());
        auto region = d.register_region({sizeof(kvblob_region_desc_t), KVBLOB_MEMORY_HOST, pattern.data(),
                                         pattern.size(), 0, 0});
        Batch put;
        put.row("wbc/a", {make_span(region.handle(), 0, 4096)}).row("wbc/b", {make_span(region.handle(), 4096, 4096)});
        auto op = d.submit(OpKind::put, put.get());
        REQUIRE(op.wait(std::chrono::seconds(60)));
        for (const auto &row : op.results()) CHECK(row.result == KVBLOB_ROW_READY);
    }  // the driver goes: drain, then close
    CHECK(log.any("write=back at close: 2 row(s) written below, 0 row(s) not written below"));
    DriverHarness file("file", {{"root", root.path()}});
    const auto a = stored(file, "wbc/a", 4096), b = stored(file, "wbc/b", 4096);
    REQUIRE(a.size() == 4096);
    REQUIRE(b.size() == 4096);
    CHECK(std::equal(a.begin(), a.end(), pattern.begin()));
    CHECK(std::equal(b.begin(), b.end(), pattern.begin() + 4096));
}

TEST_CASE("tiered: a write=back row the bottom tier refuses is logged and counted at close, and stays in the top tier")
{
    const std::string top_store = unique_store("tiered-back-fail-top"), bottom_store = unique_store("tiered-back-fail");
    // The bottom tier is a memory store too small for the row: it DECLINES.
    const kvblob::Options options{{"tier.0.driver", "memory"}, {"tier.0.store", top_store},
                                  {"tier.1.driver", "memory"}, {"tier.1.store", bottom_store},
                                  {"tier.1.capacity", "1K"},   {"write", "back"}};
    std::vector<uint8_t> pattern(4096);
    fill_pattern(pattern.data(), pattern.size(), 47);
    // Opened first, it keeps the top store alive past the tiered driver's
    // close (a memory store lives while a driver holds it).
    DriverHarness top("memory", {{"store", top_store}});
    Lines log;
    {
        auto plugin = kvblob::Plugin::load("tiered");
        auto d = plugin.open(options, log.sink());
        auto region = d.register_region({sizeof(kvblob_region_desc_t), KVBLOB_MEMORY_HOST, pattern.data(),
                                         pattern.size(), 0, 0});
        Batch put;
        put.row("wbf/a", {make_span(region.handle(), 0, 4096)});
        auto op = d.submit(OpKind::put, put.get());
        REQUIRE(op.wait(std::chrono::seconds(60)));
        CHECK(op.results()[0].result == KVBLOB_ROW_READY);
        REQUIRE(d.drain(std::chrono::seconds(120)) == KVBLOB_OK);
        CHECK(log.any("write=back: a row was not written below (DECLINED)"));
    }
    CHECK(log.any("write=back at close: 0 row(s) written below, 1 row(s) not written below"));
    DriverHarness bottom("memory", {{"store", bottom_store}});
    CHECK_FALSE(holds(bottom, "wbf/a"));
    CHECK(stored(top, "wbf/a", 4096) == pattern);  // the only copy: never evicted, never dropped
}

TEST_CASE("tiered: a write=back put larger than its queue waits for room, and every row is READY and written below")
{
    TempDir root("kvblob-tiered");
    const std::string store = unique_store("tiered-back-queue");
    DriverHarness tiered("tiered", memory_over_file(store, root.path(),
                                                    {{"write", "back"}, {"write_back_queue_bytes", "8K"},
                                                     {"write_back_queue_rows", "2"}}));
    CHECK(tiered.driver().caps().max_object_bytes <= 8192);  // no row larger than the queue
    // Seven rows, the queue has room for two: the put goes in turns, each
    // waiting for the writer to free room.
    constexpr int rows = 7;
    auto src = tiered.buffer(rows * 4096);
    fill_pattern(src.bytes.data(), src.bytes.size(), 67);
    Batch put;
    for (int r = 0; r < rows; ++r) put.row("wbq/" + std::to_string(r), {make_span(src.handle(), r * 4096, 4096)});
    for (const auto &row : tiered.run(OpKind::put, put)) CHECK(row.result == KVBLOB_ROW_READY);
    REQUIRE(tiered.driver().drain(std::chrono::seconds(120)) == KVBLOB_OK);
    DriverHarness file("file", {{"root", root.path()}});
    for (int r = 0; r < rows; ++r) {
        const auto bytes = stored(file, "wbq/" + std::to_string(r), 4096);
        REQUIRE(bytes.size() == 4096);
        CHECK(std::equal(bytes.begin(), bytes.end(), src.bytes.begin() + r * 4096));
    }
}

namespace {

const char *single_redis_url()
{
    const char *url = std::getenv("KVBLOB_REDIS_URL");
    return url && *url && std::string(url).find(',') == std::string::npos ? url : nullptr;
}

// The process of the Redis server at url (it is this test's to stop).
pid_t server_pid(const std::string &url)
{
    const std::string port = url.substr(url.rfind(':') + 1);
    const std::string info = run_command("redis-cli -p " + port + " info server").output;
    const auto at = info.find("process_id:");
    REQUIRE(at != std::string::npos);
    return static_cast<pid_t>(std::stol(info.substr(at + 11)));
}

// Continues a stopped server as it goes, whatever the test found.
struct Continues {
    pid_t pid;
    ~Continues() { ::kill(pid, SIGCONT); }
};

}  // namespace

TEST_CASE("tiered: write=back over a stopped Redis server is READY from the top tier, and written below once it runs")
{
    if (!single_redis_url()) {
        MESSAGE("skipped: needs one server in KVBLOB_REDIS_URL (run through tests/redis/with_redis.sh single)");
        return;
    }
    const std::string url = single_redis_url();
    const auto pid = server_pid(url);

    const std::string store = unique_store("tiered-back-redis");
    const std::string key = "tiered-wb-redis/" + store;
    DriverHarness tiered("tiered", {{"tier.0.driver", "memory"}, {"tier.0.store", store}, {"tier.1.driver", "redis"},
                                    {"tier.1.url", url}, {"tier.1.command_timeout_ms", "300000"}, {"write", "back"},
                                    {"write_back_queue_rows", "1"}});
    auto src = tiered.buffer(4096);
    fill_pattern(src.bytes.data(), src.bytes.size(), 53);
    DriverHarness top("memory", {{"store", store}});
    REQUIRE(::kill(pid, SIGSTOP) == 0);
    kvblob_row_result result = KVBLOB_ROW_PENDING;
    bool second_in_top = true;
    std::optional<kvblob::Operation> second;
    {
        // The server cannot have stored anything until it is continued.
        Batch put;
        put.row(key, {make_span(src.handle(), 0, 4096)});
        auto op = tiered.submit(OpKind::put, put);
        const bool final = op.wait(std::chrono::seconds(60));
        if (final) result = op.results()[0].result;
        // The queue (one row) is full while the server is stopped: the next
        // put waits for room, so it has not reached the top tier.
        Batch next;
        next.row(key + "/2", {make_span(src.handle(), 0, 4096)});
        second.emplace(tiered.submit(OpKind::put, next));
        if (final) second_in_top = holds(top, key + "/2");
        ::kill(pid, SIGCONT);
        REQUIRE(final);
    }
    CHECK(result == KVBLOB_ROW_READY);
    CHECK_FALSE(second_in_top);
    REQUIRE(second->wait(std::chrono::seconds(240)));
    CHECK(second->results()[0].result == KVBLOB_ROW_READY);
    second.reset();
    CHECK(holds(top, key));
    REQUIRE(tiered.driver().drain(std::chrono::seconds(240)) == KVBLOB_OK);
    DriverHarness redis("redis", {{"url", url}});
    CHECK(stored(redis, key, 4096) == src.bytes);
    CHECK(stored(redis, key + "/2", 4096) == src.bytes);
    CHECK(redis.one(OpKind::remove, key) == KVBLOB_ROW_READY);
    CHECK(redis.one(OpKind::remove, key + "/2") == KVBLOB_ROW_READY);
}

TEST_CASE("tiered: write=back over a stopped Redis server: a cancel ends a put waiting for room in the queue (R-CAN-1)")
{
    if (!single_redis_url()) {
        MESSAGE("skipped: needs one server in KVBLOB_REDIS_URL (run through tests/redis/with_redis.sh single)");
        return;
    }
    const std::string url = single_redis_url();
    const auto pid = server_pid(url);
    const std::string store = unique_store("tiered-back-cancel");
    const std::string key = "tiered-wb-cancel/" + store;
    std::vector<uint8_t> pattern(4096);
    fill_pattern(pattern.data(), pattern.size(), 71);
    Lines log;
    auto plugin = kvblob::Plugin::load("tiered");
    auto d = plugin.open({{"tier.0.driver", "memory"}, {"tier.0.store", store}, {"tier.1.driver", "redis"},
                          {"tier.1.url", url}, {"tier.1.command_timeout_ms", "300000"}, {"write", "back"},
                          {"write_back_queue_rows", "1"}},
                         log.sink());
    auto region =
        d.register_region({sizeof(kvblob_region_desc_t), KVBLOB_MEMORY_HOST, pattern.data(), pattern.size(), 0, 0});
    DriverHarness top("memory", {{"store", store}});
    kvblob_row_result first = KVBLOB_ROW_PENDING, second = KVBLOB_ROW_PENDING;
    bool second_in_top = true;
    {
        REQUIRE(::kill(pid, SIGSTOP) == 0);
        Continues server{pid};
        // The first row fills the queue (one row), and the stopped server
        // keeps it full: the second put waits for room, and says so.
        Batch one, two;
        one.row(key, {make_span(region.handle(), 0, 4096)});
        two.row(key + "/2", {make_span(region.handle(), 0, 4096)});
        auto op1 = d.submit(OpKind::put, one.get());
        REQUIRE(op1.wait(std::chrono::seconds(60)));
        first = op1.results()[0].result;
        auto op2 = d.submit(OpKind::put, two.get());
        REQUIRE(log.wait_for("a put waits for room in the queue", std::chrono::seconds(60)));
        CHECK(op2.cancel() == KVBLOB_OK);
        // Final while the server is still stopped: the cancel ended the
        // wait, rather than the room the writer frees once it runs.
        REQUIRE(op2.wait(std::chrono::seconds(60)));
        second = op2.results()[0].result;
        second_in_top = holds(top, key + "/2");
    }
    CHECK(first == KVBLOB_ROW_READY);
    CHECK(second == KVBLOB_ROW_CANCELLED);
    CHECK_FALSE(second_in_top);  // a CANCELLED row had no effect
    REQUIRE(d.drain(std::chrono::seconds(240)) == KVBLOB_OK);
    DriverHarness redis("redis", {{"url", url}});
    CHECK(stored(redis, key, 4096) == pattern);
    CHECK(redis.one(OpKind::probe, key + "/2") == KVBLOB_ROW_MISS);
    CHECK(redis.one(OpKind::remove, key) == KVBLOB_ROW_READY);
}

// ---- eviction ------------------------------------------------------------------

TEST_CASE("tiered: a full top tier evicts its least recently used objects, and the hot key stays in it")
{
    TempDir root("kvblob-tiered");
    const std::string store = unique_store("tiered-lru");
    // Room for about ten 4 KiB objects (and their trailers) in the top tier.
    DriverHarness tiered("tiered", memory_over_file(store, root.path(), {{"tier.0.capacity", "40K"}}));
    auto src = tiered.buffer(4096);
    auto dst = tiered.buffer(4096);
    fill_pattern(src.bytes.data(), src.bytes.size(), 59);
    REQUIRE(tiered.one(OpKind::put, "lru/hot", {make_span(src.handle(), 0, 4096)}) == KVBLOB_ROW_READY);
    constexpr int cold = 30;
    for (int c = 0; c < cold; ++c) {
        REQUIRE(tiered.one(OpKind::put, "lru/cold-" + std::to_string(c), {make_span(src.handle(), 0, 4096)}) ==
                KVBLOB_ROW_READY);
        // Served by the top tier: no "from tier 1" in its message.
        Batch get;
        get.row("lru/hot", {make_span(dst.handle(), 0, 4096)});
        auto op = tiered.submit(OpKind::get, get);
        REQUIRE(op.wait(std::chrono::seconds(60)));
        REQUIRE(op.results()[0].result == KVBLOB_ROW_READY);
        CHECK_MESSAGE(op.message(0).empty(), "after cold key ", c, ": ", op.message(0));
    }
    DriverHarness top("memory", {{"store", store}});
    DriverHarness file("file", {{"root", root.path()}});
    CHECK(holds(top, "lru/hot"));
    // The newest is cached (a plain full memory tier would have DECLINED
    // it), the oldest evicted; every one is whole below.
    CHECK(holds(top, "lru/cold-" + std::to_string(cold - 1)));
    CHECK_FALSE(holds(top, "lru/cold-0"));
    int in_top = 0;
    for (int c = 0; c < cold; ++c) {
        CHECK(holds(file, "lru/cold-" + std::to_string(c)));
        in_top += holds(top, "lru/cold-" + std::to_string(c)) ? 1 : 0;
    }
    CHECK(in_top < 10);
    CHECK(stored(top, "lru/hot", 4096) == src.bytes);
}

TEST_CASE("tiered: top_bytes bounds what the top tier holds, least recently used out first")
{
    TempDir root("kvblob-tiered");
    const std::string store = unique_store("tiered-budget");
    DriverHarness tiered("tiered", memory_over_file(store, root.path(), {{"top_bytes", "16K"}}));
    auto src = tiered.buffer(4096, 0x33);
    for (int k = 0; k < 8; ++k)
        REQUIRE(tiered.one(OpKind::put, "budget/" + std::to_string(k), {make_span(src.handle(), 0, 4096)}) ==
                KVBLOB_ROW_READY);
    DriverHarness top("memory", {{"store", store}});
    int in_top = 0;
    for (int k = 0; k < 8; ++k) in_top += holds(top, "budget/" + std::to_string(k)) ? 1 : 0;
    CHECK(in_top == 4);
    CHECK(holds(top, "budget/7"));
    CHECK_FALSE(holds(top, "budget/0"));
}

TEST_CASE("tiered: eviction never takes a write=back object the bottom tier does not hold")
{
    const std::string top_store = unique_store("tiered-lru-back-top"), bottom_store = unique_store("tiered-lru-back");
    // The top tier holds two 4 KiB objects; the bottom tier none (it
    // DECLINES every row), so nothing the top holds is held below.
    DriverHarness tiered("tiered", {{"tier.0.driver", "memory"}, {"tier.0.store", top_store},
                                    {"tier.0.capacity", "9K"}, {"tier.1.driver", "memory"},
                                    {"tier.1.store", bottom_store}, {"tier.1.capacity", "1K"}, {"write", "back"}});
    auto src = tiered.buffer(4096);
    fill_pattern(src.bytes.data(), src.bytes.size(), 61);
    CHECK(tiered.one(OpKind::put, "lrub/a", {make_span(src.handle(), 0, 4096)}) == KVBLOB_ROW_READY);
    CHECK(tiered.one(OpKind::put, "lrub/b", {make_span(src.handle(), 0, 4096)}) == KVBLOB_ROW_READY);
    // Full, and neither is held below: the third is written through, and
    // the bottom tier's DECLINED is its answer.
    CHECK(tiered.one(OpKind::put, "lrub/c", {make_span(src.handle(), 0, 4096)}) == KVBLOB_ROW_DECLINED);
    DriverHarness top("memory", {{"store", top_store}});
    CHECK(stored(top, "lrub/a", 4096) == src.bytes);
    CHECK(stored(top, "lrub/b", 4096) == src.bytes);
    CHECK_FALSE(holds(top, "lrub/c"));
}
