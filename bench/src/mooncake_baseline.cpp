// Raw Mooncake store C API to the Mooncake driver's master: each lane is its
// own client (mooncake_store_setup with the driver's options), registers its
// buffer, and a batch is one batch_put_from, batch_get_into or
// batch_is_exist call, made on a thread of the lane's while the measuring
// thread watches for its end, as the driver lane watches a driver's worker
// (CallingThread says why). Nothing else: no question about existing keys,
// no results bookkeeping. What the driver adds to these is what its ratio
// shows.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "baseline.hpp"
#include "lane_memory.hpp"
#include "kvblob/host/batch.hpp"
#include "kvblob/tools/fill_pattern.hpp"
#include "store_api.hpp"

namespace kvblob::bench {

namespace {

using Clock = std::chrono::steady_clock;

using mooncake::ReplicateConfig;
using mooncake::StoreApi;
using mooncake::StoreLibrary;

struct Settings {
    std::string library = "libmooncake_store.so", hostname = "localhost",
                metadata = "http://127.0.0.1:8080/metadata", master = "127.0.0.1:50051", protocol = "tcp", device;
    uint64_t segment = 512ull << 20, local_buffer = 128ull << 20, replicas = 1;
    WaitStyle wait = WaitStyle::host;
};

uint64_t parse_size(const std::string &text)
{
    char *end = nullptr;
    uint64_t v = std::strtoull(text.c_str(), &end, 10);
    switch (end && *end ? *end : ' ') {
    case 'K': case 'k': return v << 10;
    case 'M': case 'm': return v << 20;
    case 'G': case 'g': return v << 30;
    default: return v;
    }
}

// Runs each call on a thread of its own while the caller waits for its
// end as the driver lane waits for its operation (--wait: watching, then
// asleep, as the host's wait; or watching only). Mooncake's batch calls
// wait inside, for the client's one memcpy worker
// (mooncake-store/src/transfer_task.cpp, MemcpyWorkerPool): called from
// the measuring thread, that thread sleeps there at once, and on a quiet
// virtual machine waking an idle core cost more than the driver's whole
// overhead (the raw calls ran at 1.5-2.9 GB/s at 64 KiB x 8, against
// 4.9-8.0 on the same machine busy). Here the caller watches as the driver
// lane's does, for as long, and both sides wait alike. Between calls the calling thread watches for the next one
// for up to 50 us before it sleeps, as the driver's workers watch their
// queue (plugins/support/include/kvblob/support/work_queue.hpp): a thread
// that slept between calls made every raw call pay a wake on an idle core
// that the driver's calls did not: a raw get of 64 KiB x 8 took 111-131 us
// so, 61-69 watching.
class CallingThread {
public:
    explicit CallingThread(WaitStyle wait) : wait_(wait), thread_([this] { serve(); }) {}
    ~CallingThread()
    {
        {
            std::lock_guard lock(mu_);
            stopping_ = true;
        }
        wake_.notify_one();
        thread_.join();
    }
    CallingThread(const CallingThread &) = delete;
    CallingThread &operator=(const CallingThread &) = delete;

    void call(std::function<void()> job)
    {
        {
            std::lock_guard lock(mu_);
            job_ = std::move(job);
            has_job_.store(true, std::memory_order_release);
            done_.store(false, std::memory_order_relaxed);
        }
        wake_.notify_one();
        const auto done = [this] { return done_.load(std::memory_order_acquire); };
        if (wait_ == WaitStyle::watch) {
            watch_until(done);
            return;
        }
        // As the host's wait: watch (for as long as the host would, after
        // calls that took as long as these lately did), then sleep until
        // the call ends. A fixed 200 us watch here rode out most raw 4 KiB
        // x 32 gets (about 100 us) while the driver lane's wait, its
        // history longer than 50 us, watched for 20 and paid a wake: the
        // driver at 0.40-0.58 of the raw calls, 0.72-1.22 with both lanes
        // watching (--wait watch).
        const auto start = std::chrono::steady_clock::now();
        if (!watch_for(history_.next_watch(), done)) {
            std::unique_lock lock(mu_);
            finished_.wait(lock, done);
        }
        history_.record(ended_ - start);
    }

private:
    void serve()
    {
        std::unique_lock lock(mu_);
        for (;;) {
            lock.unlock();
            watch_for_job();
            lock.lock();
            wake_.wait(lock, [this] { return stopping_ || job_; });
            if (stopping_) return;
            auto job = std::move(job_);
            job_ = nullptr;
            has_job_.store(false, std::memory_order_relaxed);
            lock.unlock();
            job();
            lock.lock();
            // Under the lock: a caller between its look and its sleep
            // holds it, so it sees this or is woken by it.
            ended_ = std::chrono::steady_clock::now();  // what the call took, not the caller's wake
            done_.store(true, std::memory_order_release);
            finished_.notify_one();
        }
    }

    // Returns once a job is set, or after 50 us. Never yields (measure.hpp
    // says why).
    void watch_for_job()
    {
        watch_for(std::chrono::microseconds(50), [this] { return has_job_.load(std::memory_order_acquire); });
    }

