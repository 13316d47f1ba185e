// A plugin loaded twice is one object to the dynamic linker, which answers
// from then on to both descriptor paths it was loaded under. When the second
// load goes while the first stays, its descriptor number must not be given
// to the next plugin: dlopen would answer with the first plugin's object.
#include <dlfcn.h>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "kvblob/host/load_error.hpp"
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

TEST_CASE("loader: a plugin the process dlopen'ed by its own path is loaded under that path, and adds no name for the next plugin")
{
    // As an engine, or another library in it, may: the memory driver opened
    // by its path, and kept. A load through a descriptor path would add that
    // path to the object for good, and the next plugin given the same
    // descriptor number would get the memory driver.
    void *direct = dlopen(KVBLOB_PLUGIN_DIR "/libkvblob_memory.so", RTLD_NOW | RTLD_LOCAL);
    REQUIRE_MESSAGE(direct, dlerror());
    {
        auto memory = kvblob::Plugin::load(KVBLOB_PLUGIN_DIR "/libkvblob_memory.so");
        CHECK(memory.name() == "memory");
    }
    auto file = kvblob::Plugin::load(KVBLOB_PLUGIN_DIR "/libkvblob_file.so");
    CHECK(file.name() == "file");
    dlclose(direct);
}

TEST_CASE("loader: a descriptor path the dynamic linker holds for another object is refused, naming that object")
{
    // Made by hand here, as a loader without this check would: the memory
    // driver loaded by its path, then again through descriptor paths, which
    // stay its names once the descriptors are closed. Eight numbers in a row,
    // so that the loader's own descriptor for the next plugin gets one.
    void *direct = dlopen(KVBLOB_PLUGIN_DIR "/libkvblob_memory.so", RTLD_NOW | RTLD_LOCAL);
    REQUIRE_MESSAGE(direct, dlerror());
    std::vector<int> fds;
    std::vector<void *> aliases;
    for (int i = 0; i < 8; ++i) {
        fds.push_back(::open(KVBLOB_PLUGIN_DIR "/libkvblob_memory.so", O_RDONLY | O_CLOEXEC));
        REQUIRE(fds.back() >= 0);
        aliases.push_back(dlopen(("/proc/self/fd/" + std::to_string(fds.back())).c_str(), RTLD_NOW | RTLD_LOCAL));
        REQUIRE_MESSAGE(aliases.back(), dlerror());
    }
    for (int fd : fds) ::close(fd);
    try {
        auto file = kvblob::Plugin::load(KVBLOB_PLUGIN_DIR "/libkvblob_file.so");
        FAIL("loaded as '" << file.name() << "' through a descriptor path that names the memory driver");
    } catch (const kvblob::LoadError &e) {
        const std::string what = e.what();
        CHECK(what.find("another object already loaded") != std::string::npos);
        CHECK(what.find("libkvblob_memory.so") != std::string::npos);
        CHECK(what.find("libkvblob_file.so") != std::string::npos);
    }
    for (void *alias : aliases) dlclose(alias);
    dlclose(direct);
}

TEST_CASE("loader: an object whose first name was a descriptor path since closed does not answer for the next plugin")
{
    // Made by hand, as another part of the process might: the memory driver
    // loaded first through a descriptor path, then aliased under eight more,
    // every descriptor closed. The loader steps off the first name (it is
    // seen), onto a number that is only an alias (it is not), and dlopen
    // answers with the memory driver; the file at its first name can no
    // longer be looked at, so only the mapped file itself tells.
    std::vector<int> fds;
    std::vector<void *> handles;
    for (int i = 0; i < 9; ++i) {
        fds.push_back(::open(KVBLOB_PLUGIN_DIR "/libkvblob_memory.so", O_RDONLY | O_CLOEXEC));
        REQUIRE(fds.back() >= 0);
        handles.push_back(dlopen(("/proc/self/fd/" + std::to_string(fds.back())).c_str(), RTLD_NOW | RTLD_LOCAL));
        REQUIRE_MESSAGE(handles.back(), dlerror());
    }
    for (int fd : fds) ::close(fd);
    try {
        auto file = kvblob::Plugin::load(KVBLOB_PLUGIN_DIR "/libkvblob_file.so");
        CHECK(file.name() == "file");  // loaded under a name of its own
    } catch (const kvblob::LoadError &e) {
        const std::string what = e.what();
        CHECK(what.find("another object already loaded") != std::string::npos);
        CHECK(what.find("libkvblob_file.so") != std::string::npos);
    }
    for (void *h : handles) dlclose(h);
}
