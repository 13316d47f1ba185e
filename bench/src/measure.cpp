#include "measure.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

namespace kvblob::bench {

namespace {

using Clock = std::chrono::steady_clock;

Stats stats_of(std::vector<double> us)
{
    Stats s;
    if (us.empty()) return s;
    std::sort(us.begin(), us.end());
    double sum = 0;
    for (double v : us) sum += v;
    s.avg_us = sum / static_cast<double>(us.size());
    s.p50_us = us[us.size() / 2];
    s.p99_us = us[std::min(us.size() - 1, us.size() * 99 / 100)];
    return s;
}

}  // namespace

LaneSet::LaneSet(unsigned threads, const MakeLane &make_lane) : totals_(threads)
{
    for (unsigned t = 0; t < threads; ++t) {
        lanes_.push_back(make_lane(t));
        lanes_.back()->prepare();
        lanes_.back()->step();  // warm-up: first touches, connections, caches
        lanes_.back()->between();
    }
}

void LaneSet::run(const Budget &budget)
{
    if (ran_)
        for (auto &lane : lanes_) {
            lane->step();
            lane->between();
        }
    ran_ = true;
    std::atomic<uint64_t> bytes_done{0};
    const auto start = Clock::now();
    const auto deadline = start + std::chrono::duration_cast<Clock::duration>(budget.duration);
    std::vector<std::thread> workers;
    for (size_t t = 0; t < lanes_.size(); ++t)
        workers.emplace_back([&, t] {
            auto &lane = *lanes_[t];
            auto &tot = totals_[t];
            do {
                Sample s = lane.step();
                tot.submit_us.push_back(s.submit.count() * 1e6);
                tot.complete_us.push_back(s.complete.count() * 1e6);
                tot.timed += s.complete.count();
                tot.rows += s.rows;
                tot.bytes += s.bytes;
                tot.errors += s.errors;
                if (tot.first_error.empty()) tot.first_error = s.error;
                lane.between();
                bytes_done += s.bytes;
            } while (Clock::now() < deadline && (budget.bytes == 0 || bytes_done.load() < budget.bytes) &&
                     tot.errors == 0);
        });
    for (auto &w : workers) w.join();
    seconds_ += Seconds(Clock::now() - start).count();
}

bool LaneSet::failed() const
{
    return std::any_of(totals_.begin(), totals_.end(), [](const LaneTotals &t) { return t.errors > 0; });
}

Measurement LaneSet::measurement() const
{
    Measurement m;
    m.seconds = seconds_;
    if (!lanes_.empty()) m.method = lanes_.front()->method();
    std::vector<double> submit, complete;
    for (const auto &tot : totals_) {
        m.rows += tot.rows;
        m.bytes += tot.bytes;
        m.errors += tot.errors;
        m.ops += tot.complete_us.size();
        if (m.first_error.empty()) m.first_error = tot.first_error;
        if (tot.timed > 0) {
            m.gbps += static_cast<double>(tot.bytes) / tot.timed / 1e9;
            m.rows_per_s += static_cast<double>(tot.rows) / tot.timed;
        }
        if (!tot.complete_us.empty()) {
            const double ops = static_cast<double>(tot.complete_us.size());
            const double median_s = stats_of(tot.complete_us).p50_us / 1e6;
            if (median_s > 0) {
                m.median_gbps += static_cast<double>(tot.bytes) / ops / median_s / 1e9;
                m.median_rows_per_s += static_cast<double>(tot.rows) / ops / median_s;
            }
        }
        submit.insert(submit.end(), tot.submit_us.begin(), tot.submit_us.end());
        complete.insert(complete.end(), tot.complete_us.begin(), tot.complete_us.end());
    }
    m.submit = stats_of(std::move(submit));
    m.complete = stats_of(std::move(complete));
    return m;
}

Measurement measure(unsigned threads, const Budget &budget, const MakeLane &make_lane)
{
    LaneSet lanes(threads, make_lane);
    lanes.run(budget);
    return lanes.measurement();
}

PairMeasurement measure_alternated(unsigned threads, const Budget &budget, unsigned rounds,
                                   const MakeLane &make_driver_lane, const MakeLane *make_baseline_lane)
{
    rounds = std::max(rounds, 1u);
    Budget slice = budget;
    slice.duration = budget.duration / rounds;
    if (budget.bytes) slice.bytes = std::max<uint64_t>(budget.bytes / rounds, 1);
    LaneSet driver(threads, make_driver_lane);
    std::optional<LaneSet> baseline;
    auto run_baseline = [&] {
        if (!make_baseline_lane) return;
        if (!baseline) baseline.emplace(threads, *make_baseline_lane);
        baseline->run(slice);
    };
    for (unsigned r = 0; r < rounds && !driver.failed() && !(baseline && baseline->failed()); ++r) {
        if (r % 2 == 0) {
            driver.run(slice);
            run_baseline();
        } else {
            run_baseline();
            driver.run(slice);
        }
    }
    PairMeasurement m{driver.measurement(), std::nullopt};
    if (baseline) m.baseline = baseline->measurement();
    return m;
}

void report_as(Measurement &m, Statistic statistic)
{
    if (statistic != Statistic::median) return;
    m.gbps = m.median_gbps;
    m.rows_per_s = m.median_rows_per_s;
}

double median_call_seconds(const std::function<void()> &f, Seconds duration)
{
    std::vector<double> times;
    const auto end = Clock::now() + duration;
    do {
        const auto t0 = Clock::now();
        f();
        times.push_back(Seconds(Clock::now() - t0).count());
    } while (times.size() < 5 || Clock::now() < end);
    std::nth_element(times.begin(), times.begin() + static_cast<std::ptrdiff_t>(times.size() / 2), times.end());
    return times[times.size() / 2];
}

}  // namespace kvblob::bench
