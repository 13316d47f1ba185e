// kvblob-conformance as a vendor's CI meets it: the list, the reports, the
// expectations file, --strict, and the rerun line.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "check_timeout.hpp"
#include "conformance/runner_cli.hpp"
#include "kvblob/host/discovery.hpp"
#include "kvblob/host/sha256.hpp"

TEST_CASE("--list --json: at least 35 checks, and every contract rule is covered")
{
    auto r = runner("--list --json");
    REQUIRE(r.exit_code == 0);
    std::istringstream lines(r.output);
    std::string line;
    int checks = 0;
    while (std::getline(lines, line)) {
        ++checks;
        for (const char *field : {"\"id\":", "\"rules\":[\"R-", "\"level\":", "\"needs\":{\"capabilities\":"})
            CHECK_MESSAGE(line.find(field) != std::string::npos, line);
    }
    CHECK(checks >= 35);
    const auto covered = rule_ids_in(r.output);
    const auto contract = rule_ids_in(slurp(std::string(KVBLOB_SOURCE_DIR) + "/docs/contract.md"));
    REQUIRE(contract.size() >= 30);
    // The loader's own rules (R-LOAD-*) are the loader's to enforce, at load
    // time (tests/test_loader.cpp); every other rule has a check.
    for (const auto &rule : contract)
        if (rule.rfind("R-LOAD-", 0) != 0) CHECK_MESSAGE(covered.count(rule), rule << " has no check");
}

TEST_CASE("--json writes a header naming the driver by SHA-256, then one line per check")
{
    const auto json = temp_path("report.json"), junit = temp_path("report.xml");
    auto r = runner("--driver memory --filter 'data.*' --filter admission.hint-gated --json " + json + " --junit " + junit);
    REQUIRE(r.exit_code == 0);
    const auto report = slurp(json);
    const auto plugin = kvblob::find_plugin("memory");
    REQUIRE(plugin);
    CHECK(report.find("\"sha256\":\"" + kvblob::sha256_file_hex(*plugin) + "\"") != std::string::npos);
    CHECK(report.find("\"command\":[") != std::string::npos);
    CHECK(report.find("{\"id\":\"data.round-trip.one-row\",\"rules\":[\"R-ROW-1\",\"R-ROW-6\"],\"status\":\"PASS\"") !=
          std::string::npos);
    CHECK(report.find("\"id\":\"admission.hint-gated\",\"rules\":[\"R-ADM-7\"],\"status\":\"NOT_SUPPORTED\"") !=
          std::string::npos);
    const auto xml = slurp(junit);
    CHECK(xml.find("<testsuite name=\"kvblob-conformance\"") != std::string::npos);
    CHECK(xml.find("name=\"admission.hint-gated\"><skipped") != std::string::npos);
    std::filesystem::remove(json);
    std::filesystem::remove(junit);
}

// The conformant template passes --strict on this runner:
// conformance_minimal_driver runs it so (tests/CMakeLists.txt).
TEST_CASE("--strict judges the driver whole: a waiver or a check left out fails it, a check not applicable does not")
{
    // Not applicable (memory declares hints): passes under --strict, when nothing is left out.
    auto hinted = runner("--driver memory --filter admission.hint-gated --filter data.miss.untouched --strict");
    CHECK(hinted.output.find("[NOT_SUPPORTED] admission.hint-gated: the driver declares hints") != std::string::npos);
    CHECK(hinted.exit_code == 1);  // ... but the other checks were left out by --filter
    CHECK(hinted.output.find("\n--strict: ") != std::string::npos);
    CHECK(hinted.output.find(" left out by --filter/--exclude; a strict run judges every applicable check\n") !=
          std::string::npos);
    CHECK(runner("--driver memory --filter admission.hint-gated --filter data.miss.untouched").exit_code == 0);
    // A waived failure stands under --strict, and says which line waived it.
    const auto file = temp_path("strict-waiver.txt");
    {
        std::ofstream out(file);
        out << "data.round-trip.one-row FAIL the fixture stores nothing\n";
    }
    const std::string fixture = "--driver " KVBLOB_FIXTURE_DIR "/libkvblob_fixture_good.so --filter data.round-trip.one-row "
                                "--expectations " + file;
    CHECK(runner(fixture).exit_code == 0);
    auto strict = runner(fixture + " --strict");
    CHECK(strict.exit_code == 1);
    CHECK(strict.output.find("[FAIL] data.round-trip.one-row: [R-") != std::string::npos);
    CHECK(strict.output.find("; expected FAIL by " + file + ":1 (the fixture stores nothing), and --strict accepts no "
                             "waiver\n") != std::string::npos);
    std::filesystem::remove(file);
}

