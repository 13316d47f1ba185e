// Many threads, two drivers on one store, mixed put/get/probe/cancel on equal
// and distinct keys. Every key's object has content fixed by the key, so any
// READY get that does not hold exactly that content is a torn or wrong read
// (R-CON-1, R-CON-2). Run under ThreadSanitizer with the tsan preset.
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <thread>

#include "plugins/driver_harness.hpp"
#include "kvblob/tools/fill_pattern.hpp"

using kvblob::OpKind;
using namespace std::chrono_literals;

TEST_CASE("concurrency stress: mixed operations from many threads never show a partial object")
{
    const auto store = unique_store("stress");
    MemoryHarness a({{"store", store}, {"mode", "background"}, {"workers", "2"}});
    MemoryHarness b({{"store", store}, {"mode", "blocking"}});
    constexpr int threads = 4, iterations = 1500, shared_keys = 32;
    constexpr size_t size = 8192;

    auto expected = [](int key) {
        std::vector<uint8_t> v(size);
        fill_pattern(v.data(), size, 7000 + key);
        return v;
    };
    std::atomic<int> torn{0}, ready_gets{0}, cancelled{0}, failures{0};

    auto worker = [&](int t) {
        MemoryHarness &h = (t % 2) ? b : a;
        auto src = h.buffer(size), dst = h.buffer(size);
        std::mt19937 rng(1234 + t);
        for (int i = 0; i < iterations; ++i) {
            // Half the keys are shared by every thread, half are this thread's.
            const int key = (rng() % 2) ? static_cast<int>(rng() % shared_keys) : 1000 * (t + 1) + static_cast<int>(rng() % 16);
            const std::string name = "stress/" + std::to_string(key);
            const int what = static_cast<int>(rng() % 4);
            Batch batch;
            if (what == 0 || what == 3) {
                auto content = expected(key);
                std::memcpy(src.bytes.data(), content.data(), size);
                batch.row(name, {make_span(src.handle(), 0, size)});
                auto op = h.submit(OpKind::put, batch);
                if (what == 3) op.cancel();
                if (!op.wait(30s)) { ++failures; continue; }
                auto r = op.results()[0].result;
                if (r == KVBLOB_ROW_CANCELLED) ++cancelled;
                else if (r != KVBLOB_ROW_READY && r != KVBLOB_ROW_NOT_READY) ++failures;
            } else if (what == 1) {
                std::memset(dst.bytes.data(), 0, size);
                batch.row(name, {make_span(dst.handle(), 0, size)});
                auto op = h.submit(OpKind::get, batch);
                if (!op.wait(30s)) { ++failures; continue; }
                auto r = op.results()[0].result;
                if (r == KVBLOB_ROW_READY) {
                    ++ready_gets;
                    if (dst.bytes != expected(key)) ++torn;
                } else if (r != KVBLOB_ROW_MISS && r != KVBLOB_ROW_NOT_READY) {
                    ++failures;
                }
            } else {
                batch.row(name);
                auto op = h.submit(OpKind::probe, batch);
                if (!op.wait(30s)) { ++failures; continue; }
                auto r = op.results()[0].result;
                if (r != KVBLOB_ROW_READY && r != KVBLOB_ROW_MISS && r != KVBLOB_ROW_NOT_READY) ++failures;
            }
        }
    };
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(worker, t);
    for (auto &t : pool) t.join();

    CHECK(torn.load() == 0);
    CHECK(failures.load() == 0);
    CHECK(ready_gets.load() > 0);  // the test did read objects back
    MESSAGE("ready gets: " << ready_gets.load() << ", cancelled puts: " << cancelled.load());
    CHECK(a.driver().drain(10s) == KVBLOB_OK);
    CHECK(b.driver().drain(10s) == KVBLOB_OK);
}

// Rows of 64 KiB and more are shared between the worker that runs an
// operation and the threads that wait for it (row_share.hpp): every row of
// a put reaches the store whole, every row of a get lands whole in its own
// place, and a cancel in the middle leaves each row either done or
// CANCELLED, never half.
TEST_CASE("concurrency stress: the rows of one operation, shared by its waiting thread and the workers, each move whole")
{
    MemoryHarness h({{"store", unique_store("shared-rows")}, {"mode", "background"}, {"workers", "2"}});
    constexpr int threads = 3, iterations = 60, rows = 6;
    constexpr size_t size = 64 << 10;
    std::atomic<int> wrong{0}, failures{0}, cancelled{0};
    auto worker = [&](int t) {
        auto src = h.buffer(size * rows), dst = h.buffer(size * rows);
        for (int i = 0; i < iterations; ++i) {
            Batch put, get;
            for (int r = 0; r < rows; ++r) {
                const std::string key =
                    "shared/" + std::to_string(t) + "/" + std::to_string(i) + "/" + std::to_string(r);
                fill_pattern(src.bytes.data() + r * size, size, static_cast<uint32_t>(t * 100000 + i * 100 + r));
                put.row(key, {make_span(src.handle(), r * size, size)});
                get.row(key, {make_span(dst.handle(), r * size, size)});
            }
            auto op = h.submit(OpKind::put, put);
            if (i % 5 == 4) op.cancel();
            if (!op.wait(30s)) {
                ++failures;
                continue;
            }
            const auto stored = op.results();
            std::memset(dst.bytes.data(), 0, dst.bytes.size());
            auto back = h.submit(OpKind::get, get);
            if (!back.wait(30s)) {
                ++failures;
                continue;
            }
            const auto read = back.results();
            for (int r = 0; r < rows; ++r) {
                if (stored[r].result == KVBLOB_ROW_CANCELLED) {
                    ++cancelled;
                    wrong += read[r].result != KVBLOB_ROW_MISS;
                    continue;
                }
                if (stored[r].result != KVBLOB_ROW_READY || read[r].result != KVBLOB_ROW_READY) {
                    ++failures;
                    continue;
                }
                wrong += std::memcmp(dst.bytes.data() + r * size, src.bytes.data() + r * size, size) != 0;
            }
        }
    };
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(worker, t);
    for (auto &t : pool) t.join();
    CHECK(wrong.load() == 0);
    CHECK(failures.load() == 0);
    MESSAGE("cancelled rows: " << cancelled.load());
    CHECK(h.driver().drain(10s) == KVBLOB_OK);
}
