// kvblob-conformance against drivers that attack it rather than break a
// rule (tests/fixtures/hostile_driver.cpp): the runner is not crashed,
// stalled or fooled, and a run that ran nothing, or could not finish, says
// so in its verdict and its exit code.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "conformance/runner_cli.hpp"
#include "support/in_child.hpp"

namespace {

const std::string fixtures = KVBLOB_FIXTURE_DIR;
const std::string hanging = fixtures + "/../broken/libkvblob_broken_runner_hang_in_put.so";

std::string hostile(const std::string &way) { return fixtures + "/libkvblob_hostile_" + way + ".so"; }

// The largest resident set among the processes `command` ran (the runner
// and its children), in KiB: measured in a child of this test, so that no
// earlier test's processes count.
long peak_rss_kib(const std::string &command, CommandResult &result)
{
    const std::string text = in_child([&] {
        const CommandResult r = run_command(command);
        rusage usage{};
        getrusage(RUSAGE_CHILDREN, &usage);
        return std::to_string(r.exit_code) + " " + std::to_string(usage.ru_maxrss) + "\n" + r.output;
    }).text;
    long peak = -1;
    std::istringstream head(text.substr(0, text.find('\n')));
    head >> result.exit_code >> peak;
    result.output = text.substr(text.find('\n') + 1);
    return peak;
}

}  // namespace

TEST_CASE("a driver that calls exit() in open: the probe's verdict says so, and the runner does not abort")
{
    auto r = runner("--driver " + hostile("exit_in_open") + " --filter data.round-trip.one-row");
    INFO(r.output);
    CHECK(r.exit_code == 3);
    CHECK(r.output.find("the probe of the driver (one open, then close) ended without an answer (exit status 0): "
                        "the driver ended the process") != std::string::npos);
    CHECK(r.output.find("terminate") == std::string::npos);
}

TEST_CASE("a driver that calls exit() in close: that check is CRASH, and the run goes on")
{
    // Only a driver that was asked to put exits in its close: the probe
    // (open, close) answers, and so does a check that only gets.
    auto r = runner("--driver " + hostile("exit_in_close") + " --filter data.round-trip.one-row --filter data.miss.untouched");
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find("[CRASH] data.round-trip.one-row: the check exited without a result (exit status 0)") !=
          std::string::npos);
    CHECK(r.output.find("\n[PASS] data.miss.untouched\n") != std::string::npos);
    CHECK(r.output.find("\nNOT CONFORMANT\n") != std::string::npos);
}

// Forks, in the check's process group or out of it (setsid): either way the
// processes end with the check.
TEST_CASE("a driver that forks: each check's processes end with it, and no check waits on them")
{
    for (const std::string hostility : {"fork", "fork_setsid"}) {
        INFO(hostility);
        const auto pids = temp_path("hostile-pids"), out = temp_path("hostile-fork.out");
        std::filesystem::remove(pids);
        // The output goes to a file: a process left running holds what the
        // runner's children held, and a pipe to this test would never close.
        auto r = run_command("KVBLOB_HOSTILE_PIDS=" + pids + " " KVBLOB_CONFORMANCE_BIN " --driver " + hostile(hostility) +
                             " --timeout 30 --filter data.round-trip.one-row --filter data.miss.untouched > " + out);
        const auto output = slurp(out);
        INFO(output);
        CHECK(r.exit_code == 0);
        CHECK(output.find("\n[PASS] data.round-trip.one-row\n") != std::string::npos);
        CHECK(output.find("\n[PASS] data.miss.untouched\n") != std::string::npos);
        CHECK(output.find("\nCONFORMANT\n") != std::string::npos);
        // Every process the driver started (one per open: the probe's and the
        // checks') was killed and reaped before the runner exited.
        std::ifstream in(pids);
        std::vector<pid_t> started;
        for (pid_t pid; in >> pid;) started.push_back(pid);
        CHECK(started.size() >= 3);
        for (pid_t pid : started) {
            const bool gone = kill(pid, 0) != 0 && errno == ESRCH;
            CHECK_MESSAGE(gone, "process " << pid << " outlived the run");
            if (!gone) kill(pid, SIGKILL);  // not left behind by a failing test either
        }
        std::filesystem::remove(pids);
        std::filesystem::remove(out);
    }
}

