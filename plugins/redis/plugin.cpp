// libkvblob_redis.so: the option table, the scenario hooks and the entry.
#include <kvblob/support/limits.hpp>
#include <kvblob/support/plugin_entry.hpp>

#include "redis_driver.hpp"

namespace kvblob::redis {

using namespace support::option_types;

constexpr std::array own_options{
    text("url", "redis://127.0.0.1:6379",
         "The server, or a comma-separated seed list of cluster nodes: redis://[USER:PASSWORD@]HOST:PORT[,...]; a "
         "login here is used unless username/password give one. Never repeated in a message."),
    choice("cluster", "auto", "auto|on|off",
           "auto: a Redis Cluster when the server says it is one; on: require a cluster; off: one server."),
    text("username", "", "ACL user name (AUTH username password)."),
    text("password", "", "Password (AUTH); empty: no AUTH. Never repeated in a message."),
    integer("database", "0", "Database number (SELECT); single server only."),
    integer("connect_timeout_ms", "2000", "Connection timeout."),
    integer("command_timeout_ms", "5000",
            "Silence (no byte sent or received) a node may keep before its rows are FAULT, the connection is "
            "dropped and the node is taken as down (later rows fail at once) until it answers a PING again."),
    integer("connections", "2", "Connections per node."),
    integer("workers", "2", "Worker threads completing operations."),
    text("prefix", "", "Prepended to every key, to share a server."),
};

constexpr auto all_options = support::join(own_options, support::limit_options({"65536", "64", "1024", "536870872", "4096"}));

constexpr support::Plugin<RedisDriver, all_options> plugin(
    "redis", "0.1.0", "Objects as Redis strings with a CRC32C trailer, on one server or a Redis Cluster.", {"password"});

// Read by RedisDriver::open.
extern const support::OptionTable redis_options = plugin.options();

}  // namespace kvblob::redis

KVBLOB_SUPPORT_PLUGIN_ENTRY(kvblob::redis::plugin)
