// libkvblob_memory.so: the option table, the scenario hooks and the entry.
#include <kvblob/support/limits.hpp>
#include <kvblob/support/plugin_entry.hpp>

#include "memory_driver.hpp"

namespace kvblob::memory {

using support::option;

namespace {

constexpr std::array<kvblob_option_desc_t, 8> own_options = {{
    option(KVBLOB_OPTION_STRING, "store", "default", nullptr,
           "Name of the in-process store; drivers opened with the same name share objects."),
    option(KVBLOB_OPTION_BYTES, "capacity", "0", nullptr,
           "Bytes the store may hold (payload and trailer); rows that do not fit are DECLINED. 0: no limit. "
           "Set by the store's first opener."),
    option(KVBLOB_OPTION_CHOICE, "mode", "background", "blocking|background|controlled",
           "blocking: final on return; background: worker threads complete operations; controlled: stages "
           "advance only through the scenario hooks (tests)."),
    option(KVBLOB_OPTION_INT, "workers", "2", nullptr, "Worker threads in background mode."),
    option(KVBLOB_OPTION_BOOL, "waiter_runs", "true", nullptr,
           "Background mode: the polls that wait for an operation copy its rows beside the worker, rows no "
           "thread took yet, rather than waiting for a worker's time slice (what keeps the mode fast when every "
           "core is busy). false: only the workers do an operation's work."),
    option(KVBLOB_OPTION_BOOL, "hints", "true", nullptr,
           "Declare the hints capability (a copy of each hint is kept with its operation)."),
    option(KVBLOB_OPTION_MILLISECONDS, "access_delay_ms", "0", nullptr,
           "End each operation's access this long after its results are final (a transport that lets go of the "
           "caller's memory after it answered), and declare it as the access-end bound. 0: access ends before "
           "results are final. Not in controlled mode, which declares no bound."),
    option(KVBLOB_OPTION_STRING, "token", "", nullptr,
           "A credential, as a networked store takes one; the memory store checks nothing with it. Flagged "
           "secret: tools never print it, and the driver never repeats it (R-OPN-2)."),
}};

constexpr auto all_options = support::join(own_options, support::limit_options());

constexpr support::Plugin<MemoryDriver, all_options> plugin(
    "memory", "0.1.0", "The reference in-process store: every contract rule, executable.", {"token"});

}  // namespace

// Read by MemoryDriver::open.
extern const support::OptionTable memory_options = plugin.options();

}  // namespace kvblob::memory

KVBLOB_SUPPORT_PLUGIN_ENTRY(kvblob::memory::plugin)
