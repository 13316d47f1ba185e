// libkvblob_mooncake.so: the option table and the entry.
#include <kvblob/support/limits.hpp>
#include <kvblob/support/plugin_entry.hpp>

#include "mooncake_driver.hpp"

namespace kvblob::mooncake {

using namespace support::option_types;

// Mirrors mooncake_store_setup's arguments.
constexpr std::array own_options{
    text("library", "libmooncake_store.so",
         "Mooncake store's C library: a path, or a name the dynamic linker searches."),
    text("local_hostname", "localhost", "This node's address in the pool."),
    text("metadata_server", "http://127.0.0.1:8080/metadata",
         "Metadata server (etcd://..., http://..., or P2PHANDSHAKE)."),
    text("master_server_address", "127.0.0.1:50051", "mooncake_master's address."),
    text("protocol", "tcp", "Transfer protocol: tcp or rdma."),
    text("device_name", "", "RDMA device names (empty for tcp)."),
    bytes("global_segment_size", "512M", "Memory this node contributes to the pool."),
    bytes("local_buffer_size", "128M", "This node's local transfer buffer."),
    integer("replica_num", "1", "Replicas of each object."),
    integer("workers", "2", "Worker threads making the synchronous calls."),
    text("prefix", "", "Prepended to every key, to share a pool."),
    integer("lease_ttl_ms", "10000",
            "The master's default_kv_lease_ttl: a remove waits out, up to this long after it, the lease this "
            "driver's own get or probe of the key took."),
    integer("remove_lease_wait_ms", "0",
            "How long a remove waits out a lease this driver did not take (another client's read) before "
            "answering NOT_READY."),
};

constexpr auto all_options =
    support::join(own_options, support::limit_options({"65536", "1", "1024", "4G", "4096"}));

constexpr support::Plugin<MooncakeDriver, all_options> plugin(
    "mooncake", "0.1.0", "Mooncake store, the distributed KV-cache pool, through its C API (dlopen'd at open).");

// Read by MooncakeDriver::open.
extern const support::OptionTable mooncake_options = plugin.options();

}  // namespace kvblob::mooncake

KVBLOB_SUPPORT_PLUGIN_ENTRY(kvblob::mooncake::plugin)
