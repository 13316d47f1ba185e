// libkvblob_tiered.so: the option table and the entry. Its C table is the
// one support::Plugin generates, but for two slots of its own
// (with_own_slots).
#include <kvblob/support/limits.hpp>
#include <kvblob/support/plugin_entry.hpp>

#include "tiered_driver.hpp"

namespace kvblob::tiered {

using namespace support::option_types;

constexpr std::array own_options{
    integer("workers", "4",
            "Worker threads (1 to 256); each runs one operation at a time through the tiers. Tiers are given as "
            "tier.N.driver=NAME (N = 0 the top, then 1, 2 ... without gaps; at least two) and "
            "tier.N.<option>=VALUE, passed to tier N's driver as <option>=VALUE."),
    choice("write", "through", "through|back",
           "through: a put is READY once the last tier stored it (written bottom first, then each tier above). "
           "back: READY once the top tier stored it; the tiers below are written from the driver's own copy by "
           "a thread of its own within about 10 ms, at once where a remove, drain or close waits for it."),
    bytes("write_back_queue_bytes", "256M",
          "write=back: bytes of rows waiting to be written below, at most; a put waits for room. No row is "
          "larger (max_object_bytes is at most this)."),
    integer("write_back_queue_rows", "4096",
            "write=back: rows waiting to be written below, at most (each is one write to every tier below, so "
            "this bounds how long a drain waits for small rows; at least 1); a put waits for room."),
    bytes("top_bytes", "0",
          "Bytes the top tier may hold of what this driver put or promoted there; past it the least recently "
          "used objects held below are evicted first. 0: no budget, evict only when the top tier DECLINES."),
    integer("submit_watch_us", "200",
            "Microseconds the submit of a get (or of a write=back put) watches a tier's operation that was not "
            "final on return, once the submitting thread ran what rows of it the tier lets waiters run, before a "
            "worker of this driver waits for it instead; 0: hand it to a worker at once; at most 1000000."),
    integer("lru_keys", "1048576",
            "Keys of the top tier whose recency this driver records, at most (its memory for the record); past "
            "it the least recently used is evicted, or, where none is held below, no longer recorded. At least 1."),
};

constexpr auto all_options = support::join(own_options, support::limit_options());

namespace {

// unregister_region asks every tier first (TieredDriver::unregister_everywhere).
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

constexpr kvblob_plugin_t with_own_slots(kvblob_plugin_t table)
{
    table.unregister_region = &unregister_slot;
    table.drain = &drain_slot;
    return table;
}

}  // namespace

constexpr support::Plugin<TieredDriver, all_options> plugin(
    KVBLOB_DRIVER_NAME, "0.1.0",
    "A stack of drivers as one store: gets fall through the tiers top first and promote what they find "
    "below; puts write through every tier (or back, from the top tier); the top tier evicts its least "
    "recently used objects. Options: tier.N.driver=NAME, tier.N.<option>=VALUE.",
    {}, &with_own_slots);

// Read by TieredDriver::open.
extern const support::OptionTable tiered_options = plugin.options();

}  // namespace kvblob::tiered

KVBLOB_SUPPORT_PLUGIN_ENTRY(kvblob::tiered::plugin)
