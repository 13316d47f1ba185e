// What the host allocates to admit an operation, fetch its results and
// release it does not grow with the operation's rows (the null driver, which
// allocates nothing the host sees, stands behind it). Counted, not timed:
// every allocation through operator new on this thread while counting is on.
#include <doctest/doctest.h>

#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "kvblob/host/batch.hpp"
#include "kvblob/host/plugin.hpp"

namespace {

thread_local bool counting = false;
thread_local uint64_t allocations = 0;

}  // namespace

// Replaced for the whole test program; they count only while asked to.
void *operator new(std::size_t n)
{
    if (counting) ++allocations;
    if (void *p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
// GCC takes these frees for mismatched with operator new at each inlined
// use; they match the malloc above.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace {

using kvblob::Batch;
using kvblob::OpKind;

// Allocations by submit, wait, results and release of one operation of
// rows rows (of 64 bytes each, in one region).
uint64_t allocations_for(kvblob::Driver &driver, const kvblob::Region &region, OpKind kind, uint64_t rows)
{
    Batch batch;
    for (uint64_t r = 0; r < rows; ++r)
        batch.row("cost/" + std::to_string(rows) + "/" + std::to_string(r), {kvblob::make_span(region.handle(), r * 64, 64)});
    const kvblob_batch_t &rows_of_batch = batch.get();  // Batch builds its row array here, not counted
    allocations = 0;
    counting = true;
    {
        kvblob::Operation op = driver.submit(kind, rows_of_batch);
        REQUIRE(op.wait(std::chrono::seconds(10)));
        const auto results = op.results();
        REQUIRE(results.size() == rows);
        REQUIRE(op.release() == KVBLOB_OK);
    }
    counting = false;
    return allocations;
}

}  // namespace

TEST_CASE("host cost: admitting, answering and releasing an operation allocates no more for 4,096 rows than for 8")
{
    auto plugin = kvblob::Plugin::load(KVBLOB_PLUGIN_DIR "/libkvblob_null.so");
    auto driver = plugin.open({});
    std::vector<uint8_t> memory(4096 * 64);
    const kvblob_region_desc_t desc{sizeof desc, KVBLOB_MEMORY_HOST, memory.data(), memory.size(), 0, 0};
    auto region = driver.register_region(desc);
    for (OpKind kind : {OpKind::put, OpKind::get}) {
        CAPTURE(kvblob::to_string(kind));
        allocations_for(driver, region, kind, 4096);  // what each thread keeps from one operation to the next
        const uint64_t few = allocations_for(driver, region, kind, 8);
        const uint64_t many = allocations_for(driver, region, kind, 4096);
        CHECK(few > 0);  // the count sees the host's allocations at all
        CHECK(many == few);
    }
}
