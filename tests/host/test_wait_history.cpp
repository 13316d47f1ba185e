// The host's wait watches whole only where a driver's operations have lately
// ended soon enough for watching to pay (WaitHistory, host/src/guarding/
// watch.hpp): a driver whose operations take longer gets a short watch, and
// its waiters give their cores back at once.
// Durations are injected: nothing here is timed.
#include <doctest/doctest.h>

#include "guarding/notifier.hpp"
#include "guarding/watch.hpp"

#include <thread>

using kvblob::Notifier;
using kvblob::wait_took;
using kvblob::WaitHistory;
using kvblob::watch_before_sleep;
using namespace std::chrono_literals;

namespace {

// How many samples of took it takes until watching(h) is want, at most 100.
template <class Watching>
int samples_until(WaitHistory &h, std::chrono::nanoseconds took, Watching watching, bool want)
{
    int n = 0;
    while (watching(h) != want && n < 100) {
        h.record(took);
        ++n;
    }
    return n;
}
bool short_only(const WaitHistory &h) { return h.next_watch() == WaitHistory::short_watch; }

}  // namespace

TEST_CASE("wait history: the whole watch while operations end within watch_pays, the short one past it")
{
    WaitHistory h;
    CHECK(h.next_watch() == watch_before_sleep);  // nothing known: the whole watch

    for (int i = 0; i < 200; ++i) h.record(2us);  // an in-memory answer
    CHECK(h.next_watch() == watch_before_sleep);
    for (int i = 0; i < 200; ++i) h.record(WaitHistory::watch_pays);  // the longest typical wait watched whole
    CHECK(h.next_watch() == watch_before_sleep);

    // A Redis batch of 32 rows of 4 KiB: 60-140 us. Watching it through
    // would save one wake and hold a core for the whole wait.
    for (int i = 0; i < 200; ++i) h.record(130us);
    CHECK(h.next_watch() == WaitHistory::short_watch);
    for (int i = 0; i < 200; ++i) h.record(5ms);
    CHECK(h.next_watch() == WaitHistory::short_watch);
}

TEST_CASE("wait history: one stall among quick answers keeps the watch, a run of slow ones shortens it, and quick ones give it back")
{
    WaitHistory h;
    for (int i = 0; i < 200; ++i) h.record(20us);
    h.record(5s);  // capped: weighs as one wait of twice watch_pays
    CHECK(h.next_watch() == watch_before_sleep);

    for (int i = 0; i < 200; ++i) h.record(20us);
    const int slow = samples_until(h, 1ms, short_only, true);
    CHECK(slow >= 3);
    CHECK(slow <= 5);

    // A burst of slow operations, then the driver's quick ones again (their
    // samples the announcement's time, not the wake's): the whole watch
    // comes back within a few waits.
    for (int i = 0; i < 50; ++i) h.record(1ms);
    CHECK(h.next_watch() == WaitHistory::short_watch);
    const int quick = samples_until(h, 20us, short_only, false);
    CHECK(quick >= 5);
    CHECK(quick <= 10);
    CHECK(h.next_watch() == watch_before_sleep);
}

TEST_CASE("wait history: a wait that slept counts until the announcement that woke it, not the wake")
{
    using Clock = std::chrono::steady_clock;
    const Clock::time_point start{1s};

    // Ended while watching: until now, whatever was announced before.
    CHECK(wait_took(start, start + 30us, start - 1s, false) == 30us);
    // Slept: the announcement at 40 us woke it, the wake took it to 90 us.
    CHECK(wait_took(start, start + 90us, start + 40us, true) == 40us);
    // The last announcement before the wait began (its own operation's
    // came just before the wait looked): nothing was waited for.
    CHECK(wait_took(start, start + 90us, start - 5us, true) == 0us);
    // Never past the wait's end.
    CHECK(wait_took(start, start + 90us, start + 1s, true) == 90us);
}

TEST_CASE("notifier: a sleeper reads the time of the announcement that woke it, and with no sleeper none is read")
{
    using Clock = std::chrono::steady_clock;
    Notifier n;
    // Nobody asleep: the announcement reads no clock, and the time a
    // sleeper would read stays as it was.
    const Clock::time_point before_any = n.last_announced();
    n.announce();
    CHECK(n.last_announced() == before_any);

    // A waiter with no watch goes to sleep at once. An announcement made
    // once it is counted in (asleep, or about to look at the generation
    // and find it moved) reads the time for it.
    const uint64_t seen = n.current();
    std::thread waiter([&] { n.wait_past(seen, Clock::now() + 1h, Clock::now()); });
    while (n.sleepers() == 0) std::this_thread::yield();
    const Clock::time_point announced_after = Clock::now();
    n.announce();
    waiter.join();
    CHECK(n.last_announced() >= announced_after);
    CHECK(n.last_announced() <= Clock::now());

    // The generation moved already: the waiter does not sleep, and says so
    // (its wait's history then counts until now, not a stale time).
    CHECK_FALSE(n.wait_past(seen, Clock::now() + 1h, Clock::now()));
}
