// A lane that measures a driver through the host's C++ API: the path an
// engine takes, so the figures include what the host costs.
#pragma once

#include <memory>
#include <string>

#include "kvblob/host/driver.hpp"
#include "measure.hpp"

namespace kvblob::bench {

class TierStores;

struct DriverLaneSettings {
    std::string run_id;         // keeps this run's keys apart from others'
    // The null driver answers MISS to gets and probes and moves no bytes:
    // its rows count, its bytes do not.
    bool null_driver = false;
    bool device_memory = false;  // rows in CUDA device memory
    WaitStyle wait = WaitStyle::host;  // how the lane waits for each operation
    // --tier (the tiered driver): where a get or probe point's rows are
    // left after the warm-up and after every timed step (tier_placement.hpp).
    const TierStores *placement = nullptr;
    // The reference lane of a --tier point (tier_placement.hpp): its steps
    // as far apart as the tiered driver's lanes' of the point were (their
    // rows taken out of the upper tiers again, their puts removed).
    const TierStores *pauses_like = nullptr;
};

std::unique_ptr<Lane> make_driver_lane(Driver &driver, const Point &point, unsigned lane,
                                       const DriverLaneSettings &settings);

}  // namespace kvblob::bench
