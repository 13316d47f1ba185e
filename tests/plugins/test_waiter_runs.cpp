// A poll that finds its operation still queued, or rows of it unclaimed,
// runs them in the polling thread (plugins/support: DriverBase::run_queued,
// QueuedDriver, RowShare, WorkQueue), the bundled drivers' way of staying
// fast when every core is busy. Shown on a driver of the test's own whose
// one worker the test holds inside a row, so that which thread runs what is
// known without timing.
#include <doctest/doctest.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kvblob/support/queued_driver.hpp"
#include "kvblob/support/row_share.hpp"
#include "plugins/probe_caps.hpp"

using namespace std::chrono_literals;
using kvblob::support::Op;
using kvblob::support::OpKind;

namespace {

// Every row READY; a row whose key is "gate" waits inside the thread that
// runs it until the test opens the gate. Records the thread each key ran on.
class GateDriver : public kvblob::support::QueuedDriver {
public:
    explicit GateDriver(bool waiter_runs) : QueuedDriver(probe_caps(), nullptr) { start_workers("test-gate", 1, waiter_runs); }
    ~GateDriver() override { stop(); }

    void wait_inside_gate()
    {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return inside_; });
    }
    void open_gate()
    {
        std::lock_guard lock(mu_);
        open_ = true;
        cv_.notify_all();
    }
    std::thread::id ran_on(const std::string &key)
    {
        std::lock_guard lock(mu_);
        return ran_on_.at(key);
    }
    int runs(const std::string &key)
    {
        std::lock_guard lock(mu_);
        return runs_[key];
    }
    using DriverBase::can_close;
    using DriverBase::drain;
    using DriverBase::poll;
    using DriverBase::release;
    using DriverBase::submit;

protected:
    void run(Op &op) override
    {
        for (size_t i = 0; i < op.rows.size(); ++i) run_row(op, i);
        end_access(op);
        finish(op);
    }
    void run_row(Op &op, size_t i) override
    {
        if (!begin_row(op, i)) return;
        std::unique_lock lock(mu_);
        if (op.rows[i].key == "gate") {
            inside_ = true;
            cv_.notify_all();
            cv_.wait(lock, [&] { return open_; });
        }
        ran_on_[op.rows[i].key] = std::this_thread::get_id();
        ++runs_[op.rows[i].key];
        lock.unlock();
        set_row(op, i, KVBLOB_ROW_READY);
    }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    bool inside_ = false, open_ = false;
    std::map<std::string, std::thread::id> ran_on_;
    std::map<std::string, int> runs_;
};

kvblob_op_t *probe(GateDriver &d, const std::vector<std::string> &keys)
{
    std::vector<kvblob_row_t> rows;
    for (const auto &key : keys)
        rows.push_back({sizeof(kvblob_row_t), 0, reinterpret_cast<const uint8_t *>(key.data()), key.size(), nullptr});
    kvblob_batch_t batch{sizeof(kvblob_batch_t), 0, rows.data(), rows.size(), nullptr};
    kvblob_op_t *op = nullptr;
    std::string why;
    REQUIRE_MESSAGE(d.submit(OpKind::probe, &batch, &op, why) == KVBLOB_OK, why);
    return op;
}
kvblob_op_t *probe(GateDriver &d, const std::string &key) { return probe(d, std::vector<std::string>{key}); }

bool final_now(GateDriver &d, kvblob_op_t *op)
{
    uint32_t fin = 0;
    REQUIRE(d.poll(op, &fin) == KVBLOB_OK);
    return fin != 0;
}