TEST_CASE("a driver that floods stderr: the runner keeps a bounded tail, not the flood")
{
    // The fixture writes 256 MiB at each open; the runner keeps 64 KiB of it.
    CommandResult r;
    const long peak = peak_rss_kib(std::string(KVBLOB_CONFORMANCE_BIN) + " --driver " + hostile("stderr_flood") +
                                       " --filter data.round-trip.one-row",
                                   r);
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK(r.output.find("\n[PASS] data.round-trip.one-row\n") != std::string::npos);
    CHECK(peak > 0);
    CHECK(peak < 128 * 1024);
}

TEST_CASE("a driver that floods stdout: the runner's report is its own, and says the driver wrote there")
{
    // The fixture writes 32 MiB and a last line to stdout at each open (the
    // probe's, the check's): the runner keeps a tail of it and counts it.
    const auto json = temp_path("stdout-flood.json"), junit = temp_path("stdout-flood.xml");
    CommandResult r;
    const long peak = peak_rss_kib(std::string(KVBLOB_CONFORMANCE_BIN) + " --driver " + hostile("stdout_flood") +
                                       " --filter data.round-trip.one-row --json " + json + " --junit " + junit,
                                   r);
    INFO(r.output.substr(0, 4096));
    CHECK(r.exit_code == 0);
    CHECK(r.output.size() < 64 * 1024);  // the report, not the flood
    CHECK(r.output.find("yyyyyyyy") == std::string::npos);
    CHECK(peak > 0);
    CHECK(peak < 128 * 1024);
    const std::string each = std::to_string(32 * 1024 * 1024 + std::string("the flood's last line\n").size());
    CHECK(r.output.find("the driver wrote to stdout in the probe (one open, then close): " + each +
                        " bytes, which this report does not carry (the runner's stdout is its own); its last line: "
                        "'the flood's last line'\n") != std::string::npos);
    CHECK(r.output.find("\n[PASS] data.round-trip.one-row\n    the driver wrote to stdout: ") != std::string::npos);
    CHECK(r.output.find("\nthe driver wrote to stdout: ") != std::string::npos);
    CHECK(r.output.find(" (probe, data.round-trip.one-row); ") != std::string::npos);
    const auto report = slurp(json);
    CHECK(report.find("\"stdout\":{\"bytes\":") != std::string::npos);
    CHECK(report.find("\"last_line\":\"the flood's last line\"}") != std::string::npos);
    CHECK(report.find("\"stdout\":{\"bytes\":0,") == std::string::npos);
    CHECK(report.find("\"by\":[\"probe\",\"data.round-trip.one-row\"]},\"left\":") != std::string::npos);
    const auto xml = slurp(junit);
    CHECK(xml.find("<system-out>the driver wrote to stdout: ") != std::string::npos);
    CHECK(xml.find("<property name=\"stdout_bytes\" value=\"0\"/>") == std::string::npos);
    std::filesystem::remove(json);
    std::filesystem::remove(junit);
}

TEST_CASE("a driver's stdout shown in the report carries no secret option value")
{
    // The fixture's last line repeats the secret option token: the report
    // shows it redacted, as it shows the options.
    const auto json = temp_path("stdout-secret.json"), junit = temp_path("stdout-secret.xml");
    auto r = runner("--driver " + hostile("stdout_flood") + " --option token=s3cret-in-stdout"
                    " --filter data.round-trip.one-row --json " + json + " --junit " + junit);
    INFO(r.output.substr(0, 4096));
    CHECK(r.exit_code == 0);
    CHECK(r.output.find("its last line: 'the flood's last line, token <redacted>'") != std::string::npos);
    for (const auto &text : {r.output, slurp(json), slurp(junit)}) CHECK(text.find("s3cret-in-stdout") == std::string::npos);
    std::filesystem::remove(json);
    std::filesystem::remove(junit);
}

