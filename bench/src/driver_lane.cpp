#include "driver_lane.hpp"

#include <algorithm>
#include <stdexcept>
#include <thread>

#include "kvblob/host/batch.hpp"
#include "kvblob/tools/fill_pattern.hpp"
#include "lane_memory.hpp"
#include "tier_placement.hpp"

namespace kvblob::bench {

namespace {

using Clock = std::chrono::steady_clock;

// Waits for both answers on the submitting thread, as --wait says: through
// the host's wait, as an engine blocks on its operation (a driver whose
// waiter runs its rows runs them there), or watching without a sleep.
void wait_settled(const Operation &op, WaitStyle style)
{
    if (style == WaitStyle::watch) {
        watch_until([&] { return op.is_final() && op.access() != KVBLOB_ACCESS_OPEN; });
        return;
    }
    if (!op.wait(std::chrono::hours(1))) throw std::runtime_error("an operation did not settle within an hour");
}

class DriverLane : public Lane {
public:
    DriverLane(Driver &d, const Point &p, unsigned lane, const DriverLaneSettings &s)
        : d_(d), p_(p), lane_(lane), s_(s), buf_(p.size * p.batch, s.device_memory),
          pause_(s.pauses_like ? s.pauses_like->typical_gap() : Clock::duration::zero())
    {
        // The first lane of a point: the gaps recorded from here on are this point's.
        if (s.placement && lane == 0) s.placement->new_point();
    }

    void prepare() override
    {
        std::vector<uint8_t> expected(buf_.size());
        fill_pattern(expected.data(), expected.size(), lane_ + 1);
        buf_.upload(expected);
        kvblob_region_desc_t desc{sizeof desc, buf_.device() ? KVBLOB_MEMORY_DEVICE : KVBLOB_MEMORY_HOST, buf_.data(),
                                  buf_.size(), 0, 0};
        region_ = d_.register_region(desc);
        build_batch();
        if (p_.op == BenchOp::put) return;
        // Gets and probes read what this lane stored, and the first get is
        // checked byte for byte: a fast wrong answer is no result.
        Sample stored = run(OpKind::put, KVBLOB_ROW_READY);
        if (stored.errors) throw std::runtime_error("could not store the rows to read: " + stored.error);
        if (p_.op == BenchOp::get && !s_.null_driver) {
            buf_.upload(std::vector<uint8_t>(buf_.size(), 0));
            Sample got = run(OpKind::get, KVBLOB_ROW_READY);
            if (got.errors) throw std::runtime_error("the first get failed: " + got.error);
            if (buf_.download() != expected) throw std::runtime_error("the driver's get delivered other bytes than were put");
        }
        // Then where the point wants them (and checked there): a tier of
        // the tiered driver.
        if (s_.placement) s_.placement->place(keys_.get());
        // --tier promoted: one get from below, which promotes every row.
        if (s_.placement && s_.placement->promotes() && p_.op == BenchOp::get) {
            Sample first = run(OpKind::get, KVBLOB_ROW_READY);
            if (first.errors) throw std::runtime_error("the get that promotes failed: " + first.error);
            s_.placement->check_promoted(keys_.get());
        }
    }

    Sample step() override
    {
        switch (p_.op) {
        case BenchOp::put: return run(OpKind::put, KVBLOB_ROW_READY);
        case BenchOp::get: return run(OpKind::get, s_.null_driver ? KVBLOB_ROW_MISS : KVBLOB_ROW_READY);
        case BenchOp::probe: return run(OpKind::probe, s_.null_driver ? KVBLOB_ROW_MISS : KVBLOB_ROW_READY);
        }
        return {};
    }

    // The tiered driver's lanes time the work between their steps; the
    // reference lane of a --tier point (pauses_like) then pauses so that
    // its steps are as far apart as theirs were.
    void between() override
    {
        const auto began = Clock::now();
        between_steps();
        const auto took = Clock::now() - began;
        if (s_.placement) s_.placement->record_gap(took);
        if (pause_ > took) std::this_thread::sleep_for(pause_ - took);
    }

