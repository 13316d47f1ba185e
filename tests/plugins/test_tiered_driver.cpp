// The tiered driver (plugins/tiered): its options, fall-through and
// promotion of gets, write-through puts, a full top tier, tiers that refuse
// to open. What each tier holds is read by opening that tier's store
// directly (the memory driver with the same store name, the file driver on
// the same root).
#include <doctest/doctest.h>

#include <mutex>
#include <string>
#include <vector>

#include "plugins/driver_harness.hpp"
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

    // The tiered get's access ended after its promotion put's: tier 0 has it.
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
