// A fixed pool of worker threads that run queued jobs in order of arrival.
// The bundled drivers complete operations on it in their background modes.
// Stopping lets the workers finish every job already queued, then joins
// them: a queued operation is always completed, never dropped.
//
// A worker that runs out of jobs watches the queue for a short while before
// it sleeps, unless it runs on the core of the pool's latest push (see
// watch()). Waking a sleeping worker costs the submitting thread a system
// call and, where the worker's core went idle, the time that core takes to
// come back: tens of microseconds on a virtual machine whose idle vCPU
// halts, against the few microseconds an in-memory operation takes. One
// worker watches at a time (the others sleep at once), so an idle pool
// keeps at most one core busy, for at most its watch. A submitter makes the
// system call only while a worker sleeps. A pool whose jobs wait on a
// network round trip starts without a watch (start's watch 0): there the
// wake is a small part of a job, and a watch right after a job holds a
// core that the thread waiting for that job's answer needs (the Redis
// driver, plugins/redis/redis_driver.cpp).
//
// A job pushed with a tag may be taken back and run by another thread
// (run_queued): a caller that waits for that job anyway runs it itself,
// rather than waiting for a worker to get a time slice. On a machine whose
// cores are all busy that wait was most of an operation's time (docs/
// performance.md, "Under load"). Each job runs exactly once: whoever takes
// it out of the queue, under the lock, runs it.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <iterator>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#endif

#include "spin_pause.hpp"
#include "thread_name.hpp"

namespace kvblob::support {

class WorkQueue {
public:
    using Job = std::function<void()>;
    // How long a worker out of jobs watches before it sleeps.
    static constexpr std::chrono::microseconds watch_before_sleep{50};

    WorkQueue() = default;
    ~WorkQueue() { stop(); }
    WorkQueue(const WorkQueue &) = delete;
    WorkQueue &operator=(const WorkQueue &) = delete;

    // watch: how long a worker out of jobs watches before it sleeps (0:
    // it sleeps at once). name: the workers' thread name (name_thread).
    void start(unsigned threads, std::chrono::microseconds watch = watch_before_sleep,
               const std::string &name = "kvblob-worker")
    {
        watch_ = watch;
        for (unsigned i = 0; i < threads; ++i) name_thread(threads_.emplace_back([this] { loop(); }), name);
    }
    bool running() const { return !threads_.empty(); }
    // Workers asleep now, past their watch (for tests: the queue's own
    // signal that a push must wake one).
    unsigned sleeping() const { return sleepers_.load(std::memory_order_seq_cst); }
    // Whether a worker watches the queue now (for tests, as sleeping()).
    bool watching() const { return watching_.load(std::memory_order_seq_cst); }

    // tag: what run_queued(tag) takes this job by (nullptr: never taken).
    void push(Job job, const void *tag = nullptr)
    {
        pusher_cpu_.store(current_cpu(), std::memory_order_relaxed);
        {
            std::lock_guard lock(mu_);
            jobs_.push_back({std::move(job), tag});
            queued_.fetch_add(1, std::memory_order_seq_cst);
        }
        // seq_cst with loop()'s count in and look: either this sees the
        // sleeper, or the sleeper sees the job. A watching worker takes the
        // first queued job without a wake (it looks at the queue under the
        // lock once it stops watching); a sleeper is woken for the rest.
        if (sleepers_.load(std::memory_order_seq_cst) != 0 &&
            (!watching_.load(std::memory_order_seq_cst) || queued_.load(std::memory_order_seq_cst) > 1))
            cv_.notify_one();
    }

    // Runs the job pushed with tag in the calling thread, if it is still
    // queued (no worker took it), and returns true; false when it is not
    // queued (a worker took it, it ran, or it was never pushed). After
    // stop() there is nothing to take.
    bool run_queued(const void *tag)
    {
        Job job;
        {
            std::lock_guard lock(mu_);
            if (tag == nullptr) return false;
            // From the back: a waiter most often wants what it pushed last.
            auto it = std::find_if(jobs_.rbegin(), jobs_.rend(), [&](const Entry &e) { return e.tag == tag; });
            if (it == jobs_.rend()) return false;
            job = std::move(it->job);
            jobs_.erase(std::next(it).base());
            queued_.fetch_sub(1, std::memory_order_relaxed);
        }
        job();
        return true;
    }