TEST_CASE("what this runner cannot exercise is NOT_EXERCISED, counted apart, and never the driver's failure")
{
    // The spy declares device_memory on request; a runner without CUDA or a
    // device cannot exercise the device checks.
    auto r = runner("--driver " KVBLOB_FIXTURE_DIR "/libkvblob_spy.so --option caps=device_memory --filter 'device.*'");
    if (r.output.find("no CUDA device") == std::string::npos) {
        MESSAGE("this runner has a CUDA device: the device checks ran");
        return;
    }
    for (const char *id : {"device.round-trip", "device.miss.untouched", "device.guard-canaries"})
        CHECK(r.output.find(std::string("[NOT_EXERCISED] ") + id + ": no CUDA device") != std::string::npos);
    CHECK(r.output.find("the runner's limit, not the driver's") != std::string::npos);
    CHECK(r.output.find("0 passed, 0 failed, ") != std::string::npos);
    CHECK(r.output.find(" 0 not supported, 3 not exercised by this runner, 0 xfail, 0 xpass, 0 blocked\n") !=
          std::string::npos);
    // Nothing the driver did was judged: the run certifies nothing, and blames nothing.
    CHECK(r.output.find("\nNO CHECK RAN\n") != std::string::npos);
    CHECK(r.exit_code == 5);
}

TEST_CASE("an XPASS names the expectations line and prints its rerun, and JSON and JUnit carry the rerun and the first line")
{
    const auto file = temp_path("xpass.txt"), json = temp_path("xpass.json"), junit = temp_path("xpass.xml");
    {
        std::ofstream out(file);
        out << "# waivers\ndata.round-trip.one-row FAIL a bug we track\nadmission.hint-gated NOT_SUPPORTED memory "
               "declares hints\n";
    }
    auto r = runner("--driver memory --filter data.round-trip.one-row --filter admission.hint-gated --expectations " +
                    file + " --json " + json + " --junit " + junit);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find("[XPASS] data.round-trip.one-row: passed, but " + file +
                        ":2 expects FAIL (a bug we track): the driver is fixed, remove that line\n    rerun: ") !=
          std::string::npos);
    CHECK(r.output.find("--filter 'data.round-trip.one-row'\n") != std::string::npos);
    CHECK(r.output.find("[XFAIL] admission.hint-gated: expected NOT_SUPPORTED by " + file +
                        ":3 (memory declares hints): the driver declares hints") != std::string::npos);
    const auto report = slurp(json);
    CHECK(std::regex_search(report, std::regex("\"id\":\"data.round-trip.one-row\".*\"status\":\"XPASS\".*"
                                               "\"rerun\":\"[^\"]*--filter 'data.round-trip.one-row'\"")));
    CHECK(std::regex_search(report, std::regex("\"id\":\"admission.hint-gated\".*\"rerun\":null")));
    const auto xml = slurp(junit);
    // CI shows the message: the failure's first line, not a bare status.
    CHECK(xml.find("name=\"data.round-trip.one-row\"><failure message=\"XPASS: passed, but " + file + ":2 expects FAIL") !=
          std::string::npos);
    CHECK(xml.find("\nrerun: ") != std::string::npos);
    // An XFAIL'd NOT_SUPPORTED is no passed test case.
    CHECK(xml.find("name=\"admission.hint-gated\"><skipped message=\"XFAIL: expected NOT_SUPPORTED by ") !=
          std::string::npos);
    for (const auto &f : {file, json, junit}) std::filesystem::remove(f);
}

