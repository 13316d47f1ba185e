// A driver config file for the config tests: written to a scratch folder
// and removed with the object, and the error a bad one must give.
#pragma once

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "kvblob/host/config.hpp"

namespace config_test {

struct ConfigFile {
    explicit ConfigFile(const std::string &text)
    {
        static int n = 0;
        dir = std::filesystem::temp_directory_path() /
              ("kvblob-config-" + std::to_string(getpid()) + "-" + std::to_string(n++));
        std::filesystem::create_directories(dir);
        path = dir / "engine.toml";
        std::ofstream(path) << text;
    }
    ~ConfigFile() { std::filesystem::remove_all(dir); }
    ConfigFile(const ConfigFile &) = delete;
    ConfigFile &operator=(const ConfigFile &) = delete;
    std::filesystem::path dir, path;
};

// The error reading text gives; it must name the file.
inline kvblob::ConfigError config_error(const std::string &text)
{
    ConfigFile f(text);
    try {
        kvblob::read_driver_config(f.path);
    } catch (const kvblob::ConfigError &e) {
        CHECK_MESSAGE(std::string(e.what()).find(f.path.string()) != std::string::npos, "names the file");
        return e;
    }
    FAIL("accepted:\n" << text);
    throw;
}

}  // namespace config_test
