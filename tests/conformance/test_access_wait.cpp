// The battery's access-end clock (conformance-runner/src/access_wait.hpp):
// open time is what the battery was there to see, so a battery starved of
// the CPU does not blame a driver for its own absence, and a driver that
// stays open look after look is still caught.
#include <doctest/doctest.h>

#include "access_wait.hpp"

using namespace std::chrono_literals;
using kvblob::conformance::OpenWatch;

namespace {
const auto t0 = std::chrono::steady_clock::time_point{} + 1h;
}

TEST_CASE("access-end clock: looks a few milliseconds apart count whole")
{
    OpenWatch w;
    for (int i = 0; i <= 400; ++i) w.saw_open(t0 + i * 2ms);
    CHECK(w.seen() == 800ms);
    CHECK(w.wall() == 800ms);
}

TEST_CASE("access-end clock: a second the battery was off the CPU counts as one look's gap")
{
    OpenWatch w;
    w.saw_open(t0);
    w.saw_open(t0 + 2ms);
    w.saw_open(t0 + 1002ms);  // the battery was stopped for a second
    w.saw_open(t0 + 1004ms);
    CHECK(w.seen() == 2ms + OpenWatch::longest_look_gap + 2ms);
    CHECK(w.wall() == 1004ms);
}

TEST_CASE("access-end clock: a driver open past its bound is seen so, stall or not")
{
    // A 50 ms bound waits 550 ms (access_wait): a driver open for 700 ms
    // while the battery looks every 2 ms, with one long stall in between,
    // is still seen open past the wait.
    kvblob_caps_t caps{};
    caps.access_end_bound_ns = 50'000'000;
    const auto wait = kvblob::conformance::access_wait(caps);
    CHECK(wait == 550ms);
    OpenWatch w;
    auto t = t0;
    for (int i = 0; i < 350; ++i, t += 2ms) w.saw_open(t);
    t += 5s;
    for (int i = 0; i < 10; ++i, t += 2ms) w.saw_open(t);
    CHECK(w.seen() > wait);
    CHECK(w.wall() > 5s);
}

TEST_CASE("access-end clock: no time before the second look")
{
    OpenWatch w;
    CHECK(w.seen() == 0ns);
    w.saw_open(t0);
    CHECK(w.seen() == 0ns);
    CHECK(w.wall() == 0ns);
}
