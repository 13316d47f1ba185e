// kvblob-conformance as a vendor's CI meets it: the list, the reports, the
// expectations file, --strict, and the rerun line.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

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

TEST_CASE("--strict makes NOT_SUPPORTED fail a MUST check")
{
    auto r = runner("--driver memory --filter admission.hint-gated --strict");
    CHECK(r.exit_code == 1);
    CHECK(r.output.find("NOT CONFORMANT") != std::string::npos);
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
    CHECK(xfail.output.find("[XFAIL] admission.hint-gated: memory declares hints") != std::string::npos);
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
    CHECK(line.find("--option 'greeting=hi' --seed 7 --timeout 60 --filter 'data.round-trip.one-row'") !=
          std::string::npos);
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
