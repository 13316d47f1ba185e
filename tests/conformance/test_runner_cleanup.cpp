// The battery cleans up after itself: each check removes what it wrote
// where the driver offers remove, and every report says what was left where
// it cannot (conformance-runner/src/cleanup.hpp). The stores themselves are
// looked at after whole runs by tests/conformance/store_left.sh.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "conformance/runner_cli.hpp"

TEST_CASE("a driver without remove: the text, JSON and JUnit reports say what each check left behind")
{
    // The memory driver without remove, its store kept for the process's life.
    const auto json = temp_path("left.json"), junit = temp_path("left.xml");
    for (const char *isolation : {"", " --no-isolation"}) {
        INFO("isolation flag: '" << isolation << "'");
        auto r = runner("--driver " KVBLOB_FIXTURE_DIR "/libkvblob_no_remove.so --filter data.round-trip.one-row "
                        "--filter data.miss.untouched --json " + json + " --junit " + junit + isolation);
        // What stays is reported, and never changes the verdict.
        CHECK(r.exit_code == 0);
        CHECK(r.output.find("\nCONFORMANT\n") != std::string::npos);
        // data.round-trip.one-row puts one object of 4096 bytes; data.miss.untouched writes nothing.
        CHECK(r.output.find("[PASS] data.round-trip.one-row\n    left behind: 1 key, 4096 bytes (the driver offers "
                            "no remove; probe finds 1 of the 1 keys the check wrote)\n") != std::string::npos);
        CHECK(r.output.find("[PASS] data.miss.untouched\nleft in the store: 1 key, 4096 bytes by 1 check") !=
              std::string::npos);
        CHECK(std::regex_search(r.output, std::regex("\nleft in the store: .*every key of this run begins with "
                                                     "'kvbc-[0-9a-z]+-[0-9a-z]+'\n[0-9]+ passed")));
        const auto report = slurp(json);
        CHECK(report.find("\"id\":\"data.round-trip.one-row\",\"rules\":[\"R-ROW-1\",\"R-ROW-6\"],\"status\":\"PASS\","
                          "\"message\":\"\",\"left\":{\"keys\":1,\"bytes\":4096,") != std::string::npos);
        CHECK(report.find("\"id\":\"data.miss.untouched\",\"rules\":[\"R-ROW-3\",\"R-ROW-4\",\"R-ROW-6\"],\"status\":\"PASS\","
                          "\"message\":\"\",\"left\":{\"keys\":0,\"bytes\":0,") != std::string::npos);
        CHECK(report.find("\"left\":{\"keys\":1,\"bytes\":4096,\"by\":[\"data.round-trip.one-row\"],\"unknown\":[]}}}") !=
              std::string::npos);
        const auto xml = slurp(junit);
        CHECK(xml.find("<property name=\"left_keys\" value=\"1\"/><property name=\"left_bytes\" value=\"4096\"/>") !=
              std::string::npos);
        CHECK(xml.find("name=\"data.round-trip.one-row\"><system-out>left behind: 1 key, 4096 bytes") !=
              std::string::npos);
        CHECK(xml.find("name=\"data.miss.untouched\"></testcase>") != std::string::npos);
    }
    std::filesystem::remove(json);
    std::filesystem::remove(junit);
}

TEST_CASE("a driver with remove: the checks leave nothing, and the summary says so")
{
    auto r = runner("--driver memory --filter 'data.round-trip.*' --filter lifetime.cancel");
    CHECK(r.exit_code == 0);
    CHECK(r.output.find("left behind") == std::string::npos);
    CHECK(r.output.find("\nleft in the store: nothing (each check removed what it wrote)\n") != std::string::npos);
}

TEST_CASE("a check that crashed left what it wrote, unknown: its line and the summary say so")
{
    const auto json = temp_path("crash-left.json");
    auto r = runner("--driver " KVBLOB_FIXTURE_DIR "/../broken/libkvblob_broken_runner_crash_in_put.so "
                    "--filter data.round-trip.one-row --json " + json);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find("[CRASH] data.round-trip.one-row: killed by signal") != std::string::npos);
    CHECK(r.output.find("\n    left behind: unknown (the check did not finish; its keys were not removed)\n") !=
          std::string::npos);
    CHECK(r.output.find("\nleft in the store: unknown after 1 check that did not finish") != std::string::npos);
    const auto report = slurp(json);
    CHECK(report.find("\"left\":{\"keys\":null,\"bytes\":null,\"why\":\"the check did not finish") != std::string::npos);
    CHECK(report.find("\"unknown\":[\"data.round-trip.one-row\"]") != std::string::npos);
    std::filesystem::remove(json);
}

TEST_CASE("a driver that dies in the cleanup's remove: the check is CRASH, its line says how, and the run fails")
{
    // The check itself passes; the crash comes after, in the remove that
    // cleans up its keys. A driver that crashes there breaks the contract
    // as surely as one that crashes in the check's body.
    auto r = runner("--driver " KVBLOB_FIXTURE_DIR "/../broken/libkvblob_broken_runner_crash_in_remove.so "
                    "--filter data.round-trip.one-row");
    CHECK(r.exit_code == 1);
    // How it died: a signal, or a sanitizer's exit status where one catches the fault.
    CHECK(r.output.find("[CRASH] data.round-trip.one-row: the check passed, then its cleanup (removing the check's "
                        "keys, closing its drivers) ended with its process (") != std::string::npos);
    CHECK(r.output.find("\n    left behind: unknown (the check's cleanup did not finish; its keys were not all removed)\n") !=
          std::string::npos);
    CHECK(r.output.find("\nleft in the store: unknown after 1 check that did not finish") != std::string::npos);
    CHECK(r.output.find("\nNOT CONFORMANT\n") != std::string::npos);
}
