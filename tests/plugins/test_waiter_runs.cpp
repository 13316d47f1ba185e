// A poll that finds its operation still queued runs it in the polling thread
// (plugins/support: DriverBase::run_queued, QueuedDriver, WorkQueue), the
// bundled drivers' way of staying fast when every core is busy. Shown on a
// driver of the test's own whose one worker the test holds inside an
// operation, so that which thread runs what is known without timing.
#include <doctest/doctest.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kvblob/support/queued_driver.hpp"

using namespace std::chrono_literals;
using kvblob::support::Op;
using kvblob::support::OpKind;

namespace {

kvblob_caps_t gate_caps()
{
    kvblob_caps_t caps{};
    caps.struct_size = sizeof caps;
    caps.max_rows_per_op = 16;
    caps.max_key_bytes = 64;
    caps.max_object_bytes = 1 << 20;
    caps.max_ops_in_flight = 1024;
    caps.flags = KVBLOB_CAP_PROBE;
    return caps;
}

// Every row READY; an operation whose first key is "gate" waits inside its
// worker until the test opens the gate. Records the thread each key ran on.
class GateDriver : public kvblob::support::QueuedDriver {
public:
    explicit GateDriver(bool waiter_runs) : QueuedDriver(gate_caps(), nullptr) { start_workers(1, waiter_runs); }
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
        if (op.rows.front().key == "gate") {
            std::unique_lock lock(mu_);
            inside_ = true;
            cv_.notify_all();
            cv_.wait(lock, [&] { return open_; });
        }
        for (size_t i = 0; i < op.rows.size(); ++i) {
            if (!begin_row(op, i)) continue;
            {
                std::lock_guard lock(mu_);
                ran_on_[op.rows[i].key] = std::this_thread::get_id();
                ++runs_[op.rows[i].key];
            }
            set_row(op, i, KVBLOB_ROW_READY);
        }
        end_access(op);
        finish(op);
    }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    bool inside_ = false, open_ = false;
    std::map<std::string, std::thread::id> ran_on_;
    std::map<std::string, int> runs_;
};

kvblob_op_t *probe(GateDriver &d, const std::string &key)
{
    kvblob_row_t row{sizeof(kvblob_row_t), 0, reinterpret_cast<const uint8_t *>(key.data()), key.size(), nullptr};
    kvblob_batch_t batch{sizeof(kvblob_batch_t), 0, &row, 1, nullptr};
    kvblob_op_t *op = nullptr;
    std::string why;
    REQUIRE_MESSAGE(d.submit(OpKind::probe, &batch, &op, why) == KVBLOB_OK, why);
    return op;
}

bool final_now(GateDriver &d, kvblob_op_t *op)
{
    uint32_t fin = 0;
    REQUIRE(d.poll(op, &fin) == KVBLOB_OK);
    return fin != 0;
}

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

TEST_CASE("waiter runs: without it, a poll never runs an operation, and the worker runs it once the gate opens")
{
    GateDriver d(false);
    kvblob_op_t *gate = probe(d, "gate");
    d.wait_inside_gate();
    kvblob_op_t *queued = probe(d, "queued");
    CHECK_FALSE(final_now(d, queued));
    CHECK(d.runs("queued") == 0);
    d.open_gate();
    CHECK(d.drain(60'000'000'000ull) == KVBLOB_OK);
    CHECK(final_now(d, queued));
    CHECK(d.runs("queued") == 1);
    CHECK(d.ran_on("queued") != std::this_thread::get_id());
    CHECK(d.release(queued) == KVBLOB_OK);
    CHECK(d.release(gate) == KVBLOB_OK);
    CHECK(d.can_close() == KVBLOB_OK);
}

TEST_CASE("waiter runs: many threads polling their own operations while the worker runs others: each runs once")
{
    GateDriver d(true);
    constexpr int threads = 3, per_thread = 300;
    std::vector<std::thread> pollers;
    for (int t = 0; t < threads; ++t)
        pollers.emplace_back([&, t] {
            for (int j = 0; j < per_thread; ++j) {
                kvblob_op_t *op = probe(d, "k" + std::to_string(t) + "-" + std::to_string(j));
                uint32_t fin = 0;
                // Polled until final: by this thread or by the worker.
                while (d.poll(op, &fin) == KVBLOB_OK && !fin) std::this_thread::yield();
                while (d.release(op) != KVBLOB_OK) std::this_thread::yield();  // access ends with final here
            }
        });
    for (auto &p : pollers) p.join();
    int wrong = 0;
    for (int t = 0; t < threads; ++t)
        for (int j = 0; j < per_thread; ++j) wrong += d.runs("k" + std::to_string(t) + "-" + std::to_string(j)) != 1;
    CHECK(wrong == 0);
    CHECK(d.drain(60'000'000'000ull) == KVBLOB_OK);
    CHECK(d.can_close() == KVBLOB_OK);
}