// Opens the gate and drains: op is final then, and key ran once, on the
// worker.
void open_gate_and_drain(GateDriver &d, kvblob_op_t *op, const std::string &key)
{
    d.open_gate();
    CHECK(d.drain(60'000'000'000ull) == KVBLOB_OK);
    CHECK(final_now(d, op));
    CHECK(d.runs(key) == 1);
    CHECK(d.ran_on(key) != std::this_thread::get_id());
}

kvblob_caps_t held_caps()
{
    kvblob_caps_t caps{};
    caps.struct_size = sizeof caps;
    caps.max_rows_per_op = 16;
    caps.max_spans_per_row = 4;
    caps.max_key_bytes = 64;
    caps.max_object_bytes = 1 << 20;
    caps.max_ops_in_flight = 1024;
    return caps;
}

// Every row READY, counted; a get naming a key staged with stage_held_get
// is parked until release_held_gets pushes it (and opens its rows to
// sharing) on whichever thread calls it.
class HeldDriver : public kvblob::support::QueuedDriver {
public:
    HeldDriver() : QueuedDriver(held_caps(), nullptr) { start_workers("test-held", 1, true); }
    ~HeldDriver() override { stop(); }
    std::atomic<int> row_runs{0};
    using DriverBase::can_close;
    using DriverBase::drain;
    using DriverBase::poll;
    using DriverBase::register_region;
    using DriverBase::release;
    using DriverBase::submit;
    using DriverBase::unregister_region;
    using QueuedDriver::release_held_gets;
    using QueuedDriver::stage_held_get;

protected:
    void run(Op &) override {}  // not with waiters_run
    void run_row(Op &op, size_t i) override
    {
        if (!begin_row(op, i)) return;
        row_runs.fetch_add(1);
        set_row(op, i, KVBLOB_ROW_READY);
    }
};

}  // namespace

TEST_CASE("waiter runs: a poll runs its own queued operation in the polling thread, once, and drain and close follow")
{
    GateDriver d(true);
    kvblob_op_t *gate = probe(d, "gate");
    d.wait_inside_gate();  // the only worker is busy: what comes next stays queued
    kvblob_op_t *mine = probe(d, "mine");
    CHECK(final_now(d, mine));  // ran inside this poll
    CHECK(d.ran_on("mine") == std::this_thread::get_id());
    CHECK(final_now(d, mine));  // and only once
    CHECK(d.runs("mine") == 1);
    CHECK(d.release(mine) == KVBLOB_OK);
    // The gate's operation is the worker's: a poll does not take it back.
    CHECK_FALSE(final_now(d, gate));
    std::thread opener([&] { d.open_gate(); });
    CHECK(d.drain(60'000'000'000ull) == KVBLOB_OK);
    opener.join();
    CHECK(final_now(d, gate));
    CHECK(d.ran_on("gate") != std::this_thread::get_id());
    CHECK(d.release(gate) == KVBLOB_OK);
    CHECK(d.can_close() == KVBLOB_OK);
}

TEST_CASE("waiter runs: a poll runs the rows no thread claimed beside the worker, and the row run last completes the operation")
{
    GateDriver d(true);
    kvblob_op_t *op = probe(d, {"gate", "a", "b", "c"});
    d.wait_inside_gate();  // the worker claimed the first row and waits inside it
    CHECK_FALSE(final_now(d, op));  // this poll ran the other three
    for (const char *key : {"a", "b", "c"}) {
        CHECK(d.runs(key) == 1);
        CHECK(d.ran_on(key) == std::this_thread::get_id());
    }
    CHECK_FALSE(final_now(d, op));  // nothing is left for a poll: the gate's row is the worker's
    CHECK(d.runs("a") == 1);
    open_gate_and_drain(d, op, "gate");
    CHECK(d.release(op) == KVBLOB_OK);
    CHECK(d.can_close() == KVBLOB_OK);
}

TEST_CASE("waiter runs: without it, a poll never runs an operation, and the worker runs it once the gate opens")
{
    GateDriver d(false);
    kvblob_op_t *gate = probe(d, "gate");
    d.wait_inside_gate();
    kvblob_op_t *queued = probe(d, "queued");
    CHECK_FALSE(final_now(d, queued));
    CHECK(d.runs("queued") == 0);
    open_gate_and_drain(d, queued, "queued");
    CHECK(d.release(queued) == KVBLOB_OK);
    CHECK(d.release(gate) == KVBLOB_OK);
    CHECK(d.can_close() == KVBLOB_OK);
}

TEST_CASE("waiter runs: many threads polling their own operations while the worker runs others: each row runs once")
{
    GateDriver d(true);
    constexpr int threads = 3, per_thread = 300, rows = 3;
    const auto key = [](int t, int j, int r) {
        // Appended, not "k" + std::string: GCC 12's -O3 warns falsely (-Wrestrict) on that form.
        std::string k = "k";
        return k.append(std::to_string(t)).append("-").append(std::to_string(j)).append("-").append(std::to_string(r));
    };
    std::vector<std::thread> pollers;
    for (int t = 0; t < threads; ++t)
        pollers.emplace_back([&, t] {
            for (int j = 0; j < per_thread; ++j) {
                kvblob_op_t *op = probe(d, {key(t, j, 0), key(t, j, 1), key(t, j, 2)});
                uint32_t fin = 0;
                // Polled until final: by this thread or by the worker.
                while (d.poll(op, &fin) == KVBLOB_OK && !fin) std::this_thread::yield();
                while (d.release(op) != KVBLOB_OK) std::this_thread::yield();  // access ends with final here
            }
        });
    for (auto &p : pollers) p.join();
    int wrong = 0;
    for (int t = 0; t < threads; ++t)
        for (int j = 0; j < per_thread; ++j)
            for (int r = 0; r < rows; ++r) wrong += d.runs(key(t, j, r)) != 1;
    CHECK(wrong == 0);
    CHECK(d.drain(60'000'000'000ull) == KVBLOB_OK);
    CHECK(d.can_close() == KVBLOB_OK);
}

TEST_CASE("waiter runs: a held get is shared only once its driver releases it, however another thread polls it meanwhile")
{
    HeldDriver d;
    std::vector<uint8_t> mem(4096);
    kvblob_region_desc_t desc{sizeof desc, KVBLOB_MEMORY_HOST, mem.data(), mem.size(), 0, 0};
    kvblob_region_t *region = nullptr;
    std::string why;
    REQUIRE(d.register_region(&desc, &region, why) == KVBLOB_OK);
    constexpr int rounds = 200, rows = 4;
    int expected_runs = 0;
    for (int round = 0; round < rounds; ++round) {
        REQUIRE(d.stage_held_get("held") == KVBLOB_OK);
        std::vector<std::string> keys{"held", "b", "c", "d"};
        std::vector<kvblob_span_t> spans;
        for (int r = 0; r < rows; ++r) spans.push_back({sizeof(kvblob_span_t), 0, region, uint64_t(r) * 1024, 1024});
        std::vector<kvblob_row_t> rs;
        for (int r = 0; r < rows; ++r)
            rs.push_back({sizeof(kvblob_row_t), 1, reinterpret_cast<const uint8_t *>(keys[r].data()), keys[r].size(),
                          &spans[r]});
        kvblob_batch_t batch{sizeof(kvblob_batch_t), 0, rs.data(), rs.size(), nullptr};
        kvblob_op_t *op = nullptr;
        REQUIRE(d.submit(OpKind::get, &batch, &op, why) == KVBLOB_OK);
        uint32_t held_final = 1;
        REQUIRE(d.poll(op, &held_final) == KVBLOB_OK);
        CHECK(held_final == 0);  // held: a poll runs none of its rows
        CHECK(d.row_runs.load() == expected_runs);
        std::atomic<bool> go{false};
        std::thread poller([&] {
            go.store(true);
            uint32_t fin = 0;
            while (d.poll(op, &fin) == KVBLOB_OK && !fin) {
            }
        });
        while (!go.load()) {
        }
        d.release_held_gets();  // its rows open to sharing here, while the poller looks
        poller.join();
        expected_runs += rows;
        while (d.release(op) != KVBLOB_OK) std::this_thread::yield();
    }
    CHECK(d.row_runs.load() == expected_runs);
    CHECK(d.drain(10'000'000'000ull) == KVBLOB_OK);
    CHECK(d.unregister_region(region) == KVBLOB_OK);
    CHECK(d.can_close() == KVBLOB_OK);
}

TEST_CASE("row share: every row runs once, and exactly one call is told to complete, however the threads meet")
{
    using kvblob::support::RowShare;
    for (const uint64_t per_claim : {1, 3}) {
        CAPTURE(per_claim);
        // The job alone.
        RowShare alone;
        alone.open(10, per_claim);
        std::vector<int> ran(10, 0);
        CHECK(alone.work([&](uint64_t i) { ++ran[i]; }, true));
        CHECK(ran == std::vector<int>(10, 1));
        CHECK_FALSE(alone.unclaimed());

        // An operation of no rows: the job completes it.
        RowShare none;
        none.open(0, per_claim);
        CHECK_FALSE(none.unclaimed());
        CHECK(none.work([](uint64_t) { FAIL("no row to run"); }, true));

        // A helper that took every row leaves the completion to the job.
        RowShare helped;
        helped.open(7, per_claim);
        std::vector<int> helped_ran(7, 0);
        CHECK(helped.unclaimed());
        CHECK_FALSE(helped.work([&](uint64_t i) { ++helped_ran[i]; }, false));
        CHECK(helped_ran == std::vector<int>(7, 1));
        CHECK_FALSE(helped.unclaimed());
        CHECK(helped.work([&](uint64_t) { FAIL("every row was claimed"); }, true));

        // Helpers and the job at once, many times.
        constexpr int rounds = 1000, helpers = 2;
        constexpr uint64_t rows = 9;
        int wrong_runs = 0, wrong_completions = 0;
        for (int round = 0; round < rounds; ++round) {
            RowShare share;
            share.open(rows, per_claim);
            std::vector<std::atomic<int>> runs(rows);
            std::atomic<int> completions{0};
            std::vector<std::thread> threads;
            for (int h = 0; h <= helpers; ++h)
                threads.emplace_back([&, h] {
                    if (share.work([&](uint64_t i) { runs[i].fetch_add(1); }, h == 0)) completions.fetch_add(1);
                });
            for (auto &t : threads) t.join();
            for (const auto &r : runs) wrong_runs += r.load() != 1;
            wrong_completions += completions.load() != 1;
        }
        CHECK(wrong_runs == 0);
        CHECK(wrong_completions == 0);
    }
}
