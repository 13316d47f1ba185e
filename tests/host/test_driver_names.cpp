// What the loader says about driver names: the drivers it found and the
// nearest one when a name is unknown, a warning when a file named for one
// driver holds another (R-LOAD-6), and the release it tells a plugin.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "kvblob/host/plugin.hpp"
#include "kvblob/host/version.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace fs = std::filesystem;

namespace {

std::string refusal_text(const std::string &spec, const kvblob::LoadOptions &options = {})
{
    try {
        kvblob::Plugin::load(spec, options);
    } catch (const kvblob::LoadError &e) {
        CHECK(e.stage() == kvblob::LoadStage::open);
        CHECK(e.rule() == "R-LOAD-1");
        return e.what();
    }
    FAIL("loaded " << spec);
    return {};
}

// The folder the bundled drivers were built into (lib/kvblob of the build).
fs::path bundled_dir() { return fs::path(KVBLOB_CONFORMANCE_BIN).parent_path().parent_path() / "lib" / "kvblob"; }

}  // namespace

TEST_CASE("an unknown name lists where the loader looked, the drivers there, and the nearest name")
{
    const auto text = refusal_text("memroy");
    INFO(text);
    CHECK(text.find("libkvblob_memroy.so is not in any of [") != std::string::npos);
    CHECK(text.find(fs::canonical(bundled_dir()).string()) != std::string::npos);
    CHECK(text.find("did you mean 'memory'?") != std::string::npos);
    CHECK(text.find("Drivers found: ") != std::string::npos);
    for (const char *name : {"file", "memory", "null", "redis"}) CHECK(text.find(std::string(name)) != std::string::npos);

    // Nothing near: no guess, but still the list.
    const auto far = refusal_text("zzzzzzzzzz");
    CHECK(far.find("did you mean") == std::string::npos);
    CHECK(far.find("or give a path). Drivers found: ") != std::string::npos);
}

TEST_CASE("a folder named twice, by another path, is searched and listed once")
{
    // The bundled folder by a path with a detour, in KVBLOB_DRIVER_PATH,
    // beside the host's own path to it.
    const fs::path detour = bundled_dir() / ".." / "kvblob";
    struct DriverPath {
        explicit DriverPath(const fs::path &dir) { setenv("KVBLOB_DRIVER_PATH", dir.c_str(), 1); }
        ~DriverPath() { unsetenv("KVBLOB_DRIVER_PATH"); }
    } const driver_path(detour);
    const auto text = refusal_text("memroy");
    INFO(text);
    const size_t from = text.find("not in any of [");
    REQUIRE(from != std::string::npos);
    const std::string listed = text.substr(from, text.find(']', from) - from);
    CHECK(listed == "not in any of [" + detour.string());
}

TEST_CASE("a driver found by its short name that calls itself otherwise loads with a warning")
{
    TempDir tmp;
    const fs::path dir(tmp.path());
    fs::copy_file(bundled_dir() / "libkvblob_memory.so", dir / "libkvblob_other.so");
    const std::string info = std::string(KVBLOB_INFO_BIN) + " --no-open ";
    auto misnamed = run_command("KVBLOB_DRIVER_PATH=" + dir.string() + " " + info + "other");
    CHECK(misnamed.exit_code == 0);
    CHECK_MESSAGE(misnamed.output.find("warning: " + (dir / "libkvblob_other.so").string() +
                                       " is named for driver 'other' but calls itself 'memory' (R-LOAD-6)") !=
                      std::string::npos,
                  misnamed.output);
    auto agreed = run_command(info + "memory");
    CHECK(agreed.exit_code == 0);
    CHECK_MESSAGE(agreed.output.find("warning") == std::string::npos, agreed.output);
}

TEST_CASE("the loader tells a plugin the kvblob release, not the ABI version")
{
    auto plugin = kvblob::Plugin::load(std::string(KVBLOB_FIXTURE_DIR) + "/libkvblob_fixture_echo_host_version.so");
    const std::string release = kvblob::release_version();  // "0.1.0"
    // Before, the loader sent the ABI version (1.0) here.
    CHECK(plugin.version() == "host-" + release.substr(0, release.rfind('.')));
}
