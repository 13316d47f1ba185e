// Parses the key=value options given to open against a driver's own option
// table (R-OPN-1: an unknown option or a value that does not parse is
// refused with a message naming it; nothing is ignored silently).
#pragma once

#include <kvblob/kvblob.h>

#include <cstdint>
#include <map>
#include <span>
#include <stdexcept>
#include <string>

namespace kvblob::support {

class OptionError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A driver's option table, as its plugin declares it.
using OptionTable = std::span<const kvblob_option_desc_t>;

class ParsedOptions {
public:
    // Throws OptionError naming the option.
    ParsedOptions(const kvblob_option_desc_t *table, uint64_t table_size, const kvblob_open_args_t &args);
    ParsedOptions(OptionTable table, const kvblob_open_args_t &args) : ParsedOptions(table.data(), table.size(), args)
    {
    }

    const std::string &text(const std::string &name) const;
    int64_t integer(const std::string &name) const;
    uint64_t bytes(const std::string &name) const;
    bool flag(const std::string &name) const;

private:
    std::map<std::string, std::string> values_;
};

// Parsers shared with tests: "64K" -> 65536; "true"/"1"/"yes".
uint64_t parse_bytes(const std::string &text);
int64_t parse_integer(const std::string &text);
bool parse_bool(const std::string &text);

}  // namespace kvblob::support
