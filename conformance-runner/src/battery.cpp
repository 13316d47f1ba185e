#include "checks_common.hpp"

namespace kvblob::conformance {

const std::vector<Check> &battery()
{
    static const std::vector<Check> checks = [] {
        std::vector<Check> all;
        add_data_checks(all);
        add_admission_checks(all);
        add_lifetime_checks(all);
        add_device_checks(all);
        return all;
    }();
    return checks;
}

}  // namespace kvblob::conformance
