// The baseline for rows in device memory: cudaMemcpy between the device
// buffer and host memory, one way (device to host for a put, host to device
// for a get): the PCIe (or NVLink-C2C) transfer a store on the host cannot
// avoid.
#include <vector>

#include "baseline.hpp"
#include "lane_memory.hpp"

namespace kvblob::bench {

namespace {

using Clock = std::chrono::steady_clock;

class CudaCopyLane : public Lane {
public:
    explicit CudaCopyLane(const Point &p) : p_(p), device_(p.size * p.batch, true), host_(p.size * p.batch) {}
    Sample step() override
    {
        Sample s;
        const auto t0 = Clock::now();
        const bool put = p_.op == BenchOp::put;
        for (uint64_t r = 0; r < p_.batch; ++r) {
            const uint64_t at = r * p_.size;
            if (cuda_copy(put ? host_.data() + at : device_.data() + at, put ? device_.data() + at : host_.data() + at,
                          p_.size, !put)) {
                ++s.rows;
                s.bytes += p_.size;
            } else if (!s.errors++) {
                s.error = "cudaMemcpy failed";
            }
        }
        s.complete = Clock::now() - t0;
        return s;
    }

private:
    const Point p_;
    LaneMemory device_;
    std::vector<uint8_t> host_;
};

}  // namespace

Baseline cuda_copy_baseline()
{
    return {"cudaMemcpy", [](BenchOp op) { return op != BenchOp::probe; },
            [](const Point &p, unsigned) { return std::make_unique<CudaCopyLane>(p); }};
}

}  // namespace kvblob::bench