TEST_CASE("a JUnit failure's message is its first line, with the rule, and its body ends with the rerun command")
{
    const auto junit = temp_path("fail.xml");
    auto r = runner("--driver " KVBLOB_FIXTURE_DIR "/libkvblob_fixture_good.so --filter data.round-trip.one-row "
                    "--junit " + junit);
    CHECK(r.exit_code == 1);
    const auto xml = slurp(junit);
    CHECK(xml.find("<failure message=\"FAIL: [R-") != std::string::npos);
    CHECK(xml.find("<failure message=\"FAIL\"") == std::string::npos);
    CHECK(std::regex_search(xml, std::regex("\nrerun: [^<]*--filter 'data.round-trip.one-row'</failure>")));
    std::filesystem::remove(junit);
}

TEST_CASE("--expectations: a known failure is XFAIL, and an expected failure that passes is XPASS and fails the run")
{
    const auto file = temp_path("expectations.txt");
    {
        std::ofstream out(file);
        out << "# glob status reason\nadmission.hint-gated NOT_SUPPORTED memory declares hints\n"
            << "data.round-trip.one-row FAIL a bug we track\n";
    }
    // With a check that runs: a run of nothing but a waived check certifies nothing (NO CHECK RAN).
    auto xfail = runner("--driver memory --filter admission.hint-gated --filter data.miss.untouched --expectations " + file);
    CHECK(xfail.exit_code == 0);
    CHECK(xfail.output.find("[XFAIL] admission.hint-gated: expected NOT_SUPPORTED by " + file +
                            ":2 (memory declares hints)") != std::string::npos);
    auto xpass = runner("--driver memory --filter data.round-trip.one-row --expectations " + file);
    CHECK(xpass.exit_code == 1);
    CHECK(xpass.output.find("[XPASS] data.round-trip.one-row") != std::string::npos);
    std::filesystem::remove(file);
    CHECK(runner("--driver memory --expectations " + file).exit_code == 2);  // unreadable file: usage error
}

TEST_CASE("a failure prints the one-line command that reruns just that check, options included")
{
    auto r = runner("--driver " KVBLOB_FIXTURE_DIR "/libkvblob_fixture_good.so --option greeting=hi --seed 7 "
                    "--filter data.round-trip.one-row");
    CHECK(r.exit_code == 1);
    const auto at = r.output.find("    rerun: ");
    REQUIRE(at != std::string::npos);
    const auto line = r.output.substr(at + 11, r.output.find('\n', at) - at - 11);
    // The build's default timeout: 60, or 180 under a sanitizer (check_timeout.hpp).
    CHECK(line.find("--option 'greeting=hi' --seed 7 --timeout " +
                    std::to_string(kvblob::conformance::default_check_timeout_s) +
                    " --filter 'data.round-trip.one-row'") != std::string::npos);
    // And running it reproduces the failure.
    auto again = run_command(line);
    CHECK(again.exit_code == 1);
    CHECK(again.output.find("[FAIL] data.round-trip.one-row") != std::string::npos);
}

TEST_CASE("a filter or exclude or expectations glob that matches no check is a usage error naming it")
{
    auto filter = runner("--driver memory --filter 'data.round-trip.one-rwo'");
    CHECK(filter.exit_code == 2);
    CHECK(filter.output.find("'data.round-trip.one-rwo' matches no check") != std::string::npos);
    auto exclude = runner("--driver memory --exclude 'no.such.*'");
    CHECK(exclude.exit_code == 2);
    CHECK(exclude.output.find("'no.such.*' matches no check") != std::string::npos);
    const auto file = temp_path("typo-expectations.txt");
    {
        std::ofstream out(file);
        out << "admision.* FAIL a typo\n";
    }
    auto expected = runner("--driver memory --filter data.round-trip.one-row --expectations " + file);
    CHECK(expected.exit_code == 2);
    CHECK(expected.output.find("'admision.*' matches no check") != std::string::npos);
    std::filesystem::remove(file);
}

