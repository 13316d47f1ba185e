// libkvblob_tiered.so: the option table and the entry. The C table is the
// one plugin_glue.hpp generates, but for unregister_region, which asks
// every tier first (TieredDriver::unregister_everywhere).
#include <kvblob/support/limits.hpp>
#include <kvblob/support/plugin_glue.hpp>

#include "tiered_driver.hpp"

namespace kvblob::tiered {

using support::option;

namespace {

constexpr std::array<kvblob_option_desc_t, 6> own_options = {{
    option(KVBLOB_OPTION_INT, "workers", "4", nullptr,
           "Worker threads; each runs one operation at a time through the tiers. Tiers are given as "
           "tier.N.driver=NAME (N = 0 the top, then 1, 2 ... without gaps; at least two) and "
           "tier.N.<option>=VALUE, passed to tier N's driver as <option>=VALUE."),
    option(KVBLOB_OPTION_CHOICE, "write", "through", "through|back",
           "through: a put is READY once the last tier stored it (written bottom first, then each tier above). "
           "back: READY once the top tier stored it; the tiers below are written from the driver's own copy by "
           "a thread of its own, drained by drain and close."),
    option(KVBLOB_OPTION_BYTES, "write_back_queue_bytes", "256M", nullptr,
           "write=back: bytes of rows waiting to be written below, at most; a put waits for room. No row is "
           "larger (max_object_bytes is at most this)."),
    option(KVBLOB_OPTION_INT, "write_back_queue_rows", "4096", nullptr,
           "write=back: rows waiting to be written below, at most (each is one write to every tier below, so "
           "this bounds how long a drain waits for small rows); a put waits for room."),
    option(KVBLOB_OPTION_BYTES, "top_bytes", "0", nullptr,
           "Bytes the top tier may hold of what this driver put or promoted there; past it the least recently "
           "used objects held below are evicted first. 0: no budget, evict only when the top tier DECLINES."),
    option(KVBLOB_OPTION_INT, "lru_keys", "1048576", nullptr,
           "Keys of the top tier whose recency this driver records, at most (its memory for the record); past "
           "it the least recently used is evicted, or, where none is held below, no longer recorded."),
}};

constexpr auto all_options = support::join(own_options, support::limit_options());
constexpr auto flags = support::option_flags(all_options);

kvblob_status unregister_slot(kvblob_driver_t *d, kvblob_region_t *region) noexcept
{
    if (!d) return KVBLOB_E_INVALID;
    try {
        return static_cast<TieredDriver *>(static_cast<support::DriverBase *>(d))->unregister_everywhere(region);
    } catch (...) {
        return KVBLOB_E_BUSY;  // nothing let go of: the memory stays the caller's to keep
    }
}

// drain waits for the write=back queue too (TieredDriver::drain_everything).
kvblob_status drain_slot(kvblob_driver_t *d, uint64_t timeout_ns) noexcept
{
    if (!d) return KVBLOB_E_INVALID;
    try {
        return static_cast<TieredDriver *>(static_cast<support::DriverBase *>(d))->drain_everything(timeout_ns);
    } catch (...) {
        return KVBLOB_E_INTERNAL;
    }
}

constexpr kvblob_plugin_t with_own_unregister(kvblob_plugin_t table)
{
    table.unregister_region = &unregister_slot;
    table.drain = &drain_slot;
    return table;
}

constexpr const char *description =
    "A stack of drivers as one store: gets fall through the tiers top first and promote what they find "
    "below; puts write through every tier (or back, from the top tier); the top tier evicts its least "
    "recently used objects. Options: tier.N.driver=NAME, tier.N.<option>=VALUE.";

using Glue = support::CTableOf<TieredDriver>;

constexpr support::PluginTables tables{
    with_own_unregister(Glue::table(KVBLOB_ABI_1_0, KVBLOB_DRIVER_NAME, "0.1.0", description, all_options.data(),
                                    all_options.size(), true, true)),
    with_own_unregister(Glue::table(KVBLOB_ABI_1_1, KVBLOB_DRIVER_NAME, "0.1.0", description, all_options.data(),
                                    all_options.size(), true, true, flags.data())),
};

}  // namespace

// Read by TieredDriver::open.
extern const support::OptionTable tiered_options = {all_options.data(), all_options.size()};

}  // namespace kvblob::tiered

extern "C" KVBLOB_EXPORT kvblob_status kvblob_plugin_negotiate(kvblob_negotiation_t *n)
{
    return kvblob::support::negotiate(n, kvblob::tiered::tables);
}
