// What scripts/build-mooncake links into libmooncake_store.so beside
// Mooncake's own C API (store_c.h): compiled against the Mooncake sources it
// builds, with report_existing_keys.patch applied to them. Not part of any
// kvblob target; plugins/mooncake/store_api.hpp declares what it exports.
#include <store_c.h>

namespace mooncake {
// Defined in mooncake-store/src/client_service.cpp by report_existing_keys.patch.
extern thread_local bool kvblob_report_existing_keys;
}  // namespace mooncake

namespace {

// Sets the switch for one call on this thread, and clears it however the
// call ends.
class ReportExistingKeys {
public:
    ReportExistingKeys() { mooncake::kvblob_report_existing_keys = true; }
    ~ReportExistingKeys() { mooncake::kvblob_report_existing_keys = false; }
    ReportExistingKeys(const ReportExistingKeys &) = delete;
    ReportExistingKeys &operator=(const ReportExistingKeys &) = delete;
};

}  // namespace

extern "C" {

// The Mooncake release these sources are: upstream's library carries no
// version, and the driver loads only the C API it was written for.
__attribute__((visibility("default"))) const char *kvblob_mooncake_source_version(void) { return "0.3.12.post1"; }

// mooncake_store_batch_put_from, except that a key the master refused
// because it exists (complete, or still being written by another client)
// answers OBJECT_ALREADY_EXISTS (-705) in results_out instead of 0: 0 means
// this call stored the key's bytes. Every other answer is batch_put_from's.
__attribute__((visibility("default"))) int kvblob_mooncake_batch_put_from_reporting_existing(
    mooncake_store_t store, const char **keys, void **buffers, const size_t *sizes, size_t count,
    const mooncake_replicate_config_t *config, int *results_out)
{
    ReportExistingKeys report;
    return mooncake_store_batch_put_from(store, keys, buffers, sizes, count, config, results_out);
}

}  // extern "C"