    std::mutex mu_;
    std::condition_variable wake_;
    std::condition_variable finished_;  // the caller sleeps on it (WaitStyle::host)
    const WaitStyle wait_;
    HostWatchHistory history_;  // the caller's alone
    std::chrono::steady_clock::time_point ended_;  // written before done_, read after it
    std::function<void()> job_;
    bool stopping_ = false;
    std::atomic<bool> has_job_{false};  // job_ is set: what watch_for_job looks at
    std::atomic<bool> done_{true};
    std::thread thread_;  // last: starts once the rest is built
};

class MooncakeLane : public Lane {
public:
    MooncakeLane(const Point &p, const Settings &s, unsigned lane)
        : p_(p), library_(s.library), api_(library_.api()), buf_(p.size * p.batch), caller_(s.wait)
    {
        if (!api_.remove) throw std::runtime_error("mooncake baseline: " + s.library + " has no mooncake_store_remove");
        store_ = api_.create();
        if (!store_ || api_.setup(store_, s.hostname.c_str(), s.metadata.c_str(), s.segment, s.local_buffer,
                                  s.protocol.c_str(), s.device.c_str(), s.master.c_str()) != 0)
            throw std::runtime_error("mooncake baseline: cannot set up a client of master " + s.master);
        config_ = {s.replicas, 0, 0, nullptr, 0};
        // Objects in this client's own segment, as the driver's are while it
        // is the pool's only client (its lanes run alone): both sides then
        // move bytes within the process, not one of them over loopback TCP.
        char name[256];
        if (api_.get_hostname && api_.get_hostname(store_, name, sizeof name) == 0) {
            segment_ = name;
            segment_ptr_ = segment_.c_str();
            config_.preferred_segments = &segment_ptr_;
            config_.preferred_segments_count = 1;
        }
        fill_pattern(buf_.data(), buf_.size(), lane + 1);
        if (api_.register_buffer(store_, buf_.data(), buf_.size()) != 0)
            throw std::runtime_error("mooncake baseline: cannot register the lane's buffer");
        for (uint64_t r = 0; r < p.batch; ++r) {
            keys_.push_back("kvblob-bench-baseline/" + std::to_string(::getpid()) + "/" + std::to_string(lane) + "/" +
                            std::to_string(r));
            buffers_.push_back(buf_.data() + r * p.size);
            sizes_.push_back(p.size);
        }
        for (const auto &k : keys_) key_ptrs_.push_back(k.c_str());
    }
    void prepare() override
    {
        if (p_.op != BenchOp::put && call(BenchOp::put).errors) throw std::runtime_error("cannot store the rows to read");
    }
    Sample step() override { return call(p_.op); }
    void between() override
    {
        if (p_.op == BenchOp::put) remove_keys();
    }
    ~MooncakeLane() override
    {
        remove_keys();
        api_.unregister_buffer(store_, buf_.data());
        api_.destroy(store_);
    }

private:
    void remove_keys()
    {
        for (const char *k : key_ptrs_) api_.remove(store_, k, 1);  // no reader of these but this lane
    }
    Sample call(BenchOp op)
    {
        Sample s;
        std::vector<int> ints(p_.batch, INT_MIN);
        std::vector<int64_t> longs(p_.batch, INT64_MIN);
        int rc = -1;
        auto batch_call = [&] {
            switch (op) {
            case BenchOp::put:
                rc = api_.batch_put_from(store_, key_ptrs_.data(), buffers_.data(), sizes_.data(), p_.batch,
                                         &config_, ints.data());
                break;
            case BenchOp::get:
                rc = api_.batch_get_into(store_, key_ptrs_.data(), buffers_.data(), sizes_.data(), p_.batch,
                                         longs.data());
                break;
            case BenchOp::probe: rc = api_.batch_is_exist(store_, key_ptrs_.data(), p_.batch, ints.data()); break;
            }
        };
        const auto t0 = Clock::now();
        caller_.call(batch_call);
        s.complete = Clock::now() - t0;
        for (uint64_t r = 0; r < p_.batch; ++r) {
            const bool ok = rc == 0 && (op == BenchOp::put     ? ints[r] == 0
                                        : op == BenchOp::probe ? ints[r] == 1
                                                               : longs[r] == static_cast<int64_t>(p_.size));
            if (ok) {
                ++s.rows;
                if (op != BenchOp::probe) s.bytes += p_.size;
            } else if (!s.errors++) {
                s.error = "mooncake baseline: call " + std::to_string(rc) + ", row answer " +
                          std::to_string(op == BenchOp::get ? longs[r] : ints[r]);
            }
        }
        return s;
    }

    const Point p_;
    StoreLibrary library_;  // the driver's loader: the same version check
    const StoreApi &api_;
    void *store_ = nullptr;
    ReplicateConfig config_{};
    std::string segment_;  // this client's segment, preferred for its objects
    const char *segment_ptr_ = nullptr;
    HostBuffer buf_;  // page-aligned, as the driver lane's (lane_memory.hpp)
    std::vector<std::string> keys_;
    std::vector<const char *> key_ptrs_;
    std::vector<void *> buffers_;
    std::vector<size_t> sizes_;
    CallingThread caller_;  // last: gone before the client it calls
};

}  // namespace

Baseline mooncake_baseline(const Options &options, WaitStyle wait)
{
    Settings s;
    s.wait = wait;
    for (const auto &[k, v] : options) {
        if (k == "library") s.library = v;
        else if (k == "local_hostname") s.hostname = v;
        else if (k == "metadata_server") s.metadata = v;
        else if (k == "master_server_address") s.master = v;
        else if (k == "protocol") s.protocol = v;
        else if (k == "device_name") s.device = v;
        else if (k == "global_segment_size") s.segment = parse_size(v);
        else if (k == "local_buffer_size") s.local_buffer = parse_size(v);
        else if (k == "replica_num") s.replicas = parse_size(v);
    }
    return Baseline{"mooncake C API", [](BenchOp) { return true; },
                    [s](const Point &p, unsigned lane) { return std::make_unique<MooncakeLane>(p, s, lane); }};
}

}  // namespace kvblob::bench
