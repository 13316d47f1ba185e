// Driver option parsing: lines "key=value" against a table like a driver's;
// every set is accepted, or refused with an OptionError naming the option
// (R-OPN-1); nothing else escapes.
#include <cstdint>
#include <string>
#include <vector>

#include "kvblob/support/options.hpp"

namespace {
const kvblob_option_desc_t table[] = {
    {sizeof(kvblob_option_desc_t), KVBLOB_OPTION_STRING, "store", "default", nullptr, ""},
    {sizeof(kvblob_option_desc_t), KVBLOB_OPTION_BYTES, "capacity", "0", nullptr, ""},
    {sizeof(kvblob_option_desc_t), KVBLOB_OPTION_INT, "workers", "2", nullptr, ""},
    {sizeof(kvblob_option_desc_t), KVBLOB_OPTION_BOOL, "hints", "true", nullptr, ""},
    {sizeof(kvblob_option_desc_t), KVBLOB_OPTION_CHOICE, "mode", "background", "blocking|background", ""},
    {sizeof(kvblob_option_desc_t), KVBLOB_OPTION_MILLISECONDS, "timeout", "100", nullptr, ""},
};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    std::vector<std::string> keys, values;
    std::string line;
    for (size_t i = 0; i <= size; ++i) {
        if (i == size || data[i] == '\n') {
            const auto eq = line.find('=');
            keys.push_back(line.substr(0, eq));
            values.push_back(eq == std::string::npos ? std::string() : line.substr(eq + 1));
            line.clear();
        } else {
            line += static_cast<char>(data[i]);
        }
    }
    std::vector<kvblob_option_t> options;
    for (size_t i = 0; i < keys.size(); ++i)
        options.push_back({sizeof(kvblob_option_t), 0, keys[i].c_str(), values[i].c_str()});
    kvblob_open_args_t args{sizeof args, KVBLOB_ABI_VERSION, options.data(), options.size(), nullptr};
    try {
        kvblob::support::ParsedOptions parsed(table, sizeof table / sizeof table[0], args);
        (void)parsed.bytes("capacity");
        (void)parsed.integer("workers");
        (void)parsed.flag("hints");
    } catch (const kvblob::support::OptionError &e) {
        if (std::string(e.what()).find("option") == std::string::npos) __builtin_trap();  // names the option
    }
    return 0;
}
