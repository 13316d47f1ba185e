// memcpy between the caller's buffer and a store-side buffer of the same
// rows: the most a driver holding objects in process memory could do.
#include <cstring>
#include <vector>

#include "baseline.hpp"
#include "kvblob/host/batch.hpp"

namespace kvblob::bench {

namespace {

using Clock = std::chrono::steady_clock;

class MemcpyLane : public Lane {
public:
    explicit MemcpyLane(const Point &p) : p_(p), caller_(p.size * p.batch), store_(p.size * p.batch)
    {
        fill_pattern(caller_.data(), caller_.size(), 1);
        std::memcpy(store_.data(), caller_.data(), store_.size());
    }
    Sample step() override
    {
        Sample s;
        const auto t0 = Clock::now();
        for (uint64_t r = 0; r < p_.batch; ++r) {
            const uint64_t at = r * p_.size;
            if (p_.op == BenchOp::put) std::memcpy(store_.data() + at, caller_.data() + at, p_.size);
            else std::memcpy(caller_.data() + at, store_.data() + at, p_.size);
        }
        s.complete = Clock::now() - t0;
        s.rows = p_.batch;
        s.bytes = p_.size * p_.batch;
        return s;
    }

private:
    const Point p_;
    std::vector<uint8_t> caller_, store_;
};

}  // namespace

Baseline memcpy_baseline()
{
    return {"memcpy", [](BenchOp op) { return op != BenchOp::probe; },
            [](const Point &p, unsigned) { return std::make_unique<MemcpyLane>(p); }};
}

}  // namespace kvblob::bench
