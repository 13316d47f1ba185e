// What the check files share.
#pragma once

#include <memory>
#include <thread>
#include <vector>

#include "check.hpp"
#include "context.hpp"

namespace kvblob::conformance {

void add_data_checks(std::vector<Check> &out);
void add_admission_checks(std::vector<Check> &out);
void add_lifetime_checks(std::vector<Check> &out);

}  // namespace kvblob::conformance
