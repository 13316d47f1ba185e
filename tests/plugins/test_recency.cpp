// The tiered driver's recency record (plugins/tiered/recency.hpp), whose
// erased entries' nodes are kept for the next new keys: a key recorded in a
// kept node is the new key's alone, its size, its place in the order and
// whether it is safely held below.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "kvblob/support/key_hash.hpp"
#include "tiered/recency.hpp"

using kvblob::tiered::Recency;

namespace {

// Keys and their uses, the hash computed as admission computes it.
struct Uses {
    std::vector<std::string> keys;
    std::vector<Recency::Use> of(uint64_t bytes)
    {
        std::vector<Recency::Use> out;
        for (const auto &k : keys) out.push_back({&k, kvblob::support::key_hash(k), bytes});
        return out;
    }
};

}  // namespace

TEST_CASE("recency: keys recorded in the nodes of forgotten ones are theirs alone")
{
    Recency r(100, 0);
    Uses old{{"old-a", "old-b", "old-c"}};
    r.hold(old.of(1000), true);  // below: evictable
    r.forget("old-a");
    r.forget("old-b");
    REQUIRE(r.size() == 1);

    // Recorded in the two kept nodes: not below, 10 bytes each.
    Uses fresh{{"new-d-with-a-key-longer-than-the-old-ones", "new-e"}};
    r.hold(fresh.of(10), false);
    CHECK(r.size() == 3);
    CHECK(r.over_budget(0) == 0);

    // Only old-c is held below: the new keys are not victims, however many
    // bytes are asked for.
    CHECK(r.take_victims(1 << 30) == std::vector<std::string>{"old-c"});
    CHECK(r.size() == 2);
    CHECK(r.take_victims(1 << 30).empty());

    // Written below, a new key is a victim, under its own name and size:
    // one of 10 bytes is enough for 10.
    r.written_below("new-e");
    CHECK(r.take_victims(10) == std::vector<std::string>{"new-e"});
    r.written_below(fresh.keys[0]);
    CHECK(r.take_victims(1) == std::vector<std::string>{fresh.keys[0]});
    CHECK(r.size() == 0);
}

TEST_CASE("recency: a key touched again is the newest, in a kept node or not")
{
    Recency r(100, 0);
    Uses first{{"k1", "k2"}};
    r.hold(first.of(1), true);
    r.forget("k1");
    Uses second{{"k3", "k4"}};  // k3 in k1's kept node
    r.hold(second.of(1), true);
    Uses again{{"k3"}};
    r.touch(again.of(1), false);
    // Oldest first: k2, k4, then k3, touched last.
    CHECK(r.take_victims(3) == std::vector<std::string>{"k2", "k4", "k3"});
}

TEST_CASE("recency: thousands of keys, a third forgotten and some touched, keep their order and each its own")
{
    // Enough keys to grow the record's table several times, and erases
    // whose gaps the entries after them fill: every key left is still found
    // (touch moves it, forget takes it), none twice.
    Recency r(100000, 0);
    Uses all;
    for (int i = 0; i < 3000; ++i) all.keys.push_back("key-" + std::to_string(i));
    r.hold(all.of(1), true);
    std::vector<std::string> expected;
    for (int i = 0; i < 3000; ++i)
        if (i % 3 == 0) r.forget(all.keys[i]);
        else if (i % 3 == 1) expected.push_back(all.keys[i]);
    REQUIRE(r.size() == 2000);
    // The keys i % 3 == 2 touched, in order: the newest, after the others.
    Uses touched;
    for (int i = 2; i < 3000; i += 3) touched.keys.push_back(all.keys[i]);
    r.touch(touched.of(1), false);
    expected.insert(expected.end(), touched.keys.begin(), touched.keys.end());
    CHECK(r.size() == 2000);
    CHECK(r.take_victims(1 << 30) == expected);
    CHECK(r.size() == 0);
}

TEST_CASE("recency: the table shrinks when most keys are gone, and every key left is still found")
{
    // A burst of keys grows the table; taking most of them shrinks it
    // (the walk of take_victims goes on across the rebuilds), and the keys
    // left are found in their order, by touch and take_victims.
    Recency r(100000, 0);
    Uses all;
    for (int i = 0; i < 4096; ++i) all.keys.push_back("burst-" + std::to_string(i));
    r.hold(all.of(1), true);
    const size_t grown = r.slot_count();
    REQUIRE(grown >= 2 * 4096);
    // The oldest 4000 go as victims, one walk over the order.
    const auto victims = r.take_victims(4000);
    REQUIRE(victims.size() == 4000);
    CHECK(victims.front() == "burst-0");
    CHECK(victims.back() == "burst-3999");
    CHECK(r.size() == 96);
    CHECK(r.slot_count() < grown / 8);
    CHECK(r.slot_count() >= 2 * r.size());
    // The 96 left, touched oldest last: the order reversed, each found once.
    Uses left;
    for (int i = 4095; i >= 4000; --i) left.keys.push_back(all.keys[i]);
    r.touch(left.of(1), false);
    CHECK(r.size() == 96);
    CHECK(r.take_victims(1 << 30) == left.keys);
    CHECK(r.size() == 0);
    CHECK(r.slot_count() == 64);
}
