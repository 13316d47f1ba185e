// kvblob-bench --load N: N threads that keep a core busy each (a hash loop,
// no memory traffic to speak of) for as long as the object lives, beside
// the driver's lanes and the baseline's alike, so that a ratio measured
// under load compares both sides under the same load, in one run. An
// inference server's CPUs are never quiet; this is how a driver shows what
// it keeps of its speed there.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace kvblob::bench {

class BusyLoad {
public:
    explicit BusyLoad(unsigned threads);
    ~BusyLoad();
    BusyLoad(const BusyLoad &) = delete;
    BusyLoad &operator=(const BusyLoad &) = delete;
    unsigned threads() const { return static_cast<unsigned>(threads_.size()); }

private:
    std::atomic<bool> stop_{false};
    std::atomic<uint64_t> sink_{0};  // keeps the hash loop from being optimised away
    std::vector<std::thread> threads_;
};

}  // namespace kvblob::bench
