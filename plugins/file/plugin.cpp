// libkvblob_file.so: the option table, the scenario hooks and the entry.
#include <kvblob/support/limits.hpp>
#include <kvblob/support/plugin_entry.hpp>

#include "file_driver.hpp"

namespace kvblob::file {

using support::option;

namespace {

constexpr std::array<kvblob_option_desc_t, 8> own_options = {{
    option(KVBLOB_OPTION_STRING, "root", "", nullptr,
           "Directory the objects are stored under (required; must exist). Drivers in any process opened on the "
           "same root share objects."),
    option(KVBLOB_OPTION_BYTES, "capacity", "0", nullptr,
           "Quota in bytes (payload and trailer) this driver lets the root hold, counted from what is there at "
           "open and what it writes; puts beyond it are DECLINED. 0: no quota."),
    option(KVBLOB_OPTION_CHOICE, "fsync", "none", "none|data|full",
           "none: leave flushing to the OS; data: fdatasync each object before publishing it; full: fsync each "
           "object and its directory."),
    option(KVBLOB_OPTION_BOOL, "direct", "false", nullptr,
           "O_DIRECT through an aligned staging buffer, where the filesystem allows it (buffered otherwise)."),
    option(KVBLOB_OPTION_INT, "workers", "4", nullptr, "Worker threads completing operations."),
    option(KVBLOB_OPTION_BOOL, "waiter_runs", "true", nullptr,
           "The polls that wait for an operation read and write its rows beside the worker, rows no thread took "
           "yet, rather than waiting for a worker's time slice (what keeps the driver fast when every core is "
           "busy). Only with fsync=none and without direct, where an operation never waits for the disk. false: "
           "only the workers do."),
    option(KVBLOB_OPTION_INT, "fanout", "2", nullptr, "Levels of two-hex-digit directories above each object (0-4)."),
    option(KVBLOB_OPTION_INT, "reservation_expiry_ms", "30000", nullptr,
           "Age after which a writer's reservation is taken as left by a dead writer and broken. A put slower "
           "than this may lose its key to another writer: its row is then NOT_READY and nothing of it is kept."),
}};

constexpr auto all_options = support::join(own_options, support::limit_options());

constexpr support::Plugin<FileDriver, all_options> plugin(
    "file", "0.1.0", "One file per object under a directory, local or on a shared POSIX filesystem.");

}  // namespace

// Read by FileDriver::open.
extern const support::OptionTable file_options = plugin.options();

}  // namespace kvblob::file

KVBLOB_SUPPORT_PLUGIN_ENTRY(kvblob::file::plugin)