TEST_CASE("an XFAIL of a MUST check is named in the verdict and XPASS counts once and JSON ends with a summary")
{
    // The fixture stores nothing: its round trip fails, and is waived here.
    const auto file = temp_path("waive.txt"), json = temp_path("waive.json");
    {
        std::ofstream out(file);
        out << "data.round-trip.one-row FAIL the fixture stores nothing\n";
    }
    auto r = runner("--driver " KVBLOB_FIXTURE_DIR "/libkvblob_fixture_good.so --filter data.round-trip.one-row "
                    "--expectations " + file + " --json " + json);
    CHECK(r.exit_code == 0);
    CHECK(r.output.find("\nCONFORMANT EXCEPT WAIVED MUST CHECKS: data.round-trip.one-row\n") != std::string::npos);
    CHECK(r.output.find("\nCONFORMANT\n") == std::string::npos);
    const auto report = slurp(json);
    const auto last = report.substr(report.rfind('\n', report.size() - 2) + 1);
    CHECK(last.find("{\"summary\":{\"verdict\":\"CONFORMANT EXCEPT WAIVED MUST CHECKS: data.round-trip.one-row\"") == 0);
    CHECK(last.find("\"xfail\":1") != std::string::npos);
    CHECK(last.find("\"waived\":[\"data.round-trip.one-row\"]") != std::string::npos);

    // XPASS: one check, and the counts sum to one.
    {
        std::ofstream out(file);
        out << "data.round-trip.one-row FAIL a bug we track\n";
    }
    auto xpass = runner("--driver memory --filter data.round-trip.one-row --expectations " + file + " --json " + json);
    CHECK(xpass.exit_code == 1);
    CHECK(xpass.output.find("0 passed, 0 failed, ") != std::string::npos);
    CHECK(xpass.output.find(", 0 xfail, 1 xpass, 0 blocked\nNOT CONFORMANT\n") != std::string::npos);
    const auto xreport = slurp(json);
    CHECK(xreport.find("\"verdict\":\"NOT CONFORMANT\",\"conformant\":false") != std::string::npos);
    std::filesystem::remove(file);
    std::filesystem::remove(json);
}

TEST_CASE("the JSON report writes a limit the driver leaves open as null, as kvblob-info does")
{
    const auto json = temp_path("limits.json");
    runner("--driver " KVBLOB_FIXTURE_DIR "/libkvblob_fixture_good.so --filter data.round-trip.one-row --json " + json);
    const auto report = slurp(json);
    // The fixture declares max_object_bytes KVBLOB_NO_LIMIT, max_ops_in_flight 4.
    CHECK(report.find("\"max_object_bytes\":null") != std::string::npos);
    CHECK(report.find("\"max_ops_in_flight\":4") != std::string::npos);
    CHECK(report.find("18446744073709551615") == std::string::npos);
    std::filesystem::remove(json);
}

TEST_CASE("secret option values appear in no report or rerun line or JUnit file")
{
    const auto json = temp_path("secret.json"), junit = temp_path("secret.xml");
    // The 1.1 fixture marks its "greeting" option secret by flag; the name
    // alone would not say so. The fixture's round trip fails: a rerun line.
    auto flagged = runner("--driver " KVBLOB_FIXTURE_DIR "/libkvblob_fixture_option_flags.so --option greeting=s3cr3t-v4lue "
                          "--filter data.round-trip.one-row --json " + json + " --junit " + junit);
    CHECK(flagged.exit_code == 1);
    CHECK(flagged.output.find("    rerun: ") != std::string::npos);
    CHECK(flagged.output.find("greeting=<redacted>") != std::string::npos);
    for (const auto &text : {flagged.output, slurp(json), slurp(junit)})
        CHECK(text.find("s3cr3t-v4lue") == std::string::npos);
    CHECK(slurp(json).find("greeting=<redacted>") != std::string::npos);
    std::filesystem::remove(json);
    std::filesystem::remove(junit);
}

TEST_CASE("--list in text shows each check's every rule, its level and what it needs, as --json does")
{
    auto r = runner("--list");
    REQUIRE(r.exit_code == 0);
    CHECK(r.output.find("\ndata.miss.untouched  [R-ROW-3 R-ROW-4 R-ROW-6]  MUST  a get of an absent key") !=
          std::string::npos);
    CHECK(r.output.find("\ndata.round-trip.multi-span  [R-ROW-1 R-ADM-5]  MUST  needs multi_span  ") !=
          std::string::npos);
    CHECK(r.output.find("\nadmission.during-drain  [R-ADM-2]  MUST  needs hook stage_held_get, hook release_staged  ") !=
          std::string::npos);
}

