#include "config_nodes.hpp"

#include <charconv>
#include <cmath>

#include "kvblob/host/config.hpp"

namespace kvblob::config_nodes {

namespace fs = std::filesystem;

void fail(const fs::path &file, const toml::source_region &where, const std::string &what)
{
    throw ConfigError(file, where.begin.line, where.begin.column, what);
}

void only_keys(const fs::path &file, const toml::table &table, const std::set<std::string> &allowed,
               const std::string &where)
{
    for (const auto &[key, node] : table)
        if (!allowed.count(std::string(key.str())))
            fail(file, key.source(), "unknown key '" + std::string(key.str()) + "' in " + where);
}

const std::string &whole_text(const fs::path &file, const toml::source_region &where, const std::string &text,
                              const std::string &what)
{
    if (text.find('\0') != std::string::npos)
        fail(file, where, what + " holds a NUL character (\\u0000), which would cut it short: refused");
    return text;
}

std::string scalar_text(const fs::path &file, const std::string &what, const toml::node &node)
{
    if (auto s = node.as_string()) return whole_text(file, node.source(), s->get(), what);
    if (auto i = node.as_integer()) return std::to_string(i->get());
    if (auto b = node.as_boolean()) return b->get() ? "true" : "false";
    // A float reaches the driver as Python's open() gives it: an integral one
    // as an integer (4.0 -> "4"), another in its shortest form (2.5 -> "2.5").
    if (auto f = node.as_floating_point()) {
        const double d = f->get();
        if (!std::isfinite(d)) fail(file, node.source(), what + " is not a finite number");
        if (d == std::trunc(d) && std::fabs(d) < 9.007199254740992e15) return std::to_string(static_cast<long long>(d));
        char buf[64];
        const auto end = std::to_chars(buf, buf + sizeof buf, d).ptr;
        return std::string(buf, end);
    }
    // A dotted key written bare (tier.0.driver = "memory") is a table in
    // TOML: say how to write the one key meant.
    if (node.is_table())
        fail(file, node.source(), what + " is a table, not a value: a key with dots in it is quoted in TOML "
                                          "(\"tier.0.driver\" = \"memory\"; a tiered driver's tiers may be [[driver.tiers]] tables)");
    fail(file, node.source(), what + " must be a string, a number or a boolean");
}

}  // namespace kvblob::config_nodes