    void stop()
    {
        {
            std::lock_guard lock(mu_);
            stopping_ = true;
        }
        cv_.notify_all();
        for (auto &t : threads_)
            if (t.joinable()) t.join();
        threads_.clear();
    }

private:
    void loop()
    {
        for (;;) {
            watch();
            Job job;
            {
                std::unique_lock lock(mu_);
                if (jobs_.empty() && !stopping_) {
                    sleepers_.fetch_add(1, std::memory_order_seq_cst);
                    cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
                    sleepers_.fetch_sub(1, std::memory_order_relaxed);
                }
                if (jobs_.empty()) return;
                job = std::move(jobs_.front().job);
                jobs_.pop_front();
                queued_.fetch_sub(1, std::memory_order_relaxed);
            }
            job();
        }
    }

    // Returns when a job is queued, when the pool stops, or after watch_;
    // at once while another worker watches, when the pool has no watch, or
    // on the core of the latest push (below). Looks at the clock every 64
    // pauses.
    // Never yields: on a busy machine the fair scheduler gives a yielding
    // thread's core to a busy thread for up to a scheduler tick (4 ms),
    // where a sleeper that is woken runs at once (host/src/guarding/
    // watch.hpp says the same of the host's waits).
    //
    // Nor on the core of the pool's latest push: the pusher, most often
    // the thread that waits for that job's end, needs that core back, and
    // a watch there keeps it off the core for the watch's whole length
    // while another core may idle. On 2 vCPUs the scheduler often placed
    // the memory driver's woken worker on the caller's core; with this,
    // its 64 KiB x 32 puts 1.3-1.9 ms apart (kvblob-bench --tier top
    // --option write=back, the memory driver alone) went from 10.8-16.6
    // GB/s to 13.2-19.7 over six processes each, back-to-back puts and
    // gets unchanged.
    void watch()
    {
        if (watch_.count() == 0) return;
        const int cpu = current_cpu();
        if (cpu >= 0 && cpu == pusher_cpu_.load(std::memory_order_relaxed)) return;
        if (watching_.exchange(true, std::memory_order_acquire)) return;
        using Clock = std::chrono::steady_clock;
        const auto until = Clock::now() + watch_;
        while (Clock::now() < until) {
            for (int i = 0; i < 64 && queued_.load(std::memory_order_relaxed) == 0; ++i) {
                spin_pause();
            }
            if (queued_.load(std::memory_order_relaxed) != 0 || stopping_.load(std::memory_order_relaxed)) break;
        }
        watching_.store(false, std::memory_order_seq_cst);
    }

    // The core the calling thread runs on, -1 where that is not known
    // (glibc 2.35 and later read it from the kernel's restartable-sequence
    // area, older ones from the vDSO on x86: no system call).
    static int current_cpu() noexcept
    {
#if defined(__linux__)
        return sched_getcpu();
#else
        return -1;
#endif
    }

    std::mutex mu_;
    std::condition_variable cv_;
    struct Entry {
        Job job;
        const void *tag;
    };
    std::deque<Entry> jobs_;
    std::atomic<size_t> queued_{0};    // jobs_.size(), for watch() to read without the lock
    std::atomic<unsigned> sleepers_{0};  // workers asleep on cv_
    std::atomic<bool> watching_{false};  // a worker is in watch()
    std::atomic<int> pusher_cpu_{-1};    // the core of the latest push (current_cpu)
    std::atomic<bool> stopping_{false};  // written under mu_; watch() reads it without
    std::chrono::microseconds watch_ = watch_before_sleep;  // set before the workers start
    std::vector<std::thread> threads_;
};

}  // namespace kvblob::support