TEST_CASE("--help shows the defaults that matter: the per-check timeout, the run's time, the seed")
{
    auto r = runner("--help");
    REQUIRE(r.exit_code == 0);
    // 60, or 180 where the runner is built under a sanitizer (check_timeout.hpp).
    CHECK(r.output.find("Seconds per check before it is TIMEOUT (default " +
                        std::to_string(kvblob::conformance::default_check_timeout_s) + ")") != std::string::npos);
    CHECK(r.output.find("(default 1800)") != std::string::npos);
    CHECK(r.output.find("(default 20261130)") != std::string::npos);
}

// The ids of the checks a text report shows as run (or not supported).
static std::set<std::string> reported_ids(const std::string &output)
{
    std::set<std::string> ids;
    static const std::regex row(R"(^\[[A-Z_]+\] ([a-z0-9@.\-]+))");
    std::istringstream lines(output);
    for (std::string line; std::getline(lines, line);)
        if (std::smatch m; std::regex_search(line, m, row)) ids.insert(m[1]);
    return ids;
}

TEST_CASE("--shard K/N: the N shards run every selected check once between them, and a bad K/N is a usage error")
{
    const std::string selection = "--driver memory --filter 'data.*' --filter 'admission.*'";
    const auto whole = runner(selection);
    REQUIRE(whole.exit_code == 0);
    const auto all = reported_ids(whole.output);
    REQUIRE(all.size() >= 9);
    std::set<std::string> seen;
    for (int k = 1; k <= 3; ++k) {
        const auto shard = runner(selection + " --shard " + std::to_string(k) + "/3");
        CHECK(shard.exit_code == 0);
        CHECK(shard.output.find("\nCONFORMANT\n") != std::string::npos);
        CHECK(shard.output.find("\nshard " + std::to_string(k) + "/3: ") != std::string::npos);
        const auto ids = reported_ids(shard.output);
        CHECK(ids.size() >= 2);
        CHECK(ids.size() < all.size());
        for (const auto &id : ids) CHECK_MESSAGE(seen.insert(id).second, id << " ran in two shards");
    }
    CHECK(seen == all);
    for (const char *bad : {"0/3", "4/3", "1/3x", "3", "1/0", "-1/3"}) {
        const auto r = runner("--driver memory --shard '" + std::string(bad) + "'");
        CHECK_MESSAGE(r.exit_code == 2, bad);
        CHECK_MESSAGE(r.output.find("--shard: '" + std::string(bad) + "' is not K/N") != std::string::npos, r.output);
    }
}

TEST_CASE("--json gives each check that ran what it asked of the driver and what the driver answered")
{
    const auto json = temp_path("metrics.json");
    auto r = runner("--driver memory --filter data.round-trip.one-row --filter data.miss.untouched "
                    "--filter admission.long-key --json " + json);
    REQUIRE(r.exit_code == 0);
    const auto report = slurp(json);
    const auto metrics_of = [&](const std::string &id) {
        const size_t at = report.find("{\"id\":\"" + id + "\"");
        REQUIRE(at != std::string::npos);
        const std::string line = report.substr(at, report.find('\n', at) - at);
        const size_t m = line.find("\"metrics\":");
        REQUIRE(m != std::string::npos);
        return line.substr(m + 10, line.find('}', m) - m - 9);
    };
    // One put and one get of one row, both READY, on one driver.
    CHECK(metrics_of("data.round-trip.one-row") ==
          R"({"drivers_opened":1,"get.rows.READY":1,"get.submitted":1,"put.rows.READY":1,"put.submitted":1})");
    CHECK(metrics_of("data.miss.untouched").find(R"("get.rows.MISS":1)") != std::string::npos);
    // The over-long key's put refused by the driver, nothing stored after.
    const std::string refused = metrics_of("admission.long-key");
    CHECK(refused.find(R"("put.refused.E_REJECTED":1)") != std::string::npos);
    CHECK(refused.find("put.rows") == std::string::npos);
    // A check that did not run carries none.
    const size_t skipped = report.find("{\"id\":\"data.round-trip.many-rows\"");
    REQUIRE(skipped != std::string::npos);
    CHECK(report.substr(skipped, report.find('\n', skipped) - skipped).find("\"metrics\":null") != std::string::npos);
    std::filesystem::remove(json);
}
