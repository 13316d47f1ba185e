// The tiered driver's kept copy memory (plugins/tiered/copy_buffers.hpp):
// a buffer given back is the next one taken, nothing written over it, and
// no more than max_kept bytes are ever kept idle.
#include <doctest/doctest.h>

#include <algorithm>

#include "tiered/copy_buffers.hpp"

using kvblob::tiered::Bytes;
using kvblob::tiered::CopyBuffers;

TEST_CASE("copy buffers: a buffer given back is taken again, its bytes untouched")
{
    CopyBuffers buffers(uint64_t(8) << 20);
    Bytes first = buffers.take(1 << 20);
    REQUIRE(first.size() == (1u << 20));
    std::fill(first.begin(), first.end(), uint8_t{0xAB});
    const uint8_t *memory = first.data();
    buffers.give_back(std::move(first));
    CHECK(buffers.kept_bytes() >= (1u << 20));

    Bytes again = buffers.take(1000);  // smaller: the kept buffer serves it
    CHECK(again.data() == memory);
    CHECK(again.size() == 1000);
    CHECK(std::all_of(again.begin(), again.end(), [](uint8_t b) { return b == 0xAB; }));  // not zeroed
    CHECK(buffers.kept_bytes() == 0);
}

TEST_CASE("copy buffers: the smallest kept buffer large enough is taken")
{
    CopyBuffers buffers(uint64_t(16) << 20);
    Bytes small = buffers.take(1 << 20), large = buffers.take(4 << 20);
    const uint8_t *small_memory = small.data(), *large_memory = large.data();
    buffers.give_back(std::move(large));
    buffers.give_back(std::move(small));

    Bytes mid = buffers.take(2 << 20);  // too large for the 1 MiB one
    CHECK(mid.data() == large_memory);
    Bytes little = buffers.take(512 << 10);
    CHECK(little.data() == small_memory);
    Bytes fresh = buffers.take(512 << 10);  // none kept now: a new one
    CHECK(fresh.data() != small_memory);
    CHECK(fresh.data() != large_memory);
}

TEST_CASE("copy buffers: no more than max_kept bytes are kept idle")
{
    CopyBuffers buffers(uint64_t(3) << 20);
    Bytes a = buffers.take(2 << 20), b = buffers.take(2 << 20);
    buffers.give_back(std::move(a));
    const uint64_t kept = buffers.kept_bytes();
    CHECK(kept >= (2u << 20));
    buffers.give_back(std::move(b));  // would pass 3 MiB: freed
    CHECK(buffers.kept_bytes() == kept);
    buffers.give_back(Bytes());  // nothing to keep
    CHECK(buffers.kept_bytes() == kept);
}
