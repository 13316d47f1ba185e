// The loader resolves a plugin to one file, opens it once, judges that
// descriptor and loads that same descriptor (host/src/loading/plugin_file.cpp):
// bare names, swapped links, open folders, FIFOs and truncated files are
// refused at stage open, naming the file and the rule, before any of the
// plugin's code runs.
#include <doctest/doctest.h>

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>

#include "kvblob/host/plugin.hpp"
#include "kvblob/host/sha256.hpp"
#include "support/process.hpp"

namespace fs = std::filesystem;

namespace {

std::string fixture(const std::string &name)
{
    return std::string(KVBLOB_FIXTURE_DIR) + "/libkvblob_fixture_" + name + ".so";
}

// A private folder (mode 0755), removed with the object.
struct Folder {
    Folder()
    {
        static int n = 0;
        path = fs::temp_directory_path() / ("kvblob-file-" + std::to_string(getpid()) + "-" + std::to_string(n++));
        fs::remove_all(path);
        fs::create_directories(path);
        fs::permissions(path, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                  fs::perms::others_read | fs::perms::others_exec);
    }
    ~Folder()
    {
        std::error_code ec;
        fs::permissions(path, fs::perms::owner_all, ec);
        fs::remove_all(path, ec);
    }
    fs::path copy(const std::string &from, const std::string &name) const
    {
        auto to = path / name;
        fs::copy_file(from, to);
        fs::permissions(to, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                                fs::perms::others_read);
        return to;
    }
    fs::path path;
};

// The refusal of loading spec, checked to name the file, the stage and the
// rule in its message; fails the test when spec loads.
kvblob::LoadError refusal(const std::string &spec, const kvblob::LoadOptions &options = {})
{
    try {
        kvblob::Plugin::load(spec, options);
    } catch (const kvblob::LoadError &e) {
        const std::string what = e.what();
        CHECK_MESSAGE(what.find(e.file()) != std::string::npos, what);
        CHECK_MESSAGE(what.find(std::string("at stage ") + kvblob::to_string(e.stage())) != std::string::npos, what);
        CHECK_MESSAGE(what.find("[" + e.rule() + "]") != std::string::npos, what);
        return e;
    }
    FAIL("loaded " << spec);
    throw;
}

bool has_rule(const kvblob::LoadError &e, const std::string &rule)
{
    for (const auto &p : e.problems())
        if (p.rule == rule) return true;
    return false;
}

const std::string zeros(64, '0');

}  // namespace

TEST_CASE("a bare library name is resolved by the loader and judged like a path (R-LOAD-10, R-LOAD-11)")
{
    Folder dir;
    const auto evil = dir.copy(fixture("good"), "libevil.so");
    fs::permissions(evil, fs::perms::others_write, fs::perm_options::add);
    setenv("KVBLOB_DRIVER_PATH", dir.path.c_str(), 1);
    kvblob::LoadOptions pinned;
    pinned.expected_sha256 = zeros;
    auto e = refusal("libevil.so", pinned);
    CHECK(e.stage() == kvblob::LoadStage::open);
    CHECK(e.file() == evil.string());
    CHECK(has_rule(e, "R-LOAD-10"));
    CHECK(has_rule(e, "R-LOAD-11"));
    // The trust rule alone applies to a bare name too.
    CHECK(refusal("libevil.so").rule() == "R-LOAD-10");
    // Allowed and pinned to its real digest, the same name loads that file.
    kvblob::LoadOptions allowed;
    allowed.allow_untrusted_file = true;
    allowed.expected_sha256 = kvblob::sha256_file_hex(evil);
    CHECK(kvblob::Plugin::load("libevil.so", allowed).path() == evil);
    unsetenv("KVBLOB_DRIVER_PATH");
}

TEST_CASE("kvblob-info refuses a world-writable bare name from LD_LIBRARY_PATH, pinned or not")
{
    Folder dir;
    const auto evil = dir.copy(fixture("good"), "libevil.so");
    fs::permissions(evil, fs::perms::others_write, fs::perm_options::add);
    const std::string env = "LD_LIBRARY_PATH=" + dir.path.string() + " ";
    auto pinned = run_command(env + KVBLOB_INFO_BIN " libevil.so --sha256 " + zeros);
    CHECK(pinned.exit_code == 3);
    CHECK_MESSAGE(pinned.output.find(evil.string()) != std::string::npos, pinned.output);
    CHECK(pinned.output.find("stage open") != std::string::npos);
    CHECK(pinned.output.find("[R-LOAD-10]") != std::string::npos);
    CHECK(pinned.output.find("[R-LOAD-11]") != std::string::npos);
    auto plain = run_command(env + KVBLOB_INFO_BIN " libevil.so");
    CHECK(plain.exit_code == 3);
    CHECK_MESSAGE(plain.output.find("[R-LOAD-10] the file") != std::string::npos, plain.output);
    // The refusal names the flag a command-line user allows it with, not the config key.
    CHECK_MESSAGE(plain.output.find("(--allow-untrusted-plugin to load it anyway)") != std::string::npos, plain.output);
}