TEST_CASE("a crashed check's stderr, and a stdout tail cut inside a secret, carry no secret option value")
{
    // One fixture prints a URL holding the token to stderr and aborts in
    // put (the crash's message carries the stderr's last lines); the other
    // writes a stdout line whose kept 4 KiB start 8 bytes into the token,
    // which no search for the whole token finds.
    const std::string token = "SuperSecretToken-12345", after_cut = token.substr(8);
    for (const std::string hostility : {"stderr_secret_crash", "stdout_cut_secret"}) {
        CAPTURE(hostility);
        const auto json = temp_path(hostility + ".json"), junit = temp_path(hostility + ".xml");
        auto r = runner("--driver " + hostile(hostility) + " --option token=" + token +
                        " --filter data.round-trip.one-row --json " + json + " --junit " + junit);
        INFO(r.output.substr(0, 4096));
        if (hostility == "stderr_secret_crash")
            CHECK(r.output.find("last stderr: could not reach redis://admin:<redacted>@cache.internal:6379") !=
                  std::string::npos);
        else
            CHECK(r.output.find("its last line: '<redacted>zzz") != std::string::npos);
        for (const auto &text : {r.output, slurp(json), slurp(junit)}) CHECK(text.find(after_cut) == std::string::npos);
        std::filesystem::remove(json);
        std::filesystem::remove(junit);
    }
}

TEST_CASE("a driver that never touches a held page while it is held earns NOT_EXERCISED, never PASS")
{
    // The fixture waits (mincore) until the pages of its keys and spans are
    // in memory before each put and get: the calls the battery holds inside
    // the driver are never held. --timeout 12: each wait for a touch lasts
    // 3 s (a quarter), and the drain check waits twice, so half of its time
    // is left for the rest of it on a loaded machine.
    const std::string held = " --filter concurrency.admission-held --filter concurrency.threads --filter "
                             "lifetime.drain-waits-for-calls --exclude '*@*' --timeout 12";
    for (const std::string strict : {"", " --strict"}) {
        INFO("flag: '" << strict << "'");
        auto r = runner("--driver " + hostile("evade_held") + held + strict);
        INFO(r.output);
        if (r.output.find("cannot hold a call inside the driver") != std::string::npos) {
            MESSAGE("this machine offers no userfaultfd: the runner holds no call, and this test proves nothing here");
            return;
        }
        CHECK(r.output.find("[PASS]") == std::string::npos);
        CHECK(r.output.find("[NOT_EXERCISED] concurrency.admission-held: not exercised: the put read no key of its "
                            "batch while it was called") != std::string::npos);
        CHECK(r.output.find("[NOT_EXERCISED] concurrency.threads: not exercised: the put read no byte of its row "
                            "while the check watched") != std::string::npos);
        CHECK(r.output.find("[NOT_EXERCISED] lifetime.drain-waits-for-calls: not exercised: the put read no key of "
                            "its batch while it was called") != std::string::npos);
        // Not exercised certifies nothing: the run ran no check, strict or not.
        CHECK(r.output.find("\n0 passed, 0 failed, ") != std::string::npos);
        CHECK(r.output.find(" skipped, 0 not supported, 3 not exercised by this runner, 0 xfail, 0 xpass, 0 blocked\n") !=
              std::string::npos);
        CHECK(r.output.find("\nNO CHECK RAN\n") != std::string::npos);
        CHECK(r.exit_code == 5);
    }
    // The same checks hold the memory driver's calls, and pass.
    auto plain = runner("--driver memory" + held);
    INFO(plain.output);
    CHECK(plain.exit_code == 0);
    CHECK(plain.output.find("[NOT_EXERCISED]") == std::string::npos);
    CHECK(plain.output.find("\n3 passed, 0 failed, ") != std::string::npos);
}

