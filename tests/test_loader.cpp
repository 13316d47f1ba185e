// Every load failure has a fixture; each is refused at the right stage, with
// the right rule, and a message that says what to fix.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "kvblob/host/plugin.hpp"

namespace {

std::string fixture(const std::string &name)
{
    return std::string(KVBLOB_FIXTURE_DIR) + "/libkvblob_fixture_" + name + ".so";
}

struct Refusal {
    kvblob::LoadStage stage;
    std::string rule;
    std::string message;
    std::string dlerror;
};

Refusal refusal_of(const std::string &spec, const kvblob::Options &options = {})
{
    try {
        auto plugin = kvblob::Plugin::load(spec);
        auto driver = plugin.open(options);
    } catch (const kvblob::LoadError &e) {
        const std::string what = e.what();
        CHECK_MESSAGE(what.find(e.file()) != std::string::npos, "the message names the file: " << what);
        CHECK_MESSAGE(what.find(std::string("at stage ") + kvblob::to_string(e.stage())) != std::string::npos,
                      "the message names the stage: " << what);
        CHECK_MESSAGE(what.find("[" + e.rule() + "]") != std::string::npos, "the message names the rule: " << what);
        return {e.stage(), e.rule(), e.what(), e.dlerror_text()};
    }
    FAIL("plugin " << spec << " was not refused");
    return {};
}

void expect(const std::string &name, kvblob::LoadStage stage, const std::string &rule, const std::string &needle)
{
    INFO("fixture " << name);
    auto r = refusal_of(fixture(name));
    CHECK(r.stage == stage);
    CHECK(r.rule == rule);
    CHECK_MESSAGE(r.message.find(needle) != std::string::npos, r.message);
}

}  // namespace

TEST_CASE("the well-formed fixture loads, opens, and reports what it declared")
{
    auto plugin = kvblob::Plugin::load(fixture("good"));
    CHECK(plugin.name() == "fixture");
    CHECK(plugin.version() == "0.0.1");
    CHECK(plugin.abi_version() == KVBLOB_ABI_1_0);  // the fixture speaks 1.0 only
    REQUIRE(plugin.options().size() == 1);
    CHECK(std::string(plugin.options()[0].name) == "greeting");
    auto driver = plugin.open();
    CHECK(driver.caps().max_rows_per_op == 16);
    CHECK(driver.has(KVBLOB_CAP_ABSENT_IS_MISS));
    CHECK_FALSE(driver.has(KVBLOB_CAP_PROBE));
    CHECK(driver.scenarios() == nullptr);
}

TEST_CASE("load failures: stage, rule and message")
{
    using S = kvblob::LoadStage;
    expect("not_elf", S::open, "R-LOAD-1", "cannot load");
    expect("no_entry", S::entry, "R-LOAD-2", "kvblob_plugin_negotiate");
    expect("entry_null", S::negotiate, "R-LOAD-3", "NULL plugin table");
    expect("abi_too_new", S::negotiate, "R-LOAD-3", "speaks ABI 2.0, newer");
    expect("abi_too_old", S::negotiate, "R-LOAD-3", "speaks ABI 0.9, older");
    expect("out_of_range", S::negotiate, "R-LOAD-3", "chose ABI 1.7, outside");
    expect("small_struct", S::validate, "R-LOAD-4", "struct_size 16");
    expect("null_slot", S::validate, "R-LOAD-5", "'poll' is NULL");
    expect("empty_name", S::validate, "R-LOAD-6", "name is NULL, empty");
    expect("reserved_cap", S::init, "R-LOAD-8", "reserved capability bits set for ABI 1.0: 0x10000000000");
    expect("zero_limit", S::init, "R-LOAD-8", "max_key_bytes is 0");
    expect("notify_at_1_0", S::init, "R-LOAD-8", "reserved capability bits set for ABI 1.0: 0x40");
    expect("reserved_option_flag", S::validate, "R-LOAD-7", "option 'greeting' sets reserved flag bits");
    expect("open_fails", S::init, "R-LOAD-9", "cannot reach the store at fixture://nowhere");
    expect("wild_extension", S::init, "R-LOAD-12", "does not lie inside one loaded segment of the plugin's own image");
    // Every pointer the plugin hands over is checked before it is read or
    // called: a wild one is a refusal under its member's rule, not a crash.
    expect("wild_table", S::negotiate, "R-LOAD-3", "a plugin table that is not readable: 0x10000 is not readable memory");
    expect("wild_slot", S::validate, "R-LOAD-5", "slot 'poll' does not point at code: 0x10000 is not inside an executable segment");
    expect("wild_name", S::validate, "R-LOAD-6", "not a readable string (0x10000 is not readable memory)");
    expect("wild_options", S::validate, "R-LOAD-7", "the options array is not readable: 0x10000 is not readable memory");
    expect("wild_scenario_slot", S::init, "R-LOAD-12", "slot stage_full_pool does not point at code");
}

