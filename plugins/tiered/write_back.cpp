#include "write_back.hpp"

#include <kvblob/support/key_hash.hpp>
#include <kvblob/support/thread_name.hpp>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace kvblob::tiered {

WriteBack::WriteBack(uint64_t limit, uint64_t row_limit, Writer writer)
    : limit_(limit), row_limit_(row_limit), writer_(std::move(writer))
{
    thread_ = std::thread([this] {
        // Best effort: where the system refuses, the writer runs as the
        // engine's threads do.
        const auto self = static_cast<id_t>(gettid());
        errno = 0;
        const int niceness = getpriority(PRIO_PROCESS, self);
        if (errno == 0) (void)setpriority(PRIO_PROCESS, self, std::min(niceness + writer_nicer_by, 19));
        loop();
    });
    support::name_thread(thread_, "kvblob-writer");
}

struct WriteBack::Hurry {
    WriteBack &w;
    explicit Hurry(WriteBack &wb) : w(wb)
    {
        ++w.hurrying_;
        w.work_cv_.notify_one();
    }
    ~Hurry() { --w.hurrying_; }
    Hurry(const Hurry &) = delete;
    Hurry &operator=(const Hurry &) = delete;
};

void WriteBack::wake_if_needed()
{
    if (ready() && (writer_sleeps_ || hurrying_ != 0)) work_cv_.notify_one();
}

size_t WriteBack::reserve_some(const std::vector<uint64_t> &sizes, const std::atomic<bool> &stop,
                               const std::function<void()> &waiting)
{
    if (sizes.empty() || sizes[0] > limit_) return 0;
    const auto fits = [&](uint64_t bytes) { return used_ <= limit_ - bytes && rows_used_ < row_limit_; };
    std::unique_lock lock(mu_);
    if (!fits(sizes[0]) && !stop.load() && waiting) {
        lock.unlock();
        waiting();
        lock.lock();
    }
    // The writer frees room as it writes (it never waits for a put); a
    // cancel sets stop, then interrupt() takes mu_ and wakes this wait.
    const auto done = [&] { return stop.load() || fits(sizes[0]); };
    if (!done()) {
        Hurry hurry(*this);
        done_cv_.wait(lock, done);
    }
    if (stop.load()) return 0;
    size_t n = 0;
    while (n < sizes.size() && sizes[n] <= limit_ && fits(sizes[n])) {
        used_ += sizes[n++];
        ++rows_used_;
    }
    return n;
}

bool WriteBack::try_reserve(const std::vector<uint64_t> &sizes)
{
    uint64_t bytes = 0;
    for (uint64_t n : sizes) {
        if (n > limit_ - bytes) return false;  // more than the queue holds
        bytes += n;
    }
    std::lock_guard lock(mu_);
    if (used_ > limit_ - bytes || rows_used_ >= row_limit_ || sizes.size() > row_limit_ - rows_used_) return false;
    used_ += bytes;
    rows_used_ += sizes.size();
    return true;
}

void WriteBack::interrupt()
{
    {
        std::lock_guard lock(mu_);  // a put between its look at stop and its wait is not missed
    }
    done_cv_.notify_all();
}

void WriteBack::unreserve(uint64_t bytes)
{
    {
        std::lock_guard lock(mu_);
        used_ -= bytes;
        --rows_used_;
    }
    done_cv_.notify_all();
}

void WriteBack::claim(const std::vector<uint64_t> &key_hashes)
{
    std::lock_guard lock(mu_);
    for (uint64_t h : key_hashes) ++pending_[h];
}

void WriteBack::unclaim(uint64_t key_hash)
{
    {
        std::lock_guard lock(mu_);
        auto it = pending_.find(key_hash);
        if (it != pending_.end() && --it->second == 0) pending_.erase(it);
    }
    done_cv_.notify_all();
}

void WriteBack::push(Block block)
{
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(block));
    wake_if_needed();  // a held writer is not ready: the last release looks
}

void WriteBack::hold()
{
    std::lock_guard lock(mu_);
    ++holds_;
}

void WriteBack::release()
{
    std::lock_guard lock(mu_);
    --holds_;
    wake_if_needed();
}

bool WriteBack::pending(const std::string &key) const
{
    std::lock_guard lock(mu_);
    return pending_.count(support::key_hash(key)) != 0;
}

void WriteBack::settle(const std::vector<std::string> &keys)
{
    std::vector<uint64_t> hashes;
    for (const auto &k : keys) hashes.push_back(support::key_hash(k));
    const auto settled = [&] {
        for (uint64_t h : hashes)
            if (pending_.count(h)) return false;
        return true;
    };
    std::unique_lock lock(mu_);
    if (settled()) return;
    Hurry hurry(*this);
    done_cv_.wait(lock, settled);
}

bool WriteBack::wait_empty(std::chrono::steady_clock::time_point deadline)
{
    const auto empty = [&] { return queue_.empty() && !writing_; };
    std::unique_lock lock(mu_);
    if (empty()) return true;
    Hurry hurry(*this);
    return done_cv_.wait_until(lock, deadline, empty);
}

void WriteBack::finish()
{
    {
        std::lock_guard lock(mu_);
        if (stopping_ && !thread_.joinable()) return;
        stopping_ = true;
    }
    work_cv_.notify_all();
    if (thread_.joinable()) thread_.join();
}

uint64_t WriteBack::written() const
{
    std::lock_guard lock(mu_);
    return written_;
}

uint64_t WriteBack::failed() const
{
    std::lock_guard lock(mu_);
    return failed_;
}

void WriteBack::loop()
{
    using Clock = std::chrono::steady_clock;
    std::unique_lock lock(mu_);
    auto last_work = Clock::now();
    for (;;) {
        while (!ready()) {
            if (Clock::now() - last_work < writer_looks_for) {
                work_cv_.wait_for(lock, writer_looks_every);  // a look, or a waiter's wake
                continue;
            }
            writer_sleeps_ = true;
            work_cv_.wait(lock, [&] { return ready(); });
            writer_sleeps_ = false;
        }
        if (queue_.empty()) return;  // stopping, and everything written
        Block block = std::move(queue_.front());
        queue_.pop_front();
        writing_ = true;
        lock.unlock();
        std::vector<bool> stored;
        try {
            stored = writer_(block);
        } catch (...) {
            stored.assign(block.rows.size(), false);  // the writer logged what it could
        }
        lock.lock();
        for (size_t i = 0; i < block.rows.size(); ++i) {
            (i < stored.size() && stored[i] ? written_ : failed_)++;
            auto it = pending_.find(block.rows[i].key_hash);
            if (it != pending_.end() && --it->second == 0) pending_.erase(it);
        }
        used_ -= block.reserved;
        rows_used_ -= block.rows.size();
        writing_ = false;
        last_work = Clock::now();
        done_cv_.notify_all();
    }
}

}  // namespace kvblob::tiered
