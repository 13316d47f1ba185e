// The worker pool behind the bundled drivers' background modes
// (plugins/support/include/kvblob/support/work_queue.hpp): every job runs
// once, whether its worker was watching the queue or asleep; a job queued
// while the watching worker is busy wakes another; a worker on the core of
// the latest push sleeps at once, on another it watches; stop finishes the
// queue; workers carry the pool's thread name.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <sched.h>

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

// Whether what the queue says turns true within limit.
template <class Look>
bool turns_true(Look look, std::chrono::seconds limit)
{
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!look()) {
        if (std::chrono::steady_clock::now() >= until) return false;
        std::this_thread::yield();
    }
    return true;
}

// Whether every worker is asleep within limit, as the queue counts them.
bool all_asleep(const WorkQueue &q, unsigned workers, std::chrono::seconds limit)
{
    return turns_true([&] { return q.sleeping() == workers; }, limit);
}

}  // namespace

TEST_CASE("work queue: its workers carry the pool's thread name, cut to Linux's 15 bytes")
{
    const auto named = [](const std::string &name) {
        unsigned n = 0;
        for (const auto &task : std::filesystem::directory_iterator("/proc/self/task")) {
            std::ifstream comm(task.path() / "comm");
            std::string line;
            if (std::getline(comm, line) && line == name) ++n;
        }
        return n;
    };
    WorkQueue q;
    q.start(3, WorkQueue::watch_before_sleep, "kvblob-test-pool-named");
    CHECK(named("kvblob-test-poo") == 3);  // the first 15 bytes
    q.stop();
    CHECK(named("kvblob-test-poo") == 0);
}

TEST_CASE("work queue: each job runs once, pushed while its worker watches or after it fell asleep")
{
    // Watch 0: the workers never watch (a network driver's pool), so every
    // job pushed after the last one ran is run only because a push woke a
    // sleeper.
    for (auto watch : {WorkQueue::watch_before_sleep, std::chrono::microseconds(0)})
    for (unsigned workers : {1u, 2u, 3u}) {
        CAPTURE(workers);
        CAPTURE(watch.count());
        WorkQueue q;
        q.start(workers, watch);
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

namespace {

// Pins the calling thread to one core for its life, then gives it back the
// cores it had (also when a check throws).
class PinnedTo {
public:
    explicit PinnedTo(int cpu)
    {
        REQUIRE(sched_getaffinity(0, sizeof was_, &was_) == 0);
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        REQUIRE(sched_setaffinity(0, sizeof one, &one) == 0);
    }
    ~PinnedTo() { sched_setaffinity(0, sizeof was_, &was_); }
    PinnedTo(const PinnedTo &) = delete;
    PinnedTo &operator=(const PinnedTo &) = delete;

private:
    cpu_set_t was_;
};

// The cores this thread may run on.
std::vector<int> allowed_cpus()
{
    cpu_set_t set;
    std::vector<int> cpus;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
    for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &set)) cpus.push_back(c);
    return cpus;
}

}  // namespace

TEST_CASE("work queue: a worker sleeps at once on the core of the latest push, and watches on another")
{
    const std::vector<int> cpus = allowed_cpus();
    if (cpus.empty() || sched_getcpu() < 0) {
        MESSAGE("skipped: the cores this thread runs on are not known here");
        return;
    }
    // The pool's watch is a minute: a worker that watched after its job
    // would not be asleep within the 30 s below.
    SUBCASE("on the pusher's core: asleep at once, and woken for the next job")
    {
        PinnedTo pin(cpus[0]);  // the workers, started after, inherit it
        WorkQueue q;
        q.start(1, std::chrono::minutes(1));
        DoneCount done;
        q.push([&] { done.one(); });
        REQUIRE(done.reaches(1, 30s));
        CHECK(all_asleep(q, 1, 30s));
        q.push([&] { done.one(); });
        CHECK(done.reaches(2, 30s));
        q.stop();
    }
    SUBCASE("on another core: it watches")
    {
        if (cpus.size() < 2) {
            MESSAGE("skipped: this thread may run on one core only");
            return;
        }
        WorkQueue q;
        {
            PinnedTo worker_core(cpus[1]);
            q.start(1, std::chrono::minutes(1));
        }
        PinnedTo pin(cpus[0]);
        DoneCount done;
        q.push([&] { done.one(); });
        REQUIRE(done.reaches(1, 30s));
        CHECK(turns_true([&] { return q.watching(); }, 30s));
        CHECK(q.sleeping() == 0);
        q.push([&] { done.one(); });  // taken by the watching worker, no wake
        CHECK(done.reaches(2, 30s));
        q.stop();
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

// run_queued: a thread that waits for a job runs it itself when no worker
// took it yet (the bundled drivers' polls, DriverBase::run_queued).

namespace {

// Holds a queue's only worker inside a job until opened, so that what is
// pushed meanwhile stays queued: the test knows, without timing, that no
// worker can take it.
class BusyWorker {
public:
    explicit BusyWorker(WorkQueue &q)
    {
        q.push([this] {
            std::unique_lock lock(mu_);
            inside_ = true;
            cv_.notify_all();
            cv_.wait(lock, [&] { return open_; });
        });
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return inside_; });
    }
    ~BusyWorker() { open(); }
    void open()
    {
        std::lock_guard lock(mu_);
        open_ = true;
        cv_.notify_all();
    }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    bool inside_ = false, open_ = false;
};

}  // namespace

