// A config whose driver refuses one of its options is reported at the
// option's line (R-OPN-1), and the report prints no secret: not a secret
// option's value, not a password in a URL's userinfo, in whatever form the
// file writes it.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "kvblob/host/config.hpp"

namespace fs = std::filesystem;

namespace {

// A config file in a scratch folder, removed with the object.
struct ConfigFile {
    explicit ConfigFile(const std::string &text)
    {
        static int n = 0;
        dir = fs::temp_directory_path() / ("kvblob-config-secrets-" + std::to_string(getpid()) + "-" + std::to_string(n++));
        fs::create_directories(dir);
        path = dir / "engine.toml";
        std::ofstream(path) << text;
    }
    ~ConfigFile() { fs::remove_all(dir); }
    fs::path dir, path;
};

// What opening the driver the file names says, refused.
kvblob::ConfigError refused(const std::string &text)
{
    ConfigFile f(text);
    const auto config = kvblob::read_driver_config(f.path);
    const auto plugin = kvblob::load_configured_plugin(config);
    try {
        kvblob::open_configured_driver(plugin, config);
    } catch (const kvblob::ConfigError &e) {
        return e;
    }
    FAIL("opened:\n" << text);
    throw;
}

bool has(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("a config option the driver refuses is reported without the secret it holds")
{
    // memory takes neither option: it refuses each by name. password is a
    // secret by its name; url by the password in its userinfo (written
    // plain, and percent-encoded).
    for (const auto &[line, secrets] : std::vector<std::pair<std::string, std::vector<std::string>>>{
             {"password = \"hunter2-toml\"", {"hunter2-toml"}},
             {"api_token = 'hunter2-literal'", {"hunter2-literal"}},
             {"url = \"redis://app:hunter2-url@localhost:1/0\"", {"hunter2-url"}},
             {"url = \"redis://app:p%40ss-hunter2@localhost:1\"", {"p%40ss-hunter2", "p@ss-hunter2"}},
             {"dsn = \"host=db password=hunter2-dsn\"", {"hunter2-dsn"}},
             // Misspellings of the memory driver's secret option token, which
             // no part of looks_secret's words covers.
             {"tokne = \"hunter2-tokne\"", {"hunter2-tokne"}},
             {"tken = \"hunter2-tken\"", {"hunter2-tken"}},
         }) {
        const auto e = refused("[driver]\nname = \"memory\"\n[driver.options]\n" + line + "\n");
        const std::string what = e.what();
        CHECK_MESSAGE(e.line() == 4, what);
        const std::string name = line.substr(0, line.find(' '));
        CHECK_MESSAGE(has(what, "option '" + name + "' = <redacted> refused by driver memory"), what);
        for (const auto &secret : secrets) CHECK_MESSAGE(!has(what, secret), what);
    }
    // A value that is no secret is still shown, so the reader sees the mistake.
    const std::string plain = refused("[driver]\nname = \"memory\"\n[driver.options]\nworkers = \"many\"\n").what();
    CHECK_MESSAGE(has(plain, "option 'workers' = \"many\" refused"), plain);
}

TEST_CASE("a Redis url whose password differs from the password option is refused naming neither password")
{
    // The driver refuses url (R-OPN-1) without a server: it never connects.
    const auto e = refused("[driver]\nname = \"redis\"\n[driver.options]\n"
                           "url = \"redis://app:hunter2-in-url@localhost:1\"\npassword = \"hunter2-option\"\n");
    const std::string what = e.what();
    CHECK_MESSAGE(e.line() == 4, what);
    CHECK_MESSAGE(has(what, "option 'url' = <redacted> refused by driver redis"), what);
    CHECK_MESSAGE(!has(what, "hunter2-in-url"), what);
    CHECK_MESSAGE(!has(what, "hunter2-option"), what);
}
