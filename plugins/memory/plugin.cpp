// libkvblob_memory.so: the option table, the scenario hooks and the entry.
#include <kvblob/support/plugin_glue.hpp>

#include "memory_driver.hpp"

namespace kvblob::memory {

namespace {

constexpr kvblob_option_desc_t option(kvblob_option_type type, const char *name, const char *def,
                                      const char *choices, const char *help)
{
    return {sizeof(kvblob_option_desc_t), type, name, def, choices, help};
}

MemoryDriver *self(kvblob_driver_t *d) { return static_cast<MemoryDriver *>(static_cast<support::DriverBase *>(d)); }
std::string key_of(const uint8_t *key, uint64_t len)
{
    return key ? std::string(reinterpret_cast<const char *>(key), len) : std::string();
}

kvblob_status foreign_writer(kvblob_driver_t *d, const uint8_t *k, uint64_t n)
{
    return self(d)->stage_foreign_writer(key_of(k, n));
}
kvblob_status full_pool(kvblob_driver_t *d) { return self(d)->stage_full_pool(); }
kvblob_status failing_read(kvblob_driver_t *d, const uint8_t *k, uint64_t n)
{
    return self(d)->stage_failing_read(key_of(k, n));
}
kvblob_status held_get(kvblob_driver_t *d, const uint8_t *k, uint64_t n)
{
    return self(d)->stage_held_get(key_of(k, n));
}
kvblob_status corrupt(kvblob_driver_t *d, const uint8_t *k, uint64_t n)
{
    return self(d)->stage_corrupt(key_of(k, n));
}
kvblob_status unprovable(kvblob_driver_t *d, const uint8_t *k, uint64_t n)
{
    return self(d)->stage_unprovable(key_of(k, n));
}
kvblob_status release_staged(kvblob_driver_t *d) { return self(d)->release_staged(); }
kvblob_status advance(kvblob_driver_t *d, kvblob_op_t *op, kvblob_stage stage) { return self(d)->advance(op, stage); }
uint64_t echo_hint(kvblob_driver_t *d, kvblob_op_t *op, void *buf, uint64_t capacity)
{
    return self(d)->echo_hint(op, buf, capacity);
}

}  // namespace

extern const kvblob_option_desc_t memory_options[] = {
    option(KVBLOB_OPTION_STRING, "store", "default", nullptr,
           "Name of the in-process store; drivers opened with the same name share objects."),
    option(KVBLOB_OPTION_BYTES, "capacity", "0", nullptr,
           "Bytes the store may hold (payload and trailer); rows that do not fit are DECLINED. 0: no limit. "
           "Set by the store's first opener."),
    option(KVBLOB_OPTION_CHOICE, "mode", "background", "blocking|background|controlled",
           "blocking: final on return; background: worker threads complete operations; controlled: stages "
           "advance only through the scenario hooks (tests)."),
    option(KVBLOB_OPTION_INT, "workers", "2", nullptr, "Worker threads in background mode."),
    option(KVBLOB_OPTION_BOOL, "hints", "true", nullptr,
           "Declare the hints capability (a copy of each hint is kept with its operation)."),
    option(KVBLOB_OPTION_INT, "max_rows", "65536", nullptr, "Most rows per operation."),
    option(KVBLOB_OPTION_INT, "max_spans", "64", nullptr, "Most spans per row (1 turns multi_span off)."),
    option(KVBLOB_OPTION_INT, "max_key_bytes", "1024", nullptr, "Longest key, in bytes."),
    option(KVBLOB_OPTION_BYTES, "max_object_bytes", "4G", nullptr, "Largest object."),
    option(KVBLOB_OPTION_INT, "max_ops_in_flight", "4096", nullptr, "Most operations admitted and not settled."),
};
extern const uint64_t memory_option_count = sizeof(memory_options) / sizeof(memory_options[0]);

extern const kvblob_scenarios_t memory_scenarios = {
    sizeof(kvblob_scenarios_t), 0, foreign_writer, full_pool, failing_read, held_get, corrupt, unprovable,
    release_staged, advance, echo_hint,
};

namespace {
constexpr kvblob_plugin_t plugin_table = support::Glue<MemoryDriver>::table(
    "memory", "0.1.0", "The reference in-process store: every contract rule, executable.", memory_options,
    sizeof(memory_options) / sizeof(memory_options[0]), true, true);
}  // namespace

}  // namespace kvblob::memory

extern "C" KVBLOB_EXPORT kvblob_status kvblob_plugin_negotiate(kvblob_negotiation_t *n)
{
    return kvblob::support::negotiate(n, &kvblob::memory::plugin_table);
}
