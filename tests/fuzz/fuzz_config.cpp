// The config parser: any file is read, or refused with a ConfigError that
// names a line and column within the file (or 0 for the file as a whole).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "kvblob/host/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const std::string path = [] {
        static std::string p = "/tmp/kvblob-fuzz-config-" + std::to_string(getpid()) + ".toml";
        std::atexit([] { std::remove(p.c_str()); });  // libFuzzer ends with exit()
        return p;
    }();
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char *>(data), size);
    try {
        const auto config = kvblob::read_driver_config(path);
        if (config.driver.empty()) __builtin_trap();
    } catch (const kvblob::ConfigError &e) {
        size_t lines = 1;
        for (size_t i = 0; i < size; ++i) lines += data[i] == '\n';
        if (e.line() > lines + 1) __builtin_trap();
    }
    return 0;
}
