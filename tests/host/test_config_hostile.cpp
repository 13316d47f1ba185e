// Config files written to hurt (issue 30): refused with a clear error naming
// the file, the line and the rule broken, before the TOML parser can be made
// to recurse, and never echoed raw to a terminal.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "kvblob/host/config.hpp"
#include "support/in_child.hpp"

namespace fs = std::filesystem;

namespace {

struct Scratch {
    Scratch()
    {
        static int n = 0;
        dir = fs::temp_directory_path() / ("kvblob-hostile-" + std::to_string(getpid()) + "-" + std::to_string(n++));
        fs::create_directories(dir);
    }
    ~Scratch() { fs::remove_all(dir); }
    fs::path write(const std::string &text) const
    {
        const fs::path p = dir / "engine.toml";
        std::ofstream(p, std::ios::binary) << text;
        return p;
    }
    fs::path dir;
};

std::string refusal(const fs::path &file)
{
    try {
        kvblob::read_driver_config(file);
    } catch (const kvblob::ConfigError &e) {
        return e.what();
    }
    FAIL("accepted " << file);
    return {};
}

bool has(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

std::string dotted_key(size_t parts)
{
    std::string key = "a";
    for (size_t i = 1; i < parts; ++i) key += ".a";
    return key;
}

}  // namespace

TEST_CASE("a dotted key of 50,000 parts is refused before the parser sees it, at its line")
{
    Scratch s;
    // It once overflowed the stack inside toml++ (exit 139).
    for (const auto &text : {"[driver]\nname = \"memory\"\n[driver.options]\n" + dotted_key(50000) + " = 1\n",
                             "[driver]\nname = \"memory\"\n[" + dotted_key(50000) + "]\n"}) {
        const std::string e = refusal(s.write(text));
        CHECK(has(e, (s.dir / "engine.toml").string() + ":"));
        CHECK(has(e, "dotted parts"));
    }
    const std::string e = refusal(s.write("[driver]\nname = \"memory\"\n[driver.options]\n" + dotted_key(50000) + " = 1\n"));
    CHECK(has(e, "engine.toml:4:"));
    // Nesting too: arrays inside arrays.
    const std::string nested = refusal(s.write("[driver]\nname = \"memory\"\nsearch_path = " + std::string(50000, '[') + "\n"));
    CHECK(has(nested, "engine.toml:3:"));
    CHECK(has(nested, "nested"));
}

TEST_CASE("dots and brackets inside strings and comments count for nothing")
{
    Scratch s;
    const std::string many_dots(5000, '.');
    auto c = kvblob::read_driver_config(s.write("[driver] # " + std::string(100, '[') + many_dots + "\nname = \"memory\"\n"
                                                "[driver.options]\nstore = \"" + many_dots + "\"\nprefix = '" +
                                                std::string(100, '[') + "'\n\"a.b.c\" = 1\n"));
    REQUIRE(c.options.size() == 3);
    CHECK(c.options[0].second == many_dots);
    CHECK(c.options[2].first == "a.b.c");
}

TEST_CASE("a NUL in path, name, search_path or an option is refused, not cut short")
{
    Scratch s;
    fs::copy_file(KVBLOB_PLUGIN_DIR "/libkvblob_memory.so", s.dir / "a.so");
    // The path up to the NUL names a plugin that loads: it must not.
    for (const std::string &line : {std::string("path = \"a.so\\u0000.txt\""), std::string("name = \"memory\\u0000x\"")}) {
        const std::string e = refusal(s.write("[driver]\n" + line + "\n"));
        CHECK(has(e, "engine.toml:2:"));
        CHECK(has(e, "NUL"));
    }
    CHECK(has(refusal(s.write("[driver]\nname = \"memory\"\nsearch_path = [\"x\\u0000y\"]\n")), "NUL"));
    CHECK(has(refusal(s.write("[driver]\nname = \"memory\"\n[driver.options]\nstore = \"x\\u0000y\"\n")), "NUL"));
    CHECK(has(refusal(s.write("[driver]\nname = \"memory\"\n[driver.options]\n\"st\\u0000ore\" = \"x\"\n")), "NUL"));
}

TEST_CASE("escape sequences from the file reach the message escaped")
{
    Scratch s;
    const std::string e = refusal(s.write("[driver]\nname = \"memory\"\n\"\\u001b]0;owned\\u0007\\u009b2J\" = 1\n"));
    CHECK(has(e, "unknown key"));
    for (char c = 0; c < 0x20; ++c) CHECK_MESSAGE(e.find(c) == std::string::npos, "control character " << int(c));
    CHECK(e.find('\x7f') == std::string::npos);
    CHECK(!has(e, "\xc2\x9b"));
    CHECK(has(e, "\\e]0;owned\\x07\\u009b2J"));
    // A plugin that is not there, named in the file: the loader's refusal too.
    std::string load;
    try {
        kvblob::load_configured_plugin(kvblob::read_driver_config(s.write("[driver]\nname = \"no\\u001b[31mne\"\n")));
    } catch (const kvblob::LoadError &err) {
        load = err.what();
    }
    CHECK(has(load, "no\\e[31mne"));
    CHECK(load.find('\x1b') == std::string::npos);
}

TEST_CASE("a folder, a FIFO or a device given as the config file is called what it is")
{
    Scratch s;
    CHECK(has(refusal(s.dir), "is a folder"));
    const fs::path fifo = s.dir / "fifo.toml";
    REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
    CHECK(has(refusal(fifo), "is a FIFO"));  // and returns: no writer is waited for
    CHECK(has(refusal("/dev/null"), "is a character device"));
    const std::string missing = refusal(s.dir / "missing.toml");
    CHECK(has(missing, "no such file"));
}

namespace {

// How reading file ended, in a child process (a parser that overflows its
// stack kills the child, not the suite): "refused: " and the message, or
// "accepted", or "killed by signal N".
std::string read_in_child(const fs::path &file)
{
    const ChildAnswer answer = in_child([&] {
        std::string said = "accepted";
        try {
            kvblob::read_driver_config(file);
        } catch (const kvblob::ConfigError &e) {
            said = std::string("refused: ") + e.what();
        } catch (const std::exception &e) {
            said = std::string("threw: ") + e.what();
        }
        return said;
    });
    if (WIFSIGNALED(answer.status)) return "killed by signal " + std::to_string(WTERMSIG(answer.status));
    return answer.text;
}

}  // namespace

TEST_CASE("every TOML string form ends where the parser ends it, so no string hides a deep key")
{
    Scratch s;
    // A key of 120,000 parts (240 KB) after a string on the same line of an
    // inline table. """q"""" is the string q" (up to two quotes may end a
    // multi-line string before its closing three): the pre-scan once ended
    // it at the first three, took the fourth quote for a string running to
    // the line's end, and let the key reach toml++, which overflowed its
    // stack (SIGSEGV).
    const std::string key = dotted_key(120000);
    for (const std::string string : {R"("""q"""")", R"("""q""""")", R"('''q'''')", R"('''q''''')", R"("q\"")",
                                     R"("""q\"""")", R"("""a\\""")", R"("""x""y""")", R"('''x''y''')", R"('a\')",
                                     R"("")", R"('')", R"("""""""")", "\"\"\"\nq\n\"\"\"\""}) {
        const std::string text = "[driver]\nname = \"memory\"\n[driver.options]\nx = { b = " + string + ", " + key + " = 1 }\n";
        const std::string said = read_in_child(s.write(text));
        CAPTURE(string);
        CHECK_MESSAGE(has(said, "refused: "), said.substr(0, 300));
        CHECK_MESSAGE(has(said, "dotted parts"), said.substr(0, 300));
    }
    // The same strings with a short key are read, each as the parser reads it.
    const auto c = kvblob::read_driver_config(
        s.write("[driver]\nname = \"memory\"\n[driver.options]\n"
                "a = \"\"\"q\"\"\"\"\nb = '''q'''''\nc = \"q\\\"\"\nd = \"\"\"x\"\"y\"\"\"\ne = 1.5\n"));
    REQUIRE(c.options.size() == 5);
    CHECK(c.options[0].second == "q\"");
    CHECK(c.options[1].second == "q''");
    CHECK(c.options[2].second == "q\"");
    CHECK(c.options[3].second == "x\"\"y");
}
