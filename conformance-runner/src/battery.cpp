#include <algorithm>

#include "checks/common.hpp"

namespace kvblob::conformance {

namespace {

// The families whose checks run again as each older or polling host sees
// the driver: those that exercise what a version changes under them (the
// table and capability record as laid out for the version, completion
// without notify). The rest (notify, access bound) exist only at 1.1, or
// (device, concurrency, cancel) add nothing the families here miss at a
// cost the run's time cannot afford.
bool repeats_per_host(const Check &c)
{
    if (c.needs_caps & (KVBLOB_CAP_NOTIFY | KVBLOB_CAP_ACCESS_BOUND)) return false;
    // Scale, not layout: 10,000 rows, or 16 MiB objects, tell nothing more
    // at another version, and cost a disk-backed store minutes per run.
    if (c.id == "data.round-trip.batch-10000" || c.id == "data.round-trip.large-rows") return false;
    for (const char *family : {"data.", "admission.", "lifetime."})
        if (c.id.rfind(family, 0) == 0) return true;
    return false;
}

// The hosts besides the newest, by the suffix their checks' ids carry.
struct OtherHost {
    const char *suffix;
    HostShape shape;
    const char *words;
};
const OtherHost other_hosts[] = {
    {"@abi-1.0", {KVBLOB_ABI_1_0, false}, "as a host of ABI 1.0 sees the driver"},
    {"@polled", {KVBLOB_ABI_1_1, false}, "as a host of ABI 1.1 that lends no notify service sees the driver"},
};

}  // namespace

const std::vector<Check> &battery()
{
    static const std::vector<Check> checks = [] {
        // The run order: each family's table in turn (checks/<family>.cpp,
        // or checks/<family>_<topic>.cpp where a topic has helpers of its own).
        // The admission, lifetime and concurrency families run at two points
        // each, so each has two tables, and the order stays as it always was.
        std::vector<Check> all;
        add_data_checks(all);
        add_admission_checks(all);
        add_hints_checks(all);
        add_admission_checks_after_hints(all);
        add_refusal_checks(all);
        add_refusal_limit_checks(all);
        add_results_checks(all);
        add_results_wide_checks(all);
        add_lifetime_checks(all);
        add_lifetime_racing_checks(all);
        add_concurrency_checks(all);
        add_scenario_checks(all);
        add_remove_checks(all);
        add_lifetime_answer_checks(all);
        add_open_checks(all);
        add_access_bound_checks(all);
        add_cancel_checks(all);
        add_concurrency_race_checks(all);
        add_notify_checks(all);
        add_device_checks(all);
        add_version_checks(all);
        add_secret_checks(all);
        const size_t newest = all.size();
        for (const auto &host : other_hosts)
            for (size_t i = 0; i < newest; ++i) {
                if (!repeats_per_host(all[i])) continue;
                Check again = all[i];
                again.id += host.suffix;
                again.description += std::string(" (") + host.words + ")";
                // A host of that shape refusing the driver at load or open
                // is the driver's breach of what its version allows.
                if (std::find(again.rules.begin(), again.rules.end(), "R-CAP-2") == again.rules.end())
                    again.rules.push_back("R-CAP-2");
                again.host = host.shape;
                all.push_back(std::move(again));
            }
        return all;
    }();
    return checks;
}

}  // namespace kvblob::conformance