TEST_CASE("a file that is not a plugin quotes the dynamic linker")
{
    auto r = refusal_of(fixture("not_elf"));
    CHECK_FALSE(r.dlerror.empty());
    CHECK(r.message.find("dlerror:") != std::string::npos);
}

TEST_CASE("a missing file and an unknown name are named")
{
    auto missing = refusal_of("/nonexistent/libkvblob_nothing.so");
    CHECK(missing.stage == kvblob::LoadStage::open);
    CHECK(missing.message.find("/nonexistent/libkvblob_nothing.so") != std::string::npos);
    auto unknown = refusal_of("no-such-driver");
    CHECK(unknown.stage == kvblob::LoadStage::open);
    CHECK(unknown.message.find("libkvblob_no-such-driver.so") != std::string::npos);
    CHECK(unknown.message.find("KVBLOB_DRIVER_PATH") != std::string::npos);
}

TEST_CASE("a name or path holding a NUL is refused, not cut short to the file before it")
{
    // Cut at the NUL, this names the good fixture, which would load.
    const std::string spec = fixture("libkvblob_fixture_good.so") + std::string("\0.evil", 6);
    auto r = refusal_of(spec);
    CHECK(r.stage == kvblob::LoadStage::open);
    CHECK(r.rule == "R-LOAD-1");
    CHECK(r.message.find("holds a NUL character") != std::string::npos);
}

TEST_CASE("libc is refused for its missing entry")
{
    auto r = refusal_of("libc.so.6");
    CHECK(r.stage == kvblob::LoadStage::entry);
    CHECK(r.rule == "R-LOAD-2");
}

TEST_CASE("an option the driver refuses is R-OPN-1 with the driver's words")
{
    auto r = refusal_of(fixture("good"), {{"fail", "1"}});
    CHECK(r.stage == kvblob::LoadStage::init);
    CHECK(r.rule == "R-OPN-1");
    CHECK(r.message.find("option 'fail'") != std::string::npos);
}

TEST_CASE("every problem of a stage is listed, not only the first")
{
    try {
        kvblob::Plugin::load(fixture("two_problems"));
        FAIL("not refused");
    } catch (const kvblob::LoadError &e) {
        CHECK(e.stage() == kvblob::LoadStage::validate);
        REQUIRE(e.problems().size() == 2);
        CHECK(e.problems()[0].rule == "R-LOAD-5");
        CHECK(e.problems()[1].rule == "R-LOAD-6");
    }
}

TEST_CASE("short names are found on KVBLOB_DRIVER_PATH")
{
    setenv("KVBLOB_DRIVER_PATH", "/nonexistent:" KVBLOB_FIXTURE_DIR, 1);
    auto plugin = kvblob::Plugin::load("fixture_good");
    CHECK(plugin.path() == std::filesystem::path(fixture("good")));
    unsetenv("KVBLOB_DRIVER_PATH");
}
