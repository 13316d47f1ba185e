// A copy between the caller's buffer and a store-side buffer of the same
// rows: the most a driver holding objects in process memory could do. The
// copy is the fastest this machine offers for the point and its direction
// (copy_methods.hpp), chosen by measurement before the point is timed, and
// both buffers are page-aligned as the driver lane's are (lane_memory.hpp).
#include "baseline.hpp"
#include "copy_methods.hpp"
#include "kvblob/host/batch.hpp"
#include "kvblob/tools/fill_pattern.hpp"
#include "lane_memory.hpp"

namespace kvblob::bench {

namespace {

using Clock = std::chrono::steady_clock;

class MemcpyLane : public Lane {
public:
    MemcpyLane(const Point &p, const CopyMethod *forced)
        : p_(p), caller_(p.size * p.batch), store_(p.size * p.batch), method_(forced)
    {
        fill_pattern(caller_.data(), caller_.size(), 1);
        copy_rows(copy_methods().front(), {store_.data(), caller_.data(), p_.size, p_.batch});
    }
    void prepare() override
    {
        if (!method_) method_ = &fastest_copy(job());
    }
    Sample step() override
    {
        Sample s;
        const auto t0 = Clock::now();
        copy_rows(*method_, job());
        s.complete = Clock::now() - t0;
        s.rows = p_.batch;
        s.bytes = p_.size * p_.batch;
        return s;
    }
    std::string method() const override
    {
        const CopyJob j = job();
        return std::string(method_ ? method_->name : "?") + ", " + alignment_of(j.dst, j.src);
    }

private:
    // A put copies from the caller into the store, a get the other way.
    CopyJob job() const
    {
        return p_.op == BenchOp::put ? CopyJob{store_.data(), caller_.data(), p_.size, p_.batch}
                                     : CopyJob{caller_.data(), store_.data(), p_.size, p_.batch};
    }

    const Point p_;
    HostBuffer caller_, store_;
    const CopyMethod *method_;
};

}  // namespace

Baseline memcpy_baseline(const CopyMethod *forced)
{
    return {"memcpy", [](BenchOp op) { return op != BenchOp::probe; },
            [forced](const Point &p, unsigned) { return std::make_unique<MemcpyLane>(p, forced); }};
}

}  // namespace kvblob::bench