TEST_CASE("a driver that writes a verdict to the child's report channel cannot forge a PASS")
{
    auto r = runner("--driver " + hostile("forge_pass") + " --filter data.round-trip.one-row");
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find("[FAIL] data.round-trip.one-row: the check's report channel (descriptor 3) carried ") !=
          std::string::npos);
    CHECK(r.output.find("[PASS]") == std::string::npos);
}

TEST_CASE("a driver that touches a guard page fails R-REG-3, said on the fault channel")
{
    // The child's fault handler has no key to sign with: it writes the
    // address to a descriptor of its own, and whatever comes there fails.
    // The check's own FAIL names the span's row and the offset; the guard
    // page is opened and the driver goes on, so the cleanup still counts
    // what the check left.
    auto r = runner("--driver " + hostile("touch_guard") + " --filter data.round-trip.one-row");
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find("[FAIL] data.round-trip.one-row: [R-REG-3] put row 0: the driver read the byte at offset "
                        "4096 of its 4096-byte span, 1 past its end (guarded memory)\n") != std::string::npos);
    CHECK(r.output.find("left behind") == std::string::npos);
}

TEST_CASE("a driver that reads the signing key from memory cannot forge a PASS")
{
    // The fixture's put reads the key (its own process's symbol for it, or
    // the runner's memory through /proc/<ppid>/mem, process_vm_readv or
    // ptrace), signs a passing verdict with it and exits; where it could not
    // read, it says why on stderr and exits 1.
    const std::string forging = fixtures + "/libkvblob_forging.so";
    for (const std::string from : {"self", "mem", "vm", "ptrace"}) {
        INFO("KVBLOB_FORGE_FROM=" << from);
        auto r = run_command("KVBLOB_FORGE_FROM=" + from + " " KVBLOB_CONFORMANCE_BIN " --driver " + forging +
                             " --filter data.round-trip.one-row");
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(r.output.find("[PASS]") == std::string::npos);
        CHECK(r.output.find("[CRASH] data.round-trip.one-row: the check exited without a result (exit status 1); "
                            "last stderr: ") != std::string::npos);
        CHECK(r.output.find("forge: signing a verdict") == std::string::npos);
        // Not only no key: the runner's memory was not read at all.
        CHECK(r.output.find("forge: read the runner's memory") == std::string::npos);
    }
    auto vm = run_command("KVBLOB_FORGE_FROM=vm " KVBLOB_CONFORMANCE_BIN " --driver " + forging +
                          " --filter data.round-trip.one-row");
    CHECK(vm.output.find("forge: process_vm_readv: Operation not permitted") != std::string::npos);
    auto ptraced = run_command("KVBLOB_FORGE_FROM=ptrace " KVBLOB_CONFORMANCE_BIN " --driver " + forging +
                               " --filter data.round-trip.one-row");
    CHECK(ptraced.output.find("forge: ptrace(PTRACE_ATTACH): Operation not permitted") != std::string::npos);
}

TEST_CASE("a run that ran no check certifies nothing: NO CHECK RAN, exit 5, with --strict too")
{
    for (const char *strict : {"", " --strict"}) {
        INFO("flag: '" << strict << "'");
        auto r = runner(std::string("--driver memory --exclude '*'") + strict);
        CHECK(r.exit_code == 5);
        CHECK(r.output.find("\nNO CHECK RAN\n") != std::string::npos);
        CHECK(r.output.find("\nCONFORMANT\n") == std::string::npos);
    }
    // Only checks the driver does not support: nothing ran either.
    auto unsupported = runner("--driver memory --filter admission.hint-gated");
    CHECK(unsupported.exit_code == 5);
    CHECK(unsupported.output.find("\nNO CHECK RAN\n") != std::string::npos);
}

