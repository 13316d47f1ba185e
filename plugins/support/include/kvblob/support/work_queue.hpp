// A fixed pool of worker threads that run queued jobs in order of arrival.
// The bundled drivers complete operations on it in their background modes.
// Stopping lets the workers finish every job already queued, then joins
// them: a queued operation is always completed, never dropped.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kvblob::support {

class WorkQueue {
public:
    using Job = std::function<void()>;

    WorkQueue() = default;
    ~WorkQueue() { stop(); }
    WorkQueue(const WorkQueue &) = delete;
    WorkQueue &operator=(const WorkQueue &) = delete;

    void start(unsigned threads)
    {
        for (unsigned i = 0; i < threads; ++i) threads_.emplace_back([this] { loop(); });
    }
    bool running() const { return !threads_.empty(); }

    void push(Job job)
    {
        {
            std::lock_guard lock(mu_);
            jobs_.push_back(std::move(job));
        }
        cv_.notify_one();
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
            Job job;
            {
                std::unique_lock lock(mu_);
                cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
                if (jobs_.empty()) return;
                job = std::move(jobs_.front());
                jobs_.pop_front();
            }
            job();
        }
    }

    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<Job> jobs_;
    bool stopping_ = false;
    std::vector<std::thread> threads_;
};

}  // namespace kvblob::support