    // What the report's method column says of a lane that paused.
    std::string method() const override
    {
        if (pause_ <= Clock::duration::zero()) return {};
        const auto us = std::chrono::duration_cast<std::chrono::microseconds>(pause_).count();
        return "steps " + std::to_string(us) + " us apart, as the tiered lanes'";
    }

    // Leaves the store as it found it, where the driver can remove.
    ~DriverLane() override
    {
        try {
            if (region_.handle() && d_.has(KVBLOB_CAP_REMOVE)) remove_keys();
        } catch (const std::exception &) {
        }
    }

private:
    void between_steps()
    {
        if (p_.op != BenchOp::put) {
            // A get READY from a lower tier promoted its row: out again (a
            // probe promotes nothing).
            if (s_.placement && p_.op == BenchOp::get) s_.placement->restore(keys_.get());
            return;
        }
        // Every timed put stores new objects: a put of a stored key would be
        // READY without moving a byte (R-ROW-7).
        // Where a remove cannot (a key still leased to a reader, say), the
        // next put goes to new keys.
        if (!d_.has(KVBLOB_CAP_REMOVE) || !remove_keys()) {
            ++generation_;
            build_batch();
        }
    }
    // Whether every key is gone (removed, or absent already).
    bool remove_keys()
    {
        auto op = d_.submit(OpKind::remove, keys_.get());
        wait_settled(op, s_.wait);
        for (const auto &row : op.results())
            if (row.result != KVBLOB_ROW_READY && row.result != KVBLOB_ROW_MISS) return false;
        return true;
    }
    std::string key(uint64_t row) const
    {
        return "kvblob-bench/" + s_.run_id + "/" + std::to_string(lane_) + "/" + std::to_string(generation_) + "/" +
               std::to_string(row);
    }
    // The rows with their spans (put, get), and the same keys alone (probe,
    // remove).
    void build_batch()
    {
        batch_ = Batch();
        keys_ = Batch();
        for (uint64_t r = 0; r < p_.batch; ++r) {
            batch_.row(key(r), {make_span(region_.handle(), r * p_.size, p_.size)});
            keys_.row(key(r));
        }
    }
    Sample run(OpKind kind, kvblob_row_result expected)
    {
        const kvblob_batch_t &b = kind == OpKind::probe ? keys_.get() : batch_.get();
        Sample s;
        // Timed: what an engine does with every operation, up to holding its
        // results and having released it (the first unexpected row's words
        // are fetched before the release, and only when there is one).
        const auto t0 = Clock::now();
        Operation op = d_.submit(kind, b);
        const auto t1 = Clock::now();
        wait_settled(op, s_.wait);
        const auto results = op.results();
        for (uint64_t r = 0; r < results.size(); ++r) {
            if (results[r].result == expected) continue;
            if (!s.errors) s.error = std::string(kvblob_row_result_name(results[r].result)) + ": " + op.message(r);
            ++s.errors;
        }
        const kvblob_status released = op.release();
        const auto t2 = Clock::now();
        s.submit = t1 - t0;
        s.complete = t2 - t0;
        if (released != KVBLOB_OK && !s.errors) {
            s.errors = 1;
            s.error = std::string("release answered ") + kvblob_status_name(released);
        }
        s.rows = results.size() - std::min<uint64_t>(s.errors, results.size());
        if (kind != OpKind::probe && !s_.null_driver) s.bytes = s.rows * p_.size;
        return s;
    }

    Driver &d_;
    const Point p_;
    const unsigned lane_;
    const DriverLaneSettings s_;
    LaneMemory buf_;
    const Clock::duration pause_;  // from one step's end to the next's start (pauses_like)
    Region region_;
    Batch batch_, keys_;
    uint64_t generation_ = 0;
};

}  // namespace

std::unique_ptr<Lane> make_driver_lane(Driver &driver, const Point &point, unsigned lane,
                                       const DriverLaneSettings &settings)
{
    return std::make_unique<DriverLane>(driver, point, lane, settings);
}

}  // namespace kvblob::bench
