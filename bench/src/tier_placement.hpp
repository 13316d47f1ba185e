// kvblob-bench --tier for the tiered driver (plugins/tiered): which tier a
// point measures. The bench opens each tier's store itself, with the
// driver and options the tiered driver gives that tier (tier.N.driver,
// tier.N.<option>), and after each lane's warm-up leaves its rows where the
// point wants them:
//
//   top     in the top tier (a put writes through every tier, so the rows
//           are there; the warm-up checks each is);
//   bottom  only in the bottom tier: removed from every tier above after
//           the warm-up and again after every timed step (a get READY from
//           below promotes the row into the tiers above, and the next get
//           would find it at the top), untimed;
//   promoted  only in the bottom tier, then got once through the tiered
//           driver, which promotes them: the gets measured are the second,
//           each row back in the top tier by promotion (checked there).
//
// Each point's figures come with the same point measured on the tier's
// driver alone, in the same run: tier 0's driver alone (the memory driver)
// for top and promoted, the bottom tier's driver alone for bottom, as the
// point's baseline, so its ratio is tiered / that driver. The tiered
// driver's steps cannot follow each other at once (a bottom get waits for
// its promotions to land, then takes them out; a put's keys are removed
// from every tier, which waits for write=back's writes below: a millisecond
// or more); the reference lane's steps are as far apart, so that both sides
// meet the same idle workers and cores. Measured on 2 cores: a 1 ms pause
// between steps doubled a 4 KiB x 32 get of the file driver alone, and a
// 64 KiB x 32 put of the memory driver alone.
#pragma once

#include <chrono>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "baseline.hpp"
#include "driver_lane.hpp"
#include "kvblob/host/batch.hpp"
#include "kvblob/host/plugin.hpp"

namespace kvblob::bench {

enum class TierPlace { top, bottom, promoted };

// The tiers of a tiered driver's options, opened directly. Throws
// std::runtime_error naming the tier when one cannot be found or opened.
class TierStores {
public:
    TierStores(const Plugin &tiered, const LoadOptions &load, const Options &options, TierPlace place);

    TierPlace place() const { return place_; }
    // "top" or "bottom".
    const char *place_name() const;
    // Leaves keys (the lane's rows, stored through the tiered driver) where
    // the point wants them, and checks they are: throws std::runtime_error
    // saying how many rows are elsewhere, and in which tier.
    void place(const kvblob_batch_t &keys) const;
    // promoted: after place(), the lane gets its rows once through the
    // tiered driver; then this checks each is back in the top tier.
    bool promotes() const { return place_ == TierPlace::promoted; }
    void check_promoted(const kvblob_batch_t &keys) const;
    // After a timed step: puts them back (bottom: out of the tiers above).
    void restore(const kvblob_batch_t &keys) const;
    // The time between one timed step of the tiered driver's lanes and the
    // next (record_gap), kept from new_point on; the median of them, under
    // 100 us taken as none (a sleep that short oversleeps), is how far apart
    // the reference lane's steps are (pauses_like).
    void new_point() const;
    void record_gap(std::chrono::steady_clock::duration gap) const;
    std::chrono::steady_clock::duration typical_gap() const;
    // The point measured on the reference driver alone (tier 0's for top,
    // the bottom tier's for bottom), named "<driver> driver alone (tier N)".
    Baseline reference(const DriverLaneSettings &lane) const;

private:
    struct Tier {
        std::string driver;
        std::optional<Plugin> plugin;
        mutable std::optional<Driver> handle;  // submitting changes no placement
    };
    // How many of keys tier answers probe READY for.
    uint64_t held_in(const Tier &tier, const kvblob_batch_t &keys) const;
    void remove_above_bottom(const kvblob_batch_t &keys) const;
    // How many of keys tier 0 holds, once all do or within has passed.
    uint64_t held_on_top(const kvblob_batch_t &keys, std::chrono::milliseconds within) const;
    TierPlace place_;
    std::vector<std::unique_ptr<Tier>> tiers_;
    mutable std::mutex gaps_mu_;
    mutable std::vector<std::chrono::steady_clock::duration> gaps_;  // this point's
};

}  // namespace kvblob::bench