TEST_CASE("a driver that stopped answering: the run gives up after --give-up-after TIMEOUTs in a row")
{
    const auto json = temp_path("gave-up.json");
    // Six checks that put (their reruns as older hosts left out); the driver hangs in every put.
    auto r = runner("--driver " + hanging + " --timeout 2 --filter 'data.round-trip.*' --exclude '*@*' --json " + json);
    INFO(r.output);
    CHECK(r.exit_code == 1);  // the checks it hung in failed: NOT CONFORMANT
    size_t timeouts = 0;
    for (size_t at = 0; (at = r.output.find("\n[TIMEOUT] data.round-trip.", at)) != std::string::npos; ++at) ++timeouts;
    CHECK(timeouts == 3);
    CHECK(r.output.find("\nNOT CONFORMANT\nrun incomplete: the driver stopped answering: 3 checks in a row were "
                        "TIMEOUT (--give-up-after 3); 3 checks not run\n") != std::string::npos);
    const auto report = slurp(json);
    CHECK(report.find("\"status\":\"SKIPPED\",\"message\":\"not run: the driver stopped answering") != std::string::npos);
    CHECK(report.find("\"complete\":false,\"stopped\":\"the driver stopped answering") != std::string::npos);
    std::filesystem::remove(json);
}

TEST_CASE("--run-timeout bounds the whole run: the check in progress is cut, the rest not run, exit 4")
{
    auto r = runner("--driver " + hanging +
                    " --timeout 600 --give-up-after 0 --run-timeout 5 --filter data.round-trip.one-row "
                    "--filter admission.no-rows");
    INFO(r.output);
    CHECK(r.exit_code == 4);
    // On a loaded machine the probe itself may be what the run's time cut.
    CHECK(r.output.find("the run's time ran out (--run-timeout 5 s)") != std::string::npos);
    CHECK(r.output.find("[PASS]") == std::string::npos);
}

TEST_CASE("--help names the run's bound and every exit code")
{
    auto r = runner("--help");
    CHECK(r.exit_code == 0);
    for (const char *text : {"--run-timeout", "(default 1800)", "--give-up-after", "5 no check ran"})
        CHECK_MESSAGE(r.output.find(text) != std::string::npos, text);
}

TEST_CASE("--json and --junit name the rule a failure broke, beside the rules its check covers")
{
    // data.round-trip.one-row covers R-ROW-1 and R-ROW-6; the guard-touching
    // driver breaks R-REG-3 inside it. A dashboard grouping by rule must see
    // R-REG-3.
    const auto json = temp_path("failed-rule.json"), junit = temp_path("failed-rule.xml");
    auto r = runner("--driver " + hostile("touch_guard") + " --filter data.round-trip.one-row --json " + json +
                    " --junit " + junit);
    INFO(r.output);
    CHECK(r.exit_code == 1);
    const std::string report = slurp(json), xml = slurp(junit);
    const size_t at = report.find("{\"id\":\"data.round-trip.one-row\"");
    REQUIRE(at != std::string::npos);
    const std::string line = report.substr(at, report.find('\n', at) - at);
    CHECK(line.find(R"("rules":["R-ROW-1","R-ROW-6"])") != std::string::npos);
    CHECK(line.find(R"("failed_rule":"R-REG-3")") != std::string::npos);
    CHECK(xml.find(R"(type="R-REG-3")") != std::string::npos);
    // A check that passed or did not run names none.
    CHECK(report.find(R"("status":"SKIPPED")") != std::string::npos);
    CHECK(report.find(R"("status":"SKIPPED","message":"filtered out","left":{"keys":0,"bytes":0,"why":""},"stdout":null,"metrics":null,"failed_rule":null)") != std::string::npos);
    std::filesystem::remove(json);
    std::filesystem::remove(junit);
}
