// open.*: what open declares (the same capabilities for the same options)
// and refuses (a bad value, an unknown option). The open checks of older
// and polling hosts are in checks/open_versions.cpp, of secret options in
// checks/open_secrets.cpp.
#include <cstring>
#include <memory>

#include "common.hpp"

namespace kvblob::conformance {

namespace {

void open_capabilities_fixed(Context &c)
{
    // Opened one after another, all open at once: a store's drivers
    // do not share out their limits.
    std::vector<std::unique_ptr<CheckDriver>> open;
    open.emplace_back(new CheckDriver(c.open()));
    auto first = open.front()->caps();
    for (int i = 0; i < 3; ++i) {
        open.emplace_back(new CheckDriver(c.open()));
        auto again = open.back()->caps();
        expect(std::memcmp(&first, &again, sizeof first) == 0, "R-CAP-1",
               "a driver opened with the same options declared other capabilities");
    }
}

void open_bad_value(Context &c)
{
    int tried = 0;
    for (const auto &o : c.plugin_options()) {
        if (!o.name) continue;
        const std::string name = o.name;
        if (o.type != KVBLOB_OPTION_INT && o.type != KVBLOB_OPTION_BOOL &&
            o.type != KVBLOB_OPTION_BYTES && o.type != KVBLOB_OPTION_MILLISECONDS &&
            o.type != KVBLOB_OPTION_CHOICE)
            continue;  // a string may be anything
        // No integer, byte count, boolean or choice word reads like this.
        const std::string value = "kvblob-conformance-not-a-value";
        std::string why;
        ++tried;
        expect(!c.try_open_with({{name, value}}, why), "R-OPN-1",
               "open accepted '" + value + "' for its option '" + name + "'");
        expect(why.find(name) != std::string::npos, "R-OPN-1",
               "the refusal of a bad value does not name option '" + name + "': " + why);
    }
    if (tried == 0) throw NotSupported("the plugin describes no typed option");
}

void open_unknown_option(Context &c)
{
    const std::string name = "kvblob_conformance_unknown_option";
    std::string why;
    expect(!c.try_open_with({{name, "1"}}, why), "R-OPN-1", "open accepted an unknown option");
    expect(why.find(name) != std::string::npos, "R-OPN-1",
           "the refusal does not name the option: " + why);
}

}  // namespace

// The checks of this file, in run order.
void add_open_checks(std::vector<Check> &out)
{
    const Check checks[] = {
        {"open.capabilities-fixed", {"R-CAP-1"}, Level::must, 0, {},
         "drivers opened with the same options declare the same capabilities",
         open_capabilities_fixed},
        {"open.bad-value", {"R-OPN-1"}, Level::must, 0, {},
         "open refuses a value it cannot parse for each typed option it describes, naming the option",
         open_bad_value},
        {"open.unknown-option", {"R-OPN-1"}, Level::must, 0, {},
         "open refuses an option it does not know, naming it",
         open_unknown_option},
    };
    out.insert(out.end(), std::begin(checks), std::end(checks));
}

}  // namespace kvblob::conformance
