// Two tiers that are one store lose data: the top tier evicts an object
// held below through the top tier's remove, which there removes the only
// copy, and a remove or a purge of one tier empties the other. A memory
// driver's tiers given one store name (or none: both "default"), file
// tiers given one root, Redis tiers of one server and prefix are one
// store, and nothing in their options says so: each driver names its store
// its own way. So it is tried when the tiered driver opens: an object of
// random bytes under a random key put into each tier but the top, looked
// for in every tier above it, and removed.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tiered_driver.hpp"

namespace kvblob::tiered {

// Empty where no two tiers were found to be one store; otherwise why not
// to open, naming both tiers. A tier where it could not be tried (no
// remove, full, slow, failing) is skipped, and said through note.
std::string tiers_of_one_store(std::vector<Tier> &tiers, const std::function<void(const std::string &)> &note);

}  // namespace kvblob::tiered
