#include "tier_placement.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <stdexcept>
#include <thread>

namespace kvblob::bench {

namespace {

// tier.N.<option> split by N: each tier's driver and its own options, as the
// tiered driver gives them (plugins/tiered/README.md, "Options").
std::map<size_t, std::pair<std::string, Options>> tiers_of(const Options &options)
{
    std::map<size_t, std::pair<std::string, Options>> out;
    for (const auto &[key, value] : options) {
        if (key.rfind("tier.", 0) != 0) continue;
        const size_t dot = key.find('.', 5);
        if (dot == std::string::npos || dot == 5 || key.find_first_not_of("0123456789", 5) != dot) continue;
        auto &tier = out[std::stoul(key.substr(5, dot - 5))];
        const std::string name = key.substr(dot + 1);
        if (name == "driver") tier.first = value;
        else tier.second.emplace_back(name, value);
    }
    return out;
}

// Waits for op's results and access, as the lanes do between their steps.
std::vector<RowStatus> settled(Operation op)
{
    if (!op.wait(std::chrono::minutes(10))) throw std::runtime_error("a placement operation did not settle in 10 minutes");
    return op.results();
}

}  // namespace

TierStores::TierStores(const Plugin &tiered, const LoadOptions &load, const Options &options, TierPlace place)
    : place_(place)
{
    // Found as the tiered driver finds its tiers: KVBLOB_DRIVER_PATH, then
    // its own folder.
    LoadOptions tier_load = load;
    tier_load.search_dirs.push_back(tiered.path().parent_path());
    const auto specs = tiers_of(options);
    size_t expected = 0;
    for (const auto &[index, spec] : specs) {
        if (index != expected++ || spec.first.empty())
            throw std::runtime_error("--tier: tier " + std::to_string(expected - 1) + " has no tier." +
                                     std::to_string(expected - 1) + ".driver");
        auto tier = std::make_unique<Tier>();
        tier->driver = spec.first;
        try {
            tier->plugin.emplace(Plugin::load(spec.first, tier_load));
            tier->handle.emplace(tier->plugin->open(spec.second));
        } catch (const std::exception &e) {
            throw std::runtime_error("--tier: tier " + std::to_string(index) + " (" + spec.first +
                                     ") could not be opened beside the tiered driver: " + e.what());
        }
        tiers_.push_back(std::move(tier));
    }
    if (tiers_.size() < 2) throw std::runtime_error("--tier: the options give fewer than two tiers");
    if (place_ != TierPlace::top)
        for (size_t t = 0; t + 1 < tiers_.size(); ++t)
            if (!tiers_[t]->handle->has(KVBLOB_CAP_REMOVE))
                throw std::runtime_error("--tier " + std::string(place_name()) + ": tier " + std::to_string(t) + " (" +
                                         tiers_[t]->driver + ") cannot remove, so rows cannot be kept out of it");
    for (const auto &tier : tiers_)
        if (!tier->handle->has(KVBLOB_CAP_PROBE))
            throw std::runtime_error("--tier: tier (" + tier->driver + ") cannot probe, so placement cannot be checked");
}

const char *TierStores::place_name() const
{
    return place_ == TierPlace::top ? "top" : place_ == TierPlace::bottom ? "bottom" : "promoted";
}

uint64_t TierStores::held_in(const Tier &tier, const kvblob_batch_t &keys) const
{
    uint64_t held = 0;
    for (const auto &row : settled(tier.handle->submit(OpKind::probe, keys)))
        held += row.result == KVBLOB_ROW_READY;
    return held;
}

void TierStores::remove_above_bottom(const kvblob_batch_t &keys) const
{
    for (size_t t = 0; t + 1 < tiers_.size(); ++t)
        for (const auto &row : settled(tiers_[t]->handle->submit(OpKind::remove, keys)))
            if (row.result != KVBLOB_ROW_READY && row.result != KVBLOB_ROW_MISS)
                throw std::runtime_error("--tier " + std::string(place_name()) + ": tier " + std::to_string(t) + " (" +
                                         tiers_[t]->driver + ") would not remove a row: " + kvblob_row_result_name(row.result));
}

void TierStores::place(const kvblob_batch_t &keys) const
{
    const uint64_t rows = keys.row_count;
    const auto elsewhere = [&](uint64_t n, size_t t, const char *where) {
        return std::runtime_error("--tier " + std::string(place_name()) + ": the warm-up left " + std::to_string(n) +
                                  " of " + std::to_string(rows) + " rows " + where + " tier " + std::to_string(t) +
                                  " (" + tiers_[t]->driver + ")");
    };
    if (place_ == TierPlace::top) {
        if (const uint64_t held = held_in(*tiers_.front(), keys); held != rows) throw elsewhere(rows - held, 0, "out of");
        return;
    }
    remove_above_bottom(keys);
    for (size_t t = 0; t + 1 < tiers_.size(); ++t)
        if (const uint64_t held = held_in(*tiers_[t], keys)) throw elsewhere(held, t, "in");
    const size_t bottom = tiers_.size() - 1;
    if (const uint64_t held = held_in(*tiers_[bottom], keys); held != rows)
        throw elsewhere(rows - held, bottom, "out of");
}

// The tiered driver promotes a row after its get is final, from its own
// copy (plugins/tiered/README.md): the rows reach tier 0 a little after the
// get. Looks again until they all have or the time is up.
uint64_t TierStores::held_on_top(const kvblob_batch_t &keys, std::chrono::milliseconds within) const
{
    const auto until = std::chrono::steady_clock::now() + within;
    for (;;) {
        const uint64_t held = held_in(*tiers_.front(), keys);
        if (held == keys.row_count || std::chrono::steady_clock::now() >= until) return held;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

void TierStores::check_promoted(const kvblob_batch_t &keys) const
{
    const uint64_t rows = keys.row_count;
    if (const uint64_t held = held_on_top(keys, std::chrono::seconds(10)); held != rows)
        throw std::runtime_error("--tier promoted: a get from the bottom tier left " + std::to_string(rows - held) +
                                 " of " + std::to_string(rows) + " rows out of tier 0 (" + tiers_.front()->driver +
                                 "): they were not promoted");
}

void TierStores::restore(const kvblob_batch_t &keys) const
{
    if (place_ != TierPlace::bottom) return;
    // The step's gets promote what they found below after they are final:
    // those promotions land first, so none comes back after the removal.
    held_on_top(keys, std::chrono::seconds(1));
    remove_above_bottom(keys);
}

void TierStores::new_point() const
{
    std::lock_guard lock(gaps_mu_);
    gaps_.clear();
}

void TierStores::record_gap(std::chrono::steady_clock::duration gap) const
{
    std::lock_guard lock(gaps_mu_);
    gaps_.push_back(gap);
}

std::chrono::steady_clock::duration TierStores::typical_gap() const
{
    std::lock_guard lock(gaps_mu_);
    if (gaps_.empty()) return std::chrono::steady_clock::duration::zero();
    std::vector<std::chrono::steady_clock::duration> sorted = gaps_;
    std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
    const auto median = sorted[sorted.size() / 2];
    return median < std::chrono::microseconds(100) ? std::chrono::steady_clock::duration::zero() : median;
}

Baseline TierStores::reference(const DriverLaneSettings &lane) const
{
    const size_t t = place_ == TierPlace::bottom ? tiers_.size() - 1 : 0;
    Driver *driver = &*tiers_[t]->handle;
    DriverLaneSettings settings = lane;
    settings.run_id += "/alone";
    settings.placement = nullptr;
    settings.pauses_like = this;
    Baseline b;
    b.name = tiers_[t]->plugin->name() + " driver alone (tier " + std::to_string(t) + ")";
    b.supports = [driver](BenchOp op) { return op != BenchOp::probe || driver->has(KVBLOB_CAP_PROBE); };
    b.make_lane = [driver, settings](const Point &p, unsigned lane) {
        return make_driver_lane(*driver, p, lane, settings);
    };
    return b;
}

}  // namespace kvblob::bench
