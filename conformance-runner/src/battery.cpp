#include "checks_common.hpp"

namespace kvblob::conformance {

const std::vector<Check> &battery()
{
    static const std::vector<Check> checks = [] {
        std::vector<Check> all;
        add_data_checks(all);
        add_admission_checks(all);
        add_refusal_checks(all);
        add_results_checks(all);
        add_lifetime_checks(all);
        add_access_bound_checks(all);
        add_cancel_checks(all);
        add_concurrency_checks(all);
        add_notify_checks(all);
        add_device_checks(all);
        return all;
    }();
    return checks;
}

}  // namespace kvblob::conformance
