// kvblob-info as an operator meets it: exit codes and what it prints.
#include <doctest/doctest.h>

#include "kvblob/host/plugin.hpp"
#include "support/process.hpp"

namespace {

CommandResult info(const std::string &args) { return run_command(std::string(KVBLOB_INFO_BIN) + " " + args); }
std::string fixture(const std::string &name)
{
    return std::string(KVBLOB_FIXTURE_DIR) + "/libkvblob_fixture_" + name + ".so";
}

}  // namespace

TEST_CASE("kvblob-info on libc names the missing entry and exits 3")
{
    auto r = info("libc.so.6");
    CHECK(r.exit_code == 3);
    CHECK(r.output.find("stage entry") != std::string::npos);
    CHECK(r.output.find("kvblob_plugin_negotiate") != std::string::npos);
    CHECK(r.output.find("R-LOAD-2") != std::string::npos);
}

TEST_CASE("kvblob-info on a missing file names the file")
{
    auto r = info("/nonexistent/dir/libkvblob_x.so");
    CHECK(r.exit_code == 3);
    CHECK(r.output.find("/nonexistent/dir/libkvblob_x.so") != std::string::npos);
}

TEST_CASE("kvblob-info on every fixture prints its stage and rule")
{
    const struct {
        const char *name, *stage, *rule;
    } cases[] = {
        {"not_elf", "open", "R-LOAD-1"},          {"no_entry", "entry", "R-LOAD-2"},
        {"entry_null", "negotiate", "R-LOAD-3"},  {"abi_too_new", "negotiate", "R-LOAD-3"},
        {"abi_too_old", "negotiate", "R-LOAD-3"}, {"out_of_range", "negotiate", "R-LOAD-3"},
        {"small_struct", "validate", "R-LOAD-4"}, {"null_slot", "validate", "R-LOAD-5"},
        {"empty_name", "validate", "R-LOAD-6"},   {"reserved_cap", "init", "R-LOAD-8"},
        {"zero_limit", "init", "R-LOAD-8"},       {"open_fails", "init", "R-LOAD-9"},
    };
    for (const auto &c : cases) {
        INFO("fixture " << c.name);
        auto r = info(fixture(c.name));
        CHECK(r.exit_code == 3);
        CHECK(r.output.find(std::string("stage ") + c.stage) != std::string::npos);
        CHECK(r.output.find(c.rule) != std::string::npos);
        auto j = info("--json " + fixture(c.name));
        CHECK(j.exit_code == 3);
        CHECK(j.output.find(std::string("\"stage\":\"") + c.stage + "\"") != std::string::npos);
    }
}

TEST_CASE("kvblob-info on a good plugin prints capabilities, limits and options")
{
    auto r = info(fixture("good"));
    CHECK(r.exit_code == 0);
    CHECK(r.output.find("capabilities: absent_is_miss") != std::string::npos);
    CHECK(r.output.find("max_rows_per_op     16") != std::string::npos);
    CHECK(r.output.find("greeting (string, default 'hello')") != std::string::npos);
    auto j = info("--json " + fixture("good"));
    CHECK(j.exit_code == 0);
    CHECK(j.output.find("\"capabilities\":[\"absent_is_miss\"]") != std::string::npos);
    CHECK(j.output.find("\"max_object_bytes\":null") != std::string::npos);
}

TEST_CASE("kvblob-info usage errors exit 2, while --help and --version exit 0")
{
    CHECK(info("").exit_code == 2);
    CHECK(info(fixture("good") + " --option nokeyvalue").exit_code == 2);
    // A secret given with the wrong separator is not echoed: only what can
    // be a key.
    auto colon = info("memory --option token:hunter2-colon");
    CHECK(colon.exit_code == 2);
    CHECK(colon.output.find("option 'token... (the rest not shown)' is not key=value") != std::string::npos);
    CHECK(colon.output.find("hunter2-colon") == std::string::npos);
    auto help = info("--help");
    CHECK(help.exit_code == 0);
    CHECK(help.output.find("Exit codes") != std::string::npos);
    auto version = info("--version");
    CHECK(version.exit_code == 0);
    CHECK(version.output.find("ABI 1.1") != std::string::npos);
}

TEST_CASE("KVBLOB_LOADER_DEBUG traces every stage")
{
    auto r = run_command("KVBLOB_LOADER_DEBUG=1 " + std::string(KVBLOB_INFO_BIN) + " " + fixture("good"));
    CHECK(r.exit_code == 0);
    for (const char *stage : {"[open]", "[entry]", "[negotiate]", "[validate]", "[init]"})
        CHECK_MESSAGE(r.output.find(stage) != std::string::npos, stage);
}

TEST_CASE("kvblob-info on an option the driver refuses lists the options it accepts")
{
    auto r = info("memory --option no_such_option=1");
    CHECK(r.exit_code == 3);
    CHECK(r.output.find("R-OPN-1") != std::string::npos);
    CHECK_MESSAGE(r.output.find("The driver 'memory' accepts these options (--option name=value):") !=
                      std::string::npos,
                  r.output);
    // Each option the table describes, with its type and default.
    CHECK(r.output.find("  mode (choice: ") != std::string::npos);
    CHECK(r.output.find("  max_ops_in_flight (int, default '") != std::string::npos);

    auto json = info("memory --json --option no_such_option=1");
    CHECK(json.exit_code == 3);
    CHECK(json.output.find("\"accepted_options\":[{\"name\":") != std::string::npos);
    CHECK(json.output.find("\"name\":\"mode\"") != std::string::npos);

    // A refusal for another reason lists nothing.
    auto other = info(fixture("open_fails"));
    CHECK(other.exit_code == 3);
    CHECK(other.output.find("accepts") == std::string::npos);
}

TEST_CASE("kvblob-info with a password found inside the host's own marker answers, the password removed")
{
    // The connect error names localhost: the password "host" is in it, and
    // in the marker that replaces it. Under timeout: a hang exits 124.
    auto r = run_command(std::string("timeout 20 ") + KVBLOB_INFO_BIN + " redis -o url=redis://localhost:1 -o password=host");
    CHECK_MESSAGE(r.exit_code == 3, r.output);
    CHECK_MESSAGE(r.output.find(std::string("local") + kvblob::removed_secret) != std::string::npos, r.output);
}
