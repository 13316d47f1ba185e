// The loader refuses plugin files that others could have written, and files
// whose pinned SHA-256 does not match, before any of their code runs.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "kvblob/host/config.hpp"
#include "kvblob/host/plugin.hpp"
#include "kvblob/host/sha256.hpp"

namespace fs = std::filesystem;

namespace {

// A private copy of the well-formed fixture plugin, removed with the object.
struct PluginCopy {
    PluginCopy()
    {
        static int n = 0;
        dir = fs::temp_directory_path() / ("kvblob-trust-" + std::to_string(getpid()) + "-" + std::to_string(n++));
        fs::create_directories(dir);
        path = dir / "libkvblob_trusted.so";
        fs::copy_file(KVBLOB_FIXTURE_DIR "/libkvblob_fixture_good.so", path);
        fs::permissions(path, fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read);
    }
    ~PluginCopy() { fs::remove_all(dir); }
    fs::path dir, path;
};

kvblob::LoadError refusal(const fs::path &path, const kvblob::LoadOptions &options)
{
    try {
        kvblob::Plugin::load(path.string(), options);
    } catch (const kvblob::LoadError &e) {
        return e;
    }
    FAIL("loaded " << path);
    throw;
}

}  // namespace

TEST_CASE("a world-writable plugin file is refused before it is opened, unless allowed (R-LOAD-10)")
{
    PluginCopy copy;
    CHECK_NOTHROW(kvblob::Plugin::load(copy.path.string()));
    fs::permissions(copy.path, fs::perms::others_write, fs::perm_options::add);
    auto e = refusal(copy.path, {});
    CHECK(e.stage() == kvblob::LoadStage::open);
    CHECK(e.rule() == "R-LOAD-10");
    CHECK(std::string(e.what()).find("world-writable") != std::string::npos);
    CHECK(std::string(e.what()).find("(allow_untrusted_file to load it anyway)") != std::string::npos);
    kvblob::LoadOptions allow;
    allow.allow_untrusted_file = true;
    CHECK_NOTHROW(kvblob::Plugin::load(copy.path.string(), allow));
}

TEST_CASE("an untrusted plugin file's refusal suggests no setting where none can allow it (R-LOAD-10)")
{
    // The tiered driver loads its tiers so: no setting of its allows a
    // tier's untrusted file, and it says what works instead.
    PluginCopy copy;
    fs::permissions(copy.path, fs::perms::others_write, fs::perm_options::add);
    kvblob::LoadOptions none_allows;
    none_allows.allow_untrusted_words.clear();
    auto e = refusal(copy.path, none_allows);
    CHECK(e.rule() == "R-LOAD-10");
    CHECK(std::string(e.what()).find("world-writable") != std::string::npos);
    CHECK(std::string(e.what()).find("to load it anyway") == std::string::npos);
}

TEST_CASE("a plugin file owned by another user who is not root is refused, unless allowed (R-LOAD-10)")
{
    if (geteuid() != 0) {
        MESSAGE("skipped: giving a file to another user needs root");
        return;
    }
    PluginCopy copy;
    REQUIRE(chown(copy.path.c_str(), 65534, 65534) == 0);  // nobody
    auto e = refusal(copy.path, {});
    CHECK(e.rule() == "R-LOAD-10");
    CHECK(std::string(e.what()).find("owned by user 65534") != std::string::npos);
    kvblob::LoadOptions allow;
    allow.allow_untrusted_file = true;
    CHECK_NOTHROW(kvblob::Plugin::load(copy.path.string(), allow));
}

TEST_CASE("a pinned SHA-256 loads only that exact file (R-LOAD-11)")
{
    PluginCopy copy;
    kvblob::LoadOptions pinned;
    pinned.expected_sha256 = kvblob::sha256_file_hex(copy.path);
    CHECK_NOTHROW(kvblob::Plugin::load(copy.path.string(), pinned));
    std::ofstream(copy.path, std::ios::app) << "one more byte";
    auto e = refusal(copy.path, pinned);
    CHECK(e.stage() == kvblob::LoadStage::open);
    CHECK(e.rule() == "R-LOAD-11");
    CHECK(std::string(e.what()).find(pinned.expected_sha256) != std::string::npos);
}

TEST_CASE("a config file pins the digest and may allow an untrusted file")
{
    PluginCopy copy;
    const auto digest = kvblob::sha256_file_hex(copy.path);
    const auto config = copy.dir / "engine.toml";
    std::ofstream(config) << "[driver]\npath = \"libkvblob_trusted.so\"\nsha256 = \"" << std::string(64, '0') << "\"\n";
    try {
        kvblob::load_configured_plugin(kvblob::read_driver_config(config));
        FAIL("loaded with the wrong digest");
    } catch (const kvblob::LoadError &e) {
        CHECK(e.rule() == "R-LOAD-11");
    }
    std::ofstream(config) << "[driver]\npath = \"libkvblob_trusted.so\"\nsha256 = \"" << digest << "\"\n";
    CHECK_NOTHROW(kvblob::load_configured_plugin(kvblob::read_driver_config(config)));

    fs::permissions(copy.path, fs::perms::others_write, fs::perm_options::add);
    std::ofstream(config) << "[driver]\npath = \"libkvblob_trusted.so\"\nallow_untrusted_file = true\n";
    CHECK_NOTHROW(kvblob::load_configured_plugin(kvblob::read_driver_config(config)));
    std::ofstream(config) << "[driver]\npath = \"libkvblob_trusted.so\"\nsha256 = \"ABC\"\n";
    CHECK_THROWS_WITH_AS(kvblob::read_driver_config(config), doctest::Contains("64 lowercase hex"), kvblob::ConfigError);
}
