// libkvblob_mooncake.so: the option table and the entry.
#include <kvblob/support/limits.hpp>
#include <kvblob/support/plugin_entry.hpp>

#include "mooncake_driver.hpp"

namespace kvblob::mooncake {

using support::option;

namespace {

// Mirrors mooncake_store_setup's arguments.
constexpr std::array<kvblob_option_desc_t, 13> own_options = {{
    option(KVBLOB_OPTION_STRING, "library", "libmooncake_store.so", nullptr,
           "Mooncake store's C library: a path, or a name the dynamic linker searches."),
    option(KVBLOB_OPTION_STRING, "local_hostname", "localhost", nullptr, "This node's address in the pool."),
    option(KVBLOB_OPTION_STRING, "metadata_server", "http://127.0.0.1:8080/metadata", nullptr,
           "Metadata server (etcd://..., http://..., or P2PHANDSHAKE)."),
    option(KVBLOB_OPTION_STRING, "master_server_address", "127.0.0.1:50051", nullptr, "mooncake_master's address."),
    option(KVBLOB_OPTION_STRING, "protocol", "tcp", nullptr, "Transfer protocol: tcp or rdma."),
    option(KVBLOB_OPTION_STRING, "device_name", "", nullptr, "RDMA device names (empty for tcp)."),
    option(KVBLOB_OPTION_BYTES, "global_segment_size", "512M", nullptr,
           "Memory this node contributes to the pool."),
    option(KVBLOB_OPTION_BYTES, "local_buffer_size", "128M", nullptr, "This node's local transfer buffer."),
    option(KVBLOB_OPTION_INT, "replica_num", "1", nullptr, "Replicas of each object."),
    option(KVBLOB_OPTION_INT, "workers", "2", nullptr, "Worker threads making the synchronous calls."),
    option(KVBLOB_OPTION_STRING, "prefix", "", nullptr, "Prepended to every key, to share a pool."),
    option(KVBLOB_OPTION_INT, "lease_ttl_ms", "10000", nullptr,
           "The master's default_kv_lease_ttl: a remove waits out, up to this long after it, the lease this "
           "driver's own get or probe of the key took."),
    option(KVBLOB_OPTION_INT, "remove_lease_wait_ms", "0", nullptr,
           "How long a remove waits out a lease this driver did not take (another client's read) before "
           "answering NOT_READY."),
}};

constexpr auto all_options =
    support::join(own_options, support::limit_options({"65536", "1", "1024", "4G", "4096"}));

constexpr support::Plugin<MooncakeDriver, all_options> plugin(
    "mooncake", "0.1.0", "Mooncake store, the distributed KV-cache pool, through its C API (dlopen'd at open).");

}  // namespace

// Read by MooncakeDriver::open.
extern const support::OptionTable mooncake_options = plugin.options();

}  // namespace kvblob::mooncake

KVBLOB_SUPPORT_PLUGIN_ENTRY(kvblob::mooncake::plugin)
