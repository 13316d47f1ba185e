// The worker pool behind the bundled drivers' background modes
// (plugins/support/include/kvblob/support/work_queue.hpp): every job runs
// once, whether its worker was watching the queue or asleep; a job queued
// while the watching worker is busy wakes another; stop finishes the queue.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "kvblob/support/work_queue.hpp"

using namespace std::chrono_literals;
using kvblob::support::WorkQueue;

namespace {

// Counts jobs done; a waiter wakes when the count reaches what it wants.
class DoneCount {
public:
    void one()
    {
        std::lock_guard lock(mu_);
        ++n_;
        cv_.notify_all();
    }
    bool reaches(uint64_t n, std::chrono::seconds limit)
    {
        std::unique_lock lock(mu_);
        return cv_.wait_for(lock, limit, [&] { return n_ >= n; });
    }
    uint64_t now()
    {
        std::lock_guard lock(mu_);
        return n_;
    }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    uint64_t n_ = 0;
};

// Whether every worker is asleep within limit, as the queue counts them.
bool all_asleep(const WorkQueue &q, unsigned workers, std::chrono::seconds limit)
{
    const auto until = std::chrono::steady_clock::now() + limit;
    while (q.sleeping() != workers) {
        if (std::chrono::steady_clock::now() >= until) return false;
        std::this_thread::yield();
    }
    return true;
}

}  // namespace

TEST_CASE("work queue: each job runs once, pushed while its worker watches or after it fell asleep")
{
    for (unsigned workers : {1u, 2u, 3u}) {
        CAPTURE(workers);
        WorkQueue q;
        q.start(workers);
        DoneCount done;
        // One job at a time, each pushed once the last one ran: at once,
        // while a worker still watches, or, every fourth, once the queue
        // says every worker fell asleep, so that only a wake runs it.
        for (uint64_t i = 1; i <= 300; ++i) {
            q.push([&] { done.one(); });
            REQUIRE(done.reaches(i, 30s));
            if (i % 4 == 0) REQUIRE(all_asleep(q, workers, 30s));
        }
        // And many at once, from several threads.
        std::vector<std::thread> pushers;
        for (int t = 0; t < 3; ++t)
            pushers.emplace_back([&] {
                for (int j = 0; j < 1000; ++j) q.push([&] { done.one(); });
            });
        for (auto &t : pushers) t.join();
        CHECK(done.reaches(3300, 30s));
        q.stop();
        CHECK(done.now() == 3300);
    }
}

TEST_CASE("work queue: a job queued while the watching worker runs another wakes a sleeping worker")
{
    WorkQueue q;
    q.start(2);
    // Two jobs that each wait for the other to start: both finish only if
    // two workers run them at once.
    std::mutex mu;
    std::condition_variable cv;
    int started = 0;
    std::atomic<int> met{0};
    auto rendezvous = [&] {
        std::unique_lock lock(mu);
        ++started;
        cv.notify_all();
        if (cv.wait_for(lock, 30s, [&] { return started == 2; })) ++met;
    };
    for (int round = 0; round < 50; ++round) {
        {
            std::lock_guard lock(mu);
            started = 0;
        }
        met = 0;
        DoneCount done;
        q.push([&] { rendezvous(); done.one(); });
        q.push([&] { rendezvous(); done.one(); });
        REQUIRE(done.reaches(2, 60s));
        REQUIRE(met == 2);
    }
}

TEST_CASE("work queue: stop runs every job already queued")
{
    DoneCount done;
    {
        WorkQueue q;
        q.start(1);
        std::mutex gate;
        std::unique_lock hold(gate);
        q.push([&] { std::lock_guard wait_for_gate(gate); done.one(); });  // keeps the worker busy
        for (int i = 0; i < 100; ++i) q.push([&] { done.one(); });
        hold.unlock();
        q.stop();
        CHECK(done.now() == 101);
    }
}
