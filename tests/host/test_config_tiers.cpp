// The tiered driver's tiers in an engine's config file: [[driver.tiers]]
// tables become the flat tier.N.* options, the flat form still works, and
// each mistake names the file, the table's index and the key.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "kvblob/host/config.hpp"
#include "host/config_file.hpp"
#include "support/temp_dir.hpp"

namespace fs = std::filesystem;

namespace {

using config_test::ConfigFile;
using config_test::config_error;

bool has(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("config tiers: each [[driver.tiers]] table is tier N's driver and options, after [driver.options]")
{
    ConfigFile f("[driver]\nname = \"tiered\"\n"
                 "[driver.options]\nworkers = 2\n"
                 "[[driver.tiers]]\ndriver = \"memory\"\nstore = \"hot\"\ncapacity = \"8M\"\n"
                 "[[driver.tiers]]\nroot = \"/var/cache/kv\"\ndriver = \"file\"\nfsync = true\n"
                 "[[driver.tiers]]\ndriver = \"plugins/libkvblob_x.so\"\nport = 6379\n");
    const auto config = kvblob::read_driver_config(f.path);
    // The tier's driver first, then its options in the order written.
    const kvblob::Options expected{{"workers", "2"},
                                   {"tier.0.driver", "memory"},
                                   {"tier.0.store", "hot"},
                                   {"tier.0.capacity", "8M"},
                                   {"tier.1.driver", "file"},
                                   {"tier.1.root", "/var/cache/kv"},
                                   {"tier.1.fsync", "true"},
                                   {"tier.2.driver", (f.dir / "plugins/libkvblob_x.so").string()},
                                   {"tier.2.port", "6379"}};
    CHECK(config.options == expected);
    CHECK(config.tier_tables == 3);
    REQUIRE(config.option_positions.size() == expected.size());
    CHECK(config.option_positions[1].line == 6);  // tier.0.driver
    CHECK(config.option_positions[5].line == 10);  // tier.1.root
}

TEST_CASE("config tiers: the array form and the flat form open the same tiered store")
{
    TempDir root("kvblob-config-tiers");
    for (const std::string &tiers :
         {"[[driver.tiers]]\ndriver = \"memory\"\nstore = \"config-tiers-a\"\n"
          "[[driver.tiers]]\ndriver = \"file\"\nroot = \"" + root.path() + "\"\n",
          "[driver.options]\n\"tier.0.driver\" = \"memory\"\n\"tier.0.store\" = \"config-tiers-b\"\n"
          "\"tier.1.driver\" = \"file\"\n\"tier.1.root\" = \"" + root.path() + "\"\n"}) {
        CAPTURE(tiers);
        ConfigFile f("[driver]\nname = \"tiered\"\n" + tiers);
        const auto config = kvblob::read_driver_config(f.path);
        const auto plugin = kvblob::load_configured_plugin(config);
        auto driver = kvblob::open_configured_driver(plugin, config);
        CHECK(driver.name() == "tiered");
    }
}

TEST_CASE("config tiers: a mistake in a tier names the file, the table's index and the key")
{
    const std::string head = "[driver]\nname = \"tiered\"\n[[driver.tiers]]\ndriver = \"memory\"\n";
    {
        const auto e = config_error(head + "[[driver.tiers]]\nroot = \"/x\"\n");
        CHECK(has(e.what(), "driver.tiers[1] (tier 1) has no key 'driver'"));
        CHECK(e.line() == 5);
    }
    {
        // Flat tier keys written bare: TOML reads them as a table "tier".
        const auto e = config_error("[driver]\nname = \"tiered\"\n[driver.options]\ntier.0.driver = \"memory\"\n");
        CHECK(has(e.what(), "option 'tier' is a table, not a value: a key with dots in it is quoted in TOML"));
        CHECK(e.line() == 4);
    }
    {
        const auto e = config_error(head + "[[driver.tiers]]\ndriver = \"file\"\nroot = [\"/x\"]\n");
        CHECK(has(e.what(), "driver.tiers[1] (tier 1), key 'root' must be a string, a number or a boolean"));
        CHECK(e.line() == 7);
    }
    {
        const auto e = config_error(head + "[[driver.tiers]]\ndriver = 3\n");
        CHECK(has(e.what(), "driver.tiers[1] (tier 1), key 'driver': must be a non-empty string"));
        CHECK(e.line() == 6);
    }
    {
        const auto e = config_error(head + "[[driver.tiers]]\ndriver = \"file\"\nroot = \"/x\\u0000y\"\n");
        CHECK(has(e.what(), "driver.tiers[1] (tier 1), key 'root' holds a NUL character"));
    }
    {
        const auto e = config_error("[driver]\nname = \"tiered\"\ntiers = [\"memory\"]\n");
        CHECK(has(e.what(), "driver.tiers[0] (tier 0) must be a table"));
    }
    {
        const auto e = config_error("[driver]\nname = \"tiered\"\ntiers = 2\n");
        CHECK(has(e.what(), "driver.tiers must be an array of tables"));
    }
    {
        // Both spellings of the tiers: refused at the flat one.
        const auto e = config_error("[driver]\nname = \"tiered\"\n[driver.options]\n\"tier.1.root\" = \"/x\"\n" +
                                    head.substr(head.find("[[")));
        CHECK(has(e.what(), "option 'tier.1.root' in [driver.options] gives a tier, and so does [[driver.tiers]]"));
        CHECK(e.line() == 4);
    }
}

TEST_CASE("config tiers: an option a tier's driver refuses is reported at its line, as the tier's key")
{
    TempDir root("kvblob-config-tiers");
    ConfigFile f("[driver]\nname = \"tiered\"\n"
                 "[[driver.tiers]]\ndriver = \"memory\"\nstore = \"config-tiers-refused\"\n"
                 "[[driver.tiers]]\ndriver = \"file\"\nroot = \"" + root.path() + "\"\nno_such_option = 7\n");
    const auto config = kvblob::read_driver_config(f.path);
    const auto plugin = kvblob::load_configured_plugin(config);
    try {
        kvblob::open_configured_driver(plugin, config);
        FAIL("opened");
    } catch (const kvblob::ConfigError &e) {
        CHECK(e.file() == fs::absolute(f.path));
        CHECK(e.line() == 9);
        CHECK(has(e.what(), "driver.tiers[1] (tier 1), key 'no_such_option' = \"7\" refused by driver tiered"));
        CHECK(has(e.what(), "tier 1 (file)"));  // the tier's driver
        CHECK(has(e.what(), "R-OPN-1"));        // and the rule it failed
    }
}

namespace {

// The ConfigError opening config's driver gives.
kvblob::ConfigError open_refusal(const ConfigFile &f)
{
    const auto config = kvblob::read_driver_config(f.path);
    const auto plugin = kvblob::load_configured_plugin(config);
    try {
        kvblob::open_configured_driver(plugin, config);
    } catch (const kvblob::ConfigError &e) {
        CHECK(e.file() == fs::absolute(f.path));
        return e;
    }
    FAIL("opened:\n" << f.path);
    throw;
}

}  // namespace

TEST_CASE("config tiers: a tier's refused option is that tier's, not an option of the same name elsewhere")
{
    const std::string tiered = "[driver]\nname = \"tiered\"\n";
    SUBCASE("the tiered driver's own option of the same name is valid")
    {
        ConfigFile f(tiered + "[driver.options]\nworkers = 2\n"                         // line 4
                     "[[driver.tiers]]\ndriver = \"memory\"\nworkers = 2\n"             // line 7
                     "[[driver.tiers]]\ndriver = \"memory\"\nstore = \"config-tiers-workers\"\n"
                     "workers = \"lots\"\n");                                           // line 11
        const auto e = open_refusal(f);
        CAPTURE(e.what());
        CHECK(e.line() == 11);
        CHECK(has(e.what(), "driver.tiers[1] (tier 1), key 'workers' = \"lots\" refused by driver tiered"));
    }
    SUBCASE("a limit every driver takes")
    {
        ConfigFile f(tiered + "[driver.options]\nmax_object_bytes = \"1M\"\n"
                     "[[driver.tiers]]\ndriver = \"memory\"\n"
                     "[[driver.tiers]]\ndriver = \"memory\"\nstore = \"config-tiers-limit\"\n"
                     "max_object_bytes = \"zzz\"\n");  // line 10
        const auto e = open_refusal(f);
        CAPTURE(e.what());
        CHECK(e.line() == 10);
        CHECK(has(e.what(), "driver.tiers[1] (tier 1), key 'max_object_bytes' = \"zzz\""));
    }
    SUBCASE("a tier's key that reads as a sibling tier's option")
    {
        TempDir root("kvblob-config-tiers");
        ConfigFile f(tiered + "[[driver.tiers]]\ndriver = \"memory\"\n\"tier.1.root\" = \"/nonexistent\"\n"  // line 5
                     "[[driver.tiers]]\ndriver = \"file\"\nroot = \"" + root.path() + "\"\n");
        const auto e = open_refusal(f);
        CAPTURE(e.what());
        CHECK(e.line() == 5);
        CHECK(has(e.what(), "driver.tiers[0] (tier 0), key 'tier.1.root' = \"/nonexistent\""));
    }
    SUBCASE("a tier of tiers: the option of the tier it names in turn")
    {
        ConfigFile f(tiered + "[[driver.tiers]]\ndriver = \"memory\"\nstore = \"config-tiers-nested-top\"\n"
                     "[[driver.tiers]]\ndriver = \"tiered\"\n"
                     "\"tier.0.driver\" = \"memory\"\n\"tier.0.store\" = \"config-tiers-nested-0\"\n"
                     "\"tier.0.workers\" = 2\n"
                     "\"tier.1.driver\" = \"memory\"\n\"tier.1.store\" = \"config-tiers-nested-1\"\n"
                     "\"tier.1.workers\" = \"lots\"\n");  // line 13
        const auto e = open_refusal(f);
        CAPTURE(e.what());
        CHECK(e.line() == 13);
        CHECK(has(e.what(), "driver.tiers[1] (tier 1), key 'tier.1.workers' = \"lots\""));
    }
}

TEST_CASE("config tiers: a tier that cannot be loaded or opened is reported at its driver key")
{
    const std::string head = "[driver]\nname = \"tiered\"\n[[driver.tiers]]\ndriver = \"memory\"\n"
                             "store = \"config-tiers-failed\"\n";
    SUBCASE("a driver found nowhere")
    {
        ConfigFile f(head + "[[driver.tiers]]\ndriver = \"no-such-tier-driver\"\n");  // line 7
        const auto e = open_refusal(f);
        CAPTURE(e.what());
        CHECK(e.line() == 7);
        CHECK(e.column() == 10);
        CHECK(has(e.what(), "driver.tiers[1] (tier 1), key 'driver' = \"no-such-tier-driver\": driver tiered ("));
        CHECK(has(e.what(), "could not load or open the tier: [R-LOAD-9]"));  // the tiered driver's rule
        CHECK(has(e.what(), "tier 1 (no-such-tier-driver) refused: stage open, R-LOAD-1"));  // and the tier's
    }
    SUBCASE("a path to a file that is not a plugin")
    {
        ConfigFile f(head + "[[driver.tiers]]\ndriver = \"not-a-plugin.so\"\n");
        std::ofstream(f.dir / "not-a-plugin.so") << "text\n";
        const auto e = open_refusal(f);
        CAPTURE(e.what());
        CHECK(e.line() == 7);
        CHECK(has(e.what(), "driver.tiers[1] (tier 1), key 'driver' = \"" + (f.dir / "not-a-plugin.so").string()));
        CHECK(has(e.what(), "R-LOAD-1"));
    }
    SUBCASE("a store that cannot be reached")
    {
        ConfigFile f(head + "[[driver.tiers]]\ndriver = \"redis\"\nurl = \"redis://127.0.0.1:1\"\n"
                     "connect_timeout_ms = 200\n");
        const auto e = open_refusal(f);
        CAPTURE(e.what());
        CHECK(e.line() == 7);
        CHECK(has(e.what(), "driver.tiers[1] (tier 1), key 'driver' = \"redis\""));
        CHECK(has(e.what(), "tier 1 (redis) refused: stage init"));
    }
    SUBCASE("the flat form: at the tier.N.driver option")
    {
        ConfigFile f("[driver]\nname = \"tiered\"\n[driver.options]\n\"tier.0.driver\" = \"memory\"\n"
                     "\"tier.1.driver\" = \"no-such-tier-driver\"\n");  // line 5
        const auto e = open_refusal(f);
        CAPTURE(e.what());
        CHECK(e.line() == 5);
        CHECK(has(e.what(), "option 'tier.1.driver' = \"no-such-tier-driver\": driver tiered ("));
    }
}

TEST_CASE("config tiers: an untrusted tier file is refused, and the refusal suggests what works for a tier")
{
    ConfigFile f("[driver]\nname = \"tiered\"\nallow_untrusted_file = true\n"
                 "[[driver.tiers]]\ndriver = \"libkvblob_copied.so\"\n"  // line 5
                 "[[driver.tiers]]\ndriver = \"memory\"\nstore = \"config-tiers-untrusted\"\n");
    const fs::path copy = f.dir / "libkvblob_copied.so";
    fs::copy_file(std::string(KVBLOB_PLUGIN_DIR) + "/libkvblob_memory.so", copy);
    fs::permissions(copy, fs::perms::others_write, fs::perm_options::add);
    const auto e = open_refusal(f);
    CAPTURE(e.what());
    CHECK(e.line() == 5);
    CHECK(has(e.what(), "R-LOAD-10: the file is world-writable"));
    // allow_untrusted_file = true is there, and allows the tiered driver's
    // own file only (plugins/tiered/README.md): suggesting it is no help.
    CHECK_FALSE(has(e.what(), "to load it anyway"));
    CHECK(has(e.what(), "no setting allows a tier's untrusted file"));
    CHECK(has(e.what(), "owned by root or this process's user"));
}
