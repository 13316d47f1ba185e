// An engine's driver config: what it reads, and how each mistake is named.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "kvblob/host/config.hpp"
#include "host/config_file.hpp"

namespace fs = std::filesystem;

namespace {

using config_test::ConfigFile;
using config_test::config_error;

}  // namespace

TEST_CASE("a config names the driver, its options in order, and a search path relative to the file")
{
    ConfigFile f(R"([driver]
name = "memory"
search_path = ["plugins", "/opt/kvblob"]

[driver.options]
store = "engine-a"
workers = 4
hints = false
)");
    auto c = kvblob::read_driver_config(f.path);
    CHECK(c.driver == "memory");
    REQUIRE(c.options.size() == 3);
    CHECK(c.options[0] == std::pair<std::string, std::string>("store", "engine-a"));
    CHECK(c.options[1] == std::pair<std::string, std::string>("workers", "4"));
    CHECK(c.options[2] == std::pair<std::string, std::string>("hints", "false"));
    REQUIRE(c.search_path.size() == 2);
    CHECK(c.search_path[0] == fs::absolute(f.dir / "plugins"));
    CHECK(c.search_path[1] == fs::path("/opt/kvblob"));
}

TEST_CASE("a configured driver loads and opens with its options")
{
    ConfigFile f("[driver]\nname = \"memory\"\n[driver.options]\nmode = \"blocking\"\n");
    auto c = kvblob::read_driver_config(f.path);
    auto plugin = kvblob::load_configured_plugin(c);
    CHECK(plugin.name() == "memory");
    CHECK_NOTHROW(plugin.open(c.options));
}

TEST_CASE("a bad file is refused with line and column")
{
    auto e = config_error("[driver]\nname = \"memory\n");
    CHECK(e.line() == 2);
    CHECK(e.column() > 0);
}

TEST_CASE("unknown keys are refused where they stand")
{
    auto top = config_error("[driver]\nname = \"memory\"\n\n[engine]\nx = 1\n");
    CHECK(top.line() == 4);
    CHECK(std::string(top.what()).find("unknown key 'engine'") != std::string::npos);
    auto inner = config_error("[driver]\nname = \"memory\"\nnmae = \"oops\"\n");
    CHECK(inner.line() == 3);
    CHECK(std::string(inner.what()).find("unknown key 'nmae' in [driver]") != std::string::npos);
}

TEST_CASE("the driver must be named once, by name or path")
{
    CHECK(std::string(config_error("title = 1\n").what()).find("unknown key 'title'") != std::string::npos);
    CHECK(std::string(config_error("[other]\n").what()).find("unknown key 'other'") != std::string::npos);
    CHECK(std::string(config_error("[driver]\n").what()).find("needs name") != std::string::npos);
    CHECK(std::string(config_error("[driver]\nname = \"a\"\npath = \"b.so\"\n").what()).find("not both") !=
          std::string::npos);
    CHECK(std::string(config_error("[driver]\nname = 3\n").what()).find("non-empty string") != std::string::npos);
    CHECK(std::string(config_error("[driver]\nname = \"m\"\n[driver.options]\nx = [1]\n").what())
              .find("option 'x' must be") != std::string::npos);
    CHECK(std::string(config_error("[driver]\nname = \"m\"\nsearch_path = \"plugins\"\n").what())
              .find("search_path must be an array") != std::string::npos);
}

TEST_CASE("a file given as name is refused with a pointer to path")
{
    for (const char *value : {"../x.so", "plugins/libkvblob_x.so", "libkvblob_x.so", "..x"}) {
        const auto e = config_error(std::string("[driver]\nname = \"") + value + "\"\n");
        const std::string what = e.what();
        CHECK_MESSAGE(what.find("is a file, not a driver name: write path = \"" + std::string(value) + "\"") !=
                          std::string::npos,
                      what);
        CHECK(e.line() == 2);
    }
    // A short name is still a name.
    ConfigFile ok("[driver]\nname = \"my-store_2\"\n");
    CHECK(kvblob::read_driver_config(ok.path).driver == "my-store_2");
}

