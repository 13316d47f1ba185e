// A plugin loaded twice is one object to the dynamic linker, which answers
// from then on to both descriptor paths it was loaded under. When the second
// load goes while the first stays, its descriptor number must not be given
// to the next plugin: dlopen would answer with the first plugin's object.
#include <doctest/doctest.h>

#include "kvblob/host/plugin.hpp"

TEST_CASE("loader: a plugin loaded twice, one load gone, does not stand in for the next plugin")
{
    auto first = kvblob::Plugin::load(KVBLOB_FIXTURE_DIR "/libkvblob_spy.so");
    {
        auto second = kvblob::Plugin::load(KVBLOB_FIXTURE_DIR "/libkvblob_spy.so");
        CHECK(second.name() == "spy");
    }
    auto next = kvblob::Plugin::load(KVBLOB_PLUGIN_DIR "/libkvblob_memory.so");
    CHECK(next.name() == "memory");
    auto after = kvblob::Plugin::load(KVBLOB_PLUGIN_DIR "/libkvblob_file.so");
    CHECK(after.name() == "file");
    CHECK(first.name() == "spy");
}
