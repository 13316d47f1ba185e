// The tiered driver's flat options, split: tier.N.driver=NAME names tier N's
// driver (N = 0 is the top), tier.N.<option>=value is given to that driver,
// and any other key is the tiered driver's own (parsed against its table).
#pragma once

#include <kvblob/kvblob.h>

#include <string>
#include <utility>
#include <vector>

namespace kvblob::tiered {

struct TierSpec {
    std::string driver;
    std::vector<std::pair<std::string, std::string>> options;  // without the "tier.N." prefix
};

struct SplitOptions {
    std::vector<TierSpec> tiers;          // top first, contiguous from 0
    std::vector<kvblob_option_t> own;     // the tiered driver's own options (pointing into args)
};

// Throws support::OptionError naming the key: a tier index that is not a
// number, a gap in the indexes, a tier without tier.N.driver, an empty
// tier option name, fewer than two tiers, tiers of tiers nested more than 4
// deep. Never repeats a value.
SplitOptions split_tier_options(const kvblob_open_args_t &args);

}  // namespace kvblob::tiered
