// A bundled driver's plugin from what is particular to it: the driver class
// D, its whole option table (its own options, then the limits), its name,
// version and description, and which options are secret. The tables for
// each ABI version and the negotiation come from plugin_glue.hpp, so a
// change to either is made here once for every bundled driver.
//
// A plugin.cpp says (its constexpr objects have internal linkage: no
// anonymous namespace needed):
//   constexpr support::Plugin<FileDriver, all_options> plugin("file", "0.1.0", "...");
//   extern const support::OptionTable file_options = plugin.options();  // read by FileDriver::open
//   KVBLOB_SUPPORT_PLUGIN_ENTRY(kvblob::file::plugin)                    // at global scope
#pragma once

#include <kvblob/kvblob.h>

#include <array>
#include <cstddef>
#include <initializer_list>
#include <string_view>
#include <type_traits>

#include "kvblob/support/options.hpp"
#include "kvblob/support/plugin_glue.hpp"

namespace kvblob::support {

template <class D, const auto &Options>
class Plugin {
public:
    static constexpr std::size_t option_count = std::tuple_size_v<std::remove_cvref_t<decltype(Options)>>;

    // own_slots, where a driver answers a slot in a way of its own, changes
    // the generated table of each ABI version (plugins/tiered: its own
    // unregister_region and drain).
    using OwnSlots = kvblob_plugin_t (*)(kvblob_plugin_t);

    constexpr Plugin(const char *name, const char *version, const char *description,
                     std::initializer_list<std::string_view> secrets = {}, OwnSlots own_slots = nullptr)
        : flags_(option_flags(Options, secrets)),
          tables_(with(own_slots,
                       tables<D>(name, version, description, Options.data(), option_count, true, true, flags_.data())))
    {
    }

    // The table D::open parses its arguments against.
    static constexpr OptionTable options() { return {Options.data(), option_count}; }
    // The answer to the host's negotiation (R-LOAD-3).
    kvblob_status negotiate(kvblob_negotiation_t *n) const { return support::negotiate(n, tables_); }

private:
    static constexpr PluginTables with(OwnSlots own_slots, PluginTables t)
    {
        if (own_slots) t = {own_slots(t.v1_0), own_slots(t.v1_1)};
        return t;
    }

    std::array<kvblob_option_flags, option_count> flags_;
    PluginTables tables_;
};

}  // namespace kvblob::support

// Defines the exported entry point (R-LOAD-2) answering with plugin, a
// support::Plugin. At global scope, once per plugin.
#define KVBLOB_SUPPORT_PLUGIN_ENTRY(plugin)                                                                        \
    extern "C" KVBLOB_EXPORT kvblob_status kvblob_plugin_negotiate(kvblob_negotiation_t *n)                        \
    {                                                                                                              \
        return (plugin).negotiate(n);                                                                              \
    }
