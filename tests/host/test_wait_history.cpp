// The host's wait watches before it sleeps only where a driver's waits
// have lately ended within the watch (WaitHistory, host/src/guarding/
// watch.hpp): a driver whose operations take several watches gets a short
// one, and its waiters give their cores back at once.
#include <doctest/doctest.h>

#include "guarding/watch.hpp"

using kvblob::WaitHistory;
using kvblob::watch_before_sleep;
using namespace std::chrono_literals;

TEST_CASE("wait history: the watch shortens after long waits in a row, not after one stall, and grows back")
{
    WaitHistory h;
    CHECK(h.next_watch() == watch_before_sleep);  // nothing known: the whole watch

    for (int i = 0; i < 50; ++i) h.record(30us);
    CHECK(h.next_watch() == watch_before_sleep);
    h.record(5s);  // one stall among quick answers
    CHECK(h.next_watch() == watch_before_sleep);
    h.record(5s);
    CHECK(h.next_watch() == watch_before_sleep);

    // A driver whose operations take 1 ms, five watches each.
    int long_waits = 0;
    while (h.next_watch() == watch_before_sleep && long_waits < 100) {
        h.record(1ms);
        ++long_waits;
    }
    CHECK(h.next_watch() == WaitHistory::short_watch);
    CHECK(long_waits >= 3);
    CHECK(long_waits <= 12);

    // Its operations quick again: the whole watch comes back.
    int quick_waits = 0;
    while (h.next_watch() == WaitHistory::short_watch && quick_waits < 100) {
        h.record(30us);
        ++quick_waits;
    }
    CHECK(h.next_watch() == watch_before_sleep);
    CHECK(quick_waits <= 12);

    // Waits that end just past the watch keep it whole: only a typical wait
    // of more than two watches shortens it.
    for (int i = 0; i < 100; ++i) h.record(watch_before_sleep + 100us);
    CHECK(h.next_watch() == watch_before_sleep);
    for (int i = 0; i < 100; ++i) h.record(3 * watch_before_sleep);
    CHECK(h.next_watch() == WaitHistory::short_watch);
}
