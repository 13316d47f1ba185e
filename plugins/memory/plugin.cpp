// libkvblob_memory.so: the option table, the scenario hooks and the entry.
#include <kvblob/support/limits.hpp>
#include <kvblob/support/plugin_entry.hpp>

#include "memory_driver.hpp"

namespace kvblob::memory {

using namespace support::option_types;

constexpr std::array own_options{
    text("store", "default", "Name of the in-process store; drivers opened with the same name share objects."),
    bytes("capacity", "0",
          "Bytes the store may hold (payload and trailer); rows that do not fit are DECLINED. 0: no limit. "
          "Set by the store's first opener."),
    choice("mode", "background", "blocking|background|controlled",
           "blocking: final on return; background: worker threads complete operations; controlled: stages "
           "advance only through the scenario hooks (tests)."),
    integer("workers", "2", "Worker threads in background mode."),
    flag("waiter_runs", "true",
         "Background mode: the polls that wait for an operation copy its rows beside the worker, rows no "
         "thread took yet, rather than waiting for a worker's time slice (what keeps the mode fast when every "
         "core is busy). false: only the workers do an operation's work."),
    flag("hints", "true", "Declare the hints capability (a copy of each hint is kept with its operation)."),
    milliseconds("access_delay_ms", "0",
                 "End each operation's access this long after its results are final (a transport that lets go of "
                 "the caller's memory after it answered), and declare it as the access-end bound. 0: access ends "
                 "before results are final. Not in controlled mode, which declares no bound."),
    text("token", "",
         "A credential, as a networked store takes one; the memory store checks nothing with it. Flagged "
         "secret: tools never print it, and the driver never repeats it (R-OPN-2)."),
};

constexpr auto all_options = support::join(own_options, support::limit_options());

constexpr support::Plugin<MemoryDriver, all_options> plugin(
    "memory", "0.1.0", "The reference in-process store: every contract rule, executable.", {"token"});

// Read by MemoryDriver::open.
extern const support::OptionTable memory_options = plugin.options();

}  // namespace kvblob::memory

KVBLOB_SUPPORT_PLUGIN_ENTRY(kvblob::memory::plugin)