TEST_CASE("work queue: a waiter runs its own queued job in its thread, once, and never a job a worker took or that was never queued")
{
    WorkQueue q;
    q.start(1);
    BusyWorker busy(q);
    int tags[3];
    std::thread::id ran_on;
    int runs = 0;
    q.push([&] { ran_on = std::this_thread::get_id(), ++runs; }, &tags[0]);
    q.push([&] { ++runs; }, &tags[1]);
    CHECK_FALSE(q.run_queued(&tags[2]));  // never pushed
    CHECK_FALSE(q.run_queued(nullptr));   // untagged jobs are never taken
    CHECK(runs == 0);
    REQUIRE(q.run_queued(&tags[0]));
    CHECK(runs == 1);
    CHECK(ran_on == std::this_thread::get_id());
    CHECK_FALSE(q.run_queued(&tags[0]));  // taken already: not run twice
    busy.open();
    q.stop();  // the worker runs what is left: tags[1]'s job
    CHECK(runs == 2);
    CHECK_FALSE(q.run_queued(&tags[1]));
}

TEST_CASE("work queue: jobs taken by waiters and by workers at once each run exactly once")
{
    for (unsigned workers : {1u, 2u}) {
        CAPTURE(workers);
        WorkQueue q;
        q.start(workers);
        constexpr int per_thread = 2000, threads = 3;
        std::vector<std::atomic<int>> runs(per_thread * threads);
        std::atomic<int> by_waiters{0};
        DoneCount done;
        std::vector<std::thread> waiters;
        for (int t = 0; t < threads; ++t)
            waiters.emplace_back([&, t] {
                for (int j = 0; j < per_thread; ++j) {
                    std::atomic<int> &mine = runs[t * per_thread + j];
                    q.push([&] { mine.fetch_add(1); done.one(); }, &mine);
                    // Of three jobs, one is taken back after the next push, one
                    // at once, and one left to the workers: both sides run jobs,
                    // and a waiter races a watching worker for some.
                    if (j % 3 == 1 && q.run_queued(&runs[t * per_thread + j - 1])) by_waiters.fetch_add(1);
                    if (j % 3 == 1 && q.run_queued(&mine)) by_waiters.fetch_add(1);
                }
            });
        for (auto &t : waiters) t.join();
        REQUIRE(done.reaches(per_thread * threads, 60s));
        q.stop();
        int wrong = 0;
        for (auto &r : runs) wrong += r.load() != 1;
        CHECK(wrong == 0);
        CHECK(done.now() == per_thread * threads);
        MESSAGE("taken back by waiters: " << by_waiters.load() << " of " << per_thread * threads);
    }
}

TEST_CASE("work queue: a job a waiter runs may push and take back jobs, and wait for a worker's job, without deadlock")
{
    WorkQueue q;
    q.start(1);
    BusyWorker busy(q);
    int outer_tag, inner_tag;
    bool inner_ran = false, worker_job_ran = false;
    std::mutex mu;
    std::condition_variable cv;
    q.push(
        [&] {
            // The queue's lock is not held while a taken job runs: it can
            // queue and take back a job of its own...
            q.push([&] { inner_ran = true; }, &inner_tag);
            CHECK(q.run_queued(&inner_tag));
            // ...and wait for a job only a worker runs.
            q.push([&] {
                std::lock_guard lock(mu);
                worker_job_ran = true;
                cv.notify_all();
            });
            busy.open();
            std::unique_lock lock(mu);
            CHECK(cv.wait_for(lock, 60s, [&] { return worker_job_ran; }));
        },
        &outer_tag);
    REQUIRE(q.run_queued(&outer_tag));
    CHECK(inner_ran);
    CHECK(worker_job_ran);
    q.stop();
}
