#include "busy_load.hpp"

namespace kvblob::bench {

BusyLoad::BusyLoad(unsigned threads)
{
    for (unsigned t = 0; t < threads; ++t)
        threads_.emplace_back([this, t] {
            // A 64-bit mix (splitmix64) over a counter: integer work only, so
            // the load competes for cores, not for memory bandwidth.
            uint64_t x = t + 1, acc = 0;
            while (!stop_.load(std::memory_order_relaxed)) {
                for (int i = 0; i < 4096; ++i) {
                    uint64_t z = (x += 0x9E3779B97F4A7C15ull);
                    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
                    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
                    acc ^= z ^ (z >> 31);
                }
            }
            sink_.fetch_xor(acc, std::memory_order_relaxed);
        });
}

BusyLoad::~BusyLoad()
{
    stop_.store(true, std::memory_order_relaxed);
    for (auto &t : threads_) t.join();
}

}  // namespace kvblob::bench
