// libkvblob_file.so: the option table, the scenario hooks and the entry.
#include <kvblob/support/limits.hpp>
#include <kvblob/support/plugin_entry.hpp>

#include "file_driver.hpp"

namespace kvblob::file {

using namespace support::option_types;

constexpr std::array own_options{
    text("root", "",
         "Directory the objects are stored under (required; must exist). Drivers in any process opened on the "
         "same root share objects."),
    bytes("capacity", "0",
          "Quota in bytes (payload and trailer) this driver lets the root hold, counted from what is there at "
          "open and what it writes; puts beyond it are DECLINED. 0: no quota."),
    choice("fsync", "none", "none|data|full",
           "none: leave flushing to the OS; data: fdatasync each object before publishing it; full: fsync each "
           "object and its directory."),
    flag("direct", "false",
         "O_DIRECT through an aligned staging buffer, where the filesystem allows it (buffered otherwise)."),
    integer("workers", "4", "Worker threads completing operations."),
    flag("waiter_runs", "true",
         "The polls that wait for an operation read and write its rows beside the worker, rows no thread took "
         "yet, rather than waiting for a worker's time slice (what keeps the driver fast when every core is "
         "busy). Only with fsync=none and without direct, where an operation never waits for the disk. false: "
         "only the workers do."),
    integer("fanout", "2", "Levels of two-hex-digit directories above each object (0-4)."),
    integer("reservation_expiry_ms", "30000",
            "Age after which a writer's reservation is taken as left by a dead writer and broken. A put slower "
            "than this may lose its key to another writer: its row is then NOT_READY and nothing of it is kept."),
};

constexpr auto all_options = support::join(own_options, support::limit_options());

constexpr support::Plugin<FileDriver, all_options> plugin(
    "file", "0.1.0", "One file per object under a directory, local or on a shared POSIX filesystem.");

// Read by FileDriver::open.
extern const support::OptionTable file_options = plugin.options();

}  // namespace kvblob::file

KVBLOB_SUPPORT_PLUGIN_ENTRY(kvblob::file::plugin)