TEST_CASE("a missing file, a missing plugin and a refused plugin each say so")
{
    CHECK_THROWS_WITH_AS(kvblob::read_driver_config("/nonexistent/engine.toml"), doctest::Contains("no such file"),
                         kvblob::ConfigError);

    ConfigFile missing("[driver]\nname = \"no-such-store\"\n");
    try {
        kvblob::load_configured_plugin(kvblob::read_driver_config(missing.path));
        FAIL("loaded");
    } catch (const kvblob::LoadError &e) {
        CHECK(e.stage() == kvblob::LoadStage::open);
        CHECK(std::string(e.what()).find("libkvblob_no-such-store.so") != std::string::npos);
        CHECK(std::string(e.what()).find(missing.path.string()) != std::string::npos);
    }

    // A refused plugin, found through the config's own search path.
    ConfigFile refused("[driver]\nname = \"fixture_no_entry\"\nsearch_path = [\"" KVBLOB_FIXTURE_DIR "\"]\n");
    try {
        kvblob::load_configured_plugin(kvblob::read_driver_config(refused.path));
        FAIL("loaded");
    } catch (const kvblob::LoadError &e) {
        CHECK(e.stage() == kvblob::LoadStage::entry);
        CHECK(e.rule() == "R-LOAD-2");
        CHECK(std::string(e.what()).find(refused.path.string()) != std::string::npos);
    }
}

TEST_CASE("a relative plugin path is relative to the config file")
{
    ConfigFile f("[driver]\npath = \"drivers/libkvblob_x.so\"\n");
    CHECK(kvblob::read_driver_config(f.path).driver == (f.dir / "drivers/libkvblob_x.so").string());
}

TEST_CASE("an option value the driver refuses is reported at its line in the file (R-OPN-1)")
{
    ConfigFile f("[driver]\nname = \"memory\"\n\n[driver.options]\nmode = \"blocking\"\nworkers = \"many\"\n");
    const auto c = kvblob::read_driver_config(f.path);
    const auto plugin = kvblob::load_configured_plugin(c);
    try {
        kvblob::open_configured_driver(plugin, c);
        FAIL("opened");
    } catch (const kvblob::ConfigError &e) {
        CHECK(e.file() == fs::absolute(f.path));
        CHECK(e.line() == 6);
        CHECK(e.column() == 11);
        const std::string what = e.what();
        CHECK_MESSAGE(what.find(f.path.string() + ":6:11: option 'workers' = \"many\" refused by driver memory") !=
                          std::string::npos,
                      what);
        CHECK(what.find("R-OPN-1") != std::string::npos);
    }
    // The same value given by the caller, not the file: the loader's own error.
    ConfigFile good("[driver]\nname = \"memory\"\n[driver.options]\nmode = \"blocking\"\n");
    const auto g = kvblob::read_driver_config(good.path);
    CHECK_THROWS_AS(kvblob::open_configured_driver(plugin, g, {{"workers", "many"}}), kvblob::LoadError);
    CHECK_NOTHROW(kvblob::open_configured_driver(plugin, g));
    // An unknown option in the file is named where it stands too.
    ConfigFile unknown("[driver]\nname = \"memory\"\n[driver.options]\nwrokers = 2\n");
    const auto u = kvblob::read_driver_config(unknown.path);
    try {
        kvblob::open_configured_driver(plugin, u);
        FAIL("opened");
    } catch (const kvblob::ConfigError &e) {
        CHECK(e.line() == 4);
        CHECK(std::string(e.what()).find("unknown option 'wrokers'") != std::string::npos);
    }
}

TEST_CASE("a float option reaches the driver as Python's open() gives it, and one that is not finite is refused")
{
    ConfigFile f(R"([driver]
name = "memory"

[driver.options]
max_rows = 16.0
ratio = 2.5
small = 1e-7
)");
    auto c = kvblob::read_driver_config(f.path);
    REQUIRE(c.options.size() == 3);
    CHECK(c.options[0].second == "16");    // as Python: an integral float as an integer
    CHECK(c.options[1].second == "2.5");   // repr(2.5)
    CHECK(c.options[2].second == "1e-07"); // repr(1e-7)
    const auto e = config_error("[driver]\nname = \"memory\"\n[driver.options]\nratio = nan\n");
    CHECK_MESSAGE(std::string(e.what()).find("option 'ratio' is not a finite number") != std::string::npos, e.what());
}
