// kvblob-bench --rounds: a point's driver and baseline measured in
// alternated slices (bench/src/measure.hpp, measure_alternated). Lanes
// here record what happens to them in one log, and each slice is bounded by
// a byte budget of one byte a step, so that every slice takes a known
// number of steps however fast or slow the machine is.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "measure.hpp"

using namespace kvblob::bench;

namespace {

struct Log {
    std::vector<std::string> events;
    // Collapses runs of the same event: "driver step" x 3 -> one entry.
    std::vector<std::string> runs() const
    {
        std::vector<std::string> out;
        for (const auto &e : events)
            if (out.empty() || out.back() != e) out.push_back(e);
        return out;
    }
};

class LoggedLane : public Lane {
public:
    LoggedLane(Log &log, std::string side, bool fail_after_first = false)
        : log_(log), side_(std::move(side)), fail_after_first_(fail_after_first)
    {
        log_.events.push_back(side_ + " made");
    }
    void prepare() override { log_.events.push_back(side_ + " prepared"); }
    Sample step() override
    {
        log_.events.push_back(side_ + " step");
        Sample s;
        s.complete = Seconds(1e-6);
        s.rows = 1;
        s.bytes = 1;
        if (fail_after_first_ && ++steps_ > 1) {
            s.errors = 1;
            s.error = "staged: the row did not come back";
        }
        return s;
    }

private:
    Log &log_;
    std::string side_;
    bool fail_after_first_;
    int steps_ = 0;
};

Budget slices_of(uint64_t steps_per_slice, unsigned rounds)
{
    Budget b;
    b.duration = Seconds(3600);  // never the bound: the bytes are
    b.bytes = steps_per_slice * rounds;
    return b;
}

}  // namespace

TEST_CASE("alternated slices: the driver first, then the baseline first, each slice its share of the budget")
{
    Log log;
    const MakeLane driver = [&](unsigned) { return std::make_unique<LoggedLane>(log, "driver"); };
    const MakeLane baseline = [&](unsigned) { return std::make_unique<LoggedLane>(log, "baseline"); };
    const PairMeasurement m = measure_alternated(1, slices_of(5, 4), 4, driver, &baseline);

    // The warm-up step of each side is untimed and comes right after its
    // lane is prepared; the baseline's lane is made only after the
    // driver's first slice.
    const std::vector<std::string> expected = {
        "driver made",   "driver prepared",   "driver step",    // warm-up, slice 1
        "baseline made", "baseline prepared", "baseline step",  // warm-up, slice 1; round 2 starts with it
        "driver step",                                          // slice 2; round 3 starts with it
        "baseline step",                                        // slice 3; round 4 starts with it
        "driver step",                                          // slice 4
    };
    const auto runs = log.runs();
    REQUIRE(runs.size() == expected.size());
    for (size_t i = 0; i < expected.size(); ++i) CHECK(runs[i] == expected[i]);

    // Count the steps of each slice: 5 a slice, each slice after the
    // first of its side preceded by an untimed one.
    std::vector<std::pair<std::string, int>> slices;
    for (const auto &e : log.events) {
        if (e.find(" step") == std::string::npos) continue;
        if (slices.empty() || slices.back().first != e) slices.push_back({e, 0});
        ++slices.back().second;
    }
    // driver: warm-up + slice 1 | baseline: warm-up + slice 1, warm-up +
    // slice 2 (round 2 runs the baseline first) | driver: warm-up + slice 2,
    // warm-up + slice 3 (round 3 runs the driver first) | baseline: two more
    // | driver: warm-up + slice 4.
    const std::vector<std::pair<std::string, int>> expected_slices = {
        {"driver step", 6}, {"baseline step", 12}, {"driver step", 12}, {"baseline step", 12}, {"driver step", 6}};
    CHECK(slices == expected_slices);

    // What each side measured covers all its slices, not the warm-up.
    CHECK(m.driver.ops == 20);
    REQUIRE(m.baseline);
    CHECK(m.baseline->ops == 20);
    CHECK(m.driver.rows == 20);
    CHECK(m.driver.errors == 0);
}

TEST_CASE("alternated slices: one round is the driver's whole budget, then the baseline's")
{
    Log log;
    const MakeLane driver = [&](unsigned) { return std::make_unique<LoggedLane>(log, "driver"); };
    const MakeLane baseline = [&](unsigned) { return std::make_unique<LoggedLane>(log, "baseline"); };
    const PairMeasurement m = measure_alternated(1, slices_of(7, 1), 1, driver, &baseline);
    const std::vector<std::string> expected = {"driver made",   "driver prepared",   "driver step",
                                               "baseline made", "baseline prepared", "baseline step"};
    CHECK(log.runs() == expected);
    CHECK(m.driver.ops == 7);
    REQUIRE(m.baseline);
    CHECK(m.baseline->ops == 7);
}

TEST_CASE("alternated slices: no baseline measures the driver alone, in every slice")
{
    Log log;
    const MakeLane driver = [&](unsigned) { return std::make_unique<LoggedLane>(log, "driver"); };
    const PairMeasurement m = measure_alternated(1, slices_of(3, 3), 3, driver, nullptr);
    CHECK_FALSE(m.baseline);
    CHECK(m.driver.ops == 9);
}

TEST_CASE("alternated slices: a side whose rows did not come back ends the point after that round")
{
    Log log;
    const MakeLane driver = [&](unsigned) { return std::make_unique<LoggedLane>(log, "driver", true); };
    const MakeLane baseline = [&](unsigned) { return std::make_unique<LoggedLane>(log, "baseline"); };
    const PairMeasurement m = measure_alternated(1, slices_of(4, 5), 5, driver, &baseline);
    // The driver's first timed step fails (its warm-up was the first step):
    // its slice stops there, the baseline still gets its slice of round 1,
    // and no round follows.
    CHECK(m.driver.ops == 1);
    CHECK(m.driver.errors == 1);
    CHECK(m.driver.first_error == "staged: the row did not come back");
    REQUIRE(m.baseline);
    CHECK(m.baseline->ops == 4);
}
