// libkvblob_redis.so: the option table, the scenario hooks and the entry.
#include <kvblob/support/limits.hpp>
#include <kvblob/support/plugin_entry.hpp>

#include "redis_driver.hpp"

namespace kvblob::redis {

using support::option;

namespace {

constexpr std::array<kvblob_option_desc_t, 10> own_options = {{
    option(KVBLOB_OPTION_STRING, "url", "redis://127.0.0.1:6379", nullptr,
           "The server, or a comma-separated seed list of cluster nodes: redis://[USER:PASSWORD@]HOST:PORT[,...]; a login here is used unless username/password give one. Never repeated in a message."),
    option(KVBLOB_OPTION_CHOICE, "cluster", "auto", "auto|on|off",
           "auto: a Redis Cluster when the server says it is one; on: require a cluster; off: one server."),
    option(KVBLOB_OPTION_STRING, "username", "", nullptr, "ACL user name (AUTH username password)."),
    option(KVBLOB_OPTION_STRING, "password", "", nullptr, "Password (AUTH); empty: no AUTH. Never repeated in a message."),
    option(KVBLOB_OPTION_INT, "database", "0", nullptr, "Database number (SELECT); single server only."),
    option(KVBLOB_OPTION_INT, "connect_timeout_ms", "2000", nullptr, "Connection timeout."),
    option(KVBLOB_OPTION_INT, "command_timeout_ms", "5000", nullptr,
           "Silence (no byte sent or received) a node may keep before its rows are FAULT, the connection is "
           "dropped and the node is taken as down (later rows fail at once) until it answers a PING again."),
    option(KVBLOB_OPTION_INT, "connections", "2", nullptr, "Connections per node."),
    option(KVBLOB_OPTION_INT, "workers", "2", nullptr, "Worker threads completing operations."),
    option(KVBLOB_OPTION_STRING, "prefix", "", nullptr, "Prepended to every key, to share a server."),
}};

constexpr auto all_options = support::join(own_options, support::limit_options({"65536", "64", "1024", "536870872", "4096"}));

constexpr support::Plugin<RedisDriver, all_options> plugin(
    "redis", "0.1.0", "Objects as Redis strings with a CRC32C trailer, on one server or a Redis Cluster.", {"password"});

}  // namespace

// Read by RedisDriver::open.
extern const support::OptionTable redis_options = plugin.options();

}  // namespace kvblob::redis

KVBLOB_SUPPORT_PLUGIN_ENTRY(kvblob::redis::plugin)
