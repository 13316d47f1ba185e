// The runner's decision whether a wait that ran out says something of the
// driver or only of a starved machine (conformance-runner/src/starvation.hpp),
// on figures given here: no storm is raised, and nothing is timed.
#include <doctest/doctest.h>

#include <unistd.h>

#include <fstream>

#include "check.hpp"
#include "starvation.hpp"

using kvblob::conformance::CheckFailure;
using kvblob::conformance::fail_after_wait;
using kvblob::conformance::figures_text;
using kvblob::conformance::pressure_some_total_s;
using kvblob::conformance::schedstat_figures;
using kvblob::conformance::Starved;
using kvblob::conformance::starved;
using kvblob::conformance::ThreadWait;
using kvblob::conformance::WaitFigures;

namespace {
// A 10 s wait; its longest-waiting thread as given.
WaitFigures wait_of(ThreadWait longest, double cpu_s = 0.05)
{
    return {10.0, cpu_s, longest.runqueue_s + 0.5, longest, 0.99};
}
}  // namespace

TEST_CASE("starvation: a thread ready to run nearly all the wait, running a few thousandths, is starved")
{
    // A load average past 500 on two cores: a ready thread gets ~0.4%.
    CHECK(starved(wait_of({0.04, 9.9})));
}

TEST_CASE("starvation: a deadlock asks for no CPU and is decided")
{
    // Every thread blocked: nothing waited for a CPU.
    CHECK_FALSE(starved(wait_of({0.001, 0.002})));
    // The battery's own looking threads on a loaded machine: a few tenths
    // of a second each, as measured with a deadlocked drain at load 11.
    CHECK_FALSE(starved(wait_of({0.08, 0.6}, 0.3)));
}

TEST_CASE("starvation: a thread that got its share of a busy machine is decided")
{
    // Ready the whole wait on a machine at load 11 on two cores: ~18% of
    // what it asked for is no starvation.
    CHECK_FALSE(starved(wait_of({1.8, 8.2})));
    // At the edges: three quarters of the wait, and 1/19 of it run.
    CHECK(starved(wait_of({0.39, 7.5})));
    CHECK_FALSE(starved(wait_of({0.40, 7.5})));
    CHECK_FALSE(starved(wait_of({0.1, 7.4})));
}

TEST_CASE("starvation: without per-thread figures nothing is decided as starved")
{
    WaitFigures f{10.0, 0.01, std::nullopt, std::nullopt, 1.0};
    CHECK_FALSE(starved(f));
    CHECK(figures_text(f).find("whether it waited for a CPU is unknown") != std::string::npos);
    CHECK_FALSE(starved(WaitFigures{}));  // no wait at all
}

TEST_CASE("starvation: the figures a report gives")
{
    CHECK(figures_text(wait_of({0.004, 9.9})) ==
          "in 10.0 s of waiting, the check's process ran 0.050 s of CPU and its threads waited 10.4 s for one "
          "(the longest 9.9 s, running 0.004 s); some task of the machine waited for a CPU 99% of the time");
}

TEST_CASE("starvation: a starved wait is TIMEOUT (machine starved), a decided one FAIL with its figures")
{
    CHECK_THROWS_WITH_AS(fail_after_wait(wait_of({0.04, 9.9}), "R-DRN-1", "drain answered KVBLOB_E_TIMEOUT"),
                         doctest::Contains("machine starved: in 10.0 s of waiting"), Starved);
    CHECK_THROWS_WITH_AS(fail_after_wait(wait_of({0.04, 9.9}), "R-DRN-1", "drain answered KVBLOB_E_TIMEOUT"),
                         doctest::Contains("too little to decide R-DRN-1 (drain answered KVBLOB_E_TIMEOUT)"), Starved);
    try {
        fail_after_wait(wait_of({0.001, 0.002}), "R-DRN-1", "drain answered KVBLOB_E_TIMEOUT");
        FAIL("no failure");
    } catch (const CheckFailure &f) {
        CHECK(f.rule == "R-DRN-1");
        CHECK(std::string(f.what()).rfind("[R-DRN-1] drain answered KVBLOB_E_TIMEOUT (in 10.0 s of waiting", 0) == 0);
    }
}

TEST_CASE("starvation: the kernel's texts are read as documented")
{
    const auto t = schedstat_figures("2500000000 7500000000 1234\n");
    REQUIRE(t);
    CHECK(t->cpu_s == doctest::Approx(2.5));
    CHECK(t->runqueue_s == doctest::Approx(7.5));
    CHECK_FALSE(schedstat_figures(""));
    CHECK_FALSE(schedstat_figures("garbage"));
    const auto p = pressure_some_total_s("some avg10=99.79 avg60=99.29 avg300=80.68 total=5864938086\n"
                                         "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
    REQUIRE(p);
    CHECK(*p == doctest::Approx(5864.938086));
    CHECK_FALSE(pressure_some_total_s(""));
}

TEST_CASE("starvation: a process's figures are its live threads' schedstat")
{
    // This test's own process, as the runner reads a check's before killing
    // it: where the kernel keeps schedstat, every figure is there and none
    // is negative; elsewhere none is, and nothing is decided.
    const auto f = kvblob::conformance::process_figures(static_cast<long>(getpid()), 1.0);
    CHECK(f.wall_s == 1.0);
    CHECK_FALSE(f.pressure);
    if (!std::ifstream("/proc/self/schedstat")) {
        CHECK_FALSE(f.longest);
        return;
    }
    REQUIRE(f.runqueue_s);
    REQUIRE(f.longest);
    CHECK(f.cpu_s >= 0);
    CHECK(*f.runqueue_s >= f.longest->runqueue_s);
    CHECK(kvblob::conformance::process_figures(-1, 1.0).longest == std::nullopt);
}
