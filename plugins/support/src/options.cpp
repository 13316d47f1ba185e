#include "kvblob/support/options.hpp"


#include <cerrno>
#include <cstdlib>
#include <limits>

namespace kvblob::support {

uint64_t parse_bytes(const std::string &text)
{
    if (text.empty() || text[0] == '-') throw OptionError("'" + text + "' is not a byte count");
    errno = 0;
    char *end = nullptr;
    unsigned long long v = std::strtoull(text.c_str(), &end, 10);
    if (end == text.c_str() || errno == ERANGE) throw OptionError("'" + text + "' is not a byte count");
    std::string suffix(end);
    uint64_t mult = 1;
    if (suffix == "" || suffix == "B") mult = 1;
    else if (suffix == "K" || suffix == "KiB") mult = 1ull << 10;
    else if (suffix == "M" || suffix == "MiB") mult = 1ull << 20;
    else if (suffix == "G" || suffix == "GiB") mult = 1ull << 30;
    else if (suffix == "T" || suffix == "TiB") mult = 1ull << 40;
    else throw OptionError("'" + text + "' has an unknown size suffix (use K, M, G, T)");
    if (v > std::numeric_limits<uint64_t>::max() / mult) throw OptionError("'" + text + "' is too large");
    return v * mult;
}

int64_t parse_integer(const std::string &text)
{
    errno = 0;
    char *end = nullptr;
    long long v = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno == ERANGE) throw OptionError("'" + text + "' is not an integer");
    return v;
}

bool parse_bool(const std::string &text)
{
    if (text == "1" || text == "true" || text == "yes" || text == "on") return true;
    if (text == "0" || text == "false" || text == "no" || text == "off") return false;
    throw OptionError("'" + text + "' is not a boolean (use true or false)");
}

namespace {

bool choice_allowed(const char *choices, const std::string &value)
{
    std::string all = choices ? choices : "";
    size_t start = 0;
    while (start <= all.size()) {
        size_t end = all.find('|', start);
        if (end == std::string::npos) end = all.size();
        if (all.compare(start, end - start, value) == 0 && end - start == value.size()) return true;
        start = end + 1;
    }
    return false;
}

void validate(const kvblob_option_desc_t &d, const std::string &value)
{
    const std::string name = d.name;
    try {
        switch (d.type) {
        case KVBLOB_OPTION_INT:
        case KVBLOB_OPTION_MILLISECONDS: parse_integer(value); break;
        case KVBLOB_OPTION_BOOL: parse_bool(value); break;
        case KVBLOB_OPTION_BYTES: parse_bytes(value); break;
        case KVBLOB_OPTION_CHOICE:
            if (!choice_allowed(d.choices, value))
                throw OptionError("'" + value + "' is not one of " + d.choices);
            break;
        default: break;
        }
    } catch (const OptionError &e) {
        throw OptionError("option '" + name + "': " + e.what());
    }
}

}  // namespace

ParsedOptions::ParsedOptions(const kvblob_option_desc_t *table, uint64_t n, const kvblob_open_args_t &args)
{
    std::map<std::string, const kvblob_option_desc_t *> known;
    for (uint64_t i = 0; i < n; ++i) known[table[i].name] = &table[i];
    for (uint64_t i = 0; i < args.option_count; ++i) {
        const auto &o = args.options[i];
        if (!o.key || !o.value) throw OptionError("option #" + std::to_string(i) + " has a NULL key or value");
        auto it = known.find(o.key);
        if (it == known.end()) {
            throw OptionError(std::string("unknown option '") + o.key + "'");
        }
        validate(*it->second, o.value);
        values_[o.key] = o.value;
    }
    for (const auto &[name, desc] : known) {
        if (values_.count(name)) continue;
        if (!desc->default_value) throw OptionError("option '" + name + "' is required");
        values_[name] = desc->default_value;
    }
}

const std::string &ParsedOptions::text(const std::string &name) const { return values_.at(name); }
int64_t ParsedOptions::integer(const std::string &name) const { return parse_integer(text(name)); }
uint64_t ParsedOptions::bytes(const std::string &name) const { return parse_bytes(text(name)); }
bool ParsedOptions::flag(const std::string &name) const { return parse_bool(text(name)); }

}  // namespace kvblob::support