TEST_CASE("a folder others may write is refused unless sticky (R-LOAD-10)")
{
    Folder dir;
    const auto file = dir.copy(fixture("good"), "libkvblob_open_folder.so");
    CHECK_NOTHROW(kvblob::Plugin::load(file.string()));
    fs::permissions(dir.path, fs::perms::all);
    auto e = refusal(file.string());
    CHECK(e.stage() == kvblob::LoadStage::open);
    CHECK(e.rule() == "R-LOAD-10");
    CHECK_MESSAGE(std::string(e.what()).find("its folder " + dir.path.string() + " is writable by others") !=
                      std::string::npos,
                  e.what());
    kvblob::LoadOptions allow;
    allow.allow_untrusted_file = true;
    CHECK_NOTHROW(kvblob::Plugin::load(file.string(), allow));
    // /tmp's way: world-writable but sticky, so only a file's owner may
    // replace it.
    fs::permissions(dir.path, fs::perms::all | fs::perms::sticky_bit);
    CHECK_NOTHROW(kvblob::Plugin::load(file.string()));
}

TEST_CASE("a symlink swapped between two plugins never loads the unpinned one")
{
    Folder dir;
    dir.copy(fixture("good"), "good.so");
    dir.copy(fixture("other"), "other.so");
    const auto link = dir.path / "current.so", spare = dir.path / "spare.so";
    fs::create_symlink("good.so", link);
    kvblob::LoadOptions pinned;
    pinned.expected_sha256 = kvblob::sha256_file_hex(dir.path / "good.so");

    // rename() replaces the link atomically: at every instant current.so
    // names one of the two plugins.
    std::atomic<bool> stop{false};
    std::atomic<int> swaps{0};
    std::thread swapper([&] {
        for (bool other = true; !stop.load(); other = !other) {
            fs::remove(spare);
            fs::create_symlink(other ? "other.so" : "good.so", spare);
            fs::rename(spare, link);
            swaps.fetch_add(1);
        }
    });
    int loaded = 0, refused = 0, wrong = 0, other_refusals = 0;
    for (int i = 0; i < 300; ++i) {
        try {
            auto plugin = kvblob::Plugin::load(link.string(), pinned);
            ++loaded;
            if (plugin.name() != "fixture") ++wrong;
        } catch (const kvblob::LoadError &e) {
            ++refused;
            if (e.rule() != "R-LOAD-11") {
                ++other_refusals;
                MESSAGE(e.what());
            }
        }
    }
    stop.store(true);
    swapper.join();
    MESSAGE(loaded << " loads, " << refused << " refused for the digest, " << swaps.load() << " swaps");
    CHECK(wrong == 0);
    CHECK(other_refusals == 0);
    CHECK(loaded > 0);
}

TEST_CASE("a FIFO named like a plugin is refused without waiting for a writer (R-LOAD-1)")
{
    Folder dir;
    const auto fifo = dir.path / "x.so";
    REQUIRE(mkfifo(fifo.c_str(), 0644) == 0);
    auto attempt = std::async(std::launch::async, [&] {
        try {
            kvblob::Plugin::load(fifo.string());
        } catch (const kvblob::LoadError &e) {
            return std::string(e.rule()) + " " + kvblob::to_string(e.stage()) + " " + e.what();
        }
        return std::string("loaded");
    });
    if (attempt.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
        // Release the loader's open() so the test can end, and fail.
        int writer = open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
        if (writer >= 0) close(writer);
        FAIL("loading a FIFO hangs");
    }
    const auto outcome = attempt.get();
    CHECK_MESSAGE(outcome.rfind("R-LOAD-1 open ", 0) == 0, outcome);
    CHECK_MESSAGE(outcome.find("a FIFO") != std::string::npos, outcome);
    CHECK_MESSAGE(outcome.find(fifo.string()) != std::string::npos, outcome);
}

TEST_CASE("an ELF whose loadable segments do not fit in the file is refused before dlopen (R-LOAD-1)")
{
    Folder dir;
    const auto file = dir.copy(fixture("good"), "libkvblob_truncated.so");
    // Cut the file one byte into its last loadable segment: the dynamic
    // linker would map pages past the end and fault (SIGBUS) touching them.
    uint64_t cut = 0;
    {
        std::ifstream in(file, std::ios::binary);
        Elf64_Ehdr eh{};
        REQUIRE(in.read(reinterpret_cast<char *>(&eh), sizeof eh));
        for (int i = 0; i < eh.e_phnum; ++i) {
            Elf64_Phdr ph{};
            in.seekg(static_cast<std::streamoff>(eh.e_phoff + i * sizeof ph));
            REQUIRE(in.read(reinterpret_cast<char *>(&ph), sizeof ph));
            if (ph.p_type == PT_LOAD && ph.p_filesz > 0) cut = ph.p_offset + 1;
        }
    }
    REQUIRE(cut > 1);
    fs::resize_file(file, cut);
    auto e = refusal(file.string());
    CHECK(e.stage() == kvblob::LoadStage::open);
    CHECK(e.rule() == "R-LOAD-1");
    CHECK_MESSAGE(std::string(e.what()).find("ends past the end of the file") != std::string::npos, e.what());
    CHECK(e.dlerror_text().empty());  // the dynamic linker never saw it
}
