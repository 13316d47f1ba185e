// The config pre-scan and the TOML parser together: whatever text the
// pre-scan lets through, toml++ reads without nesting deeper than the scan's
// bounds allow. A string form the scan ends elsewhere than the parser does
// ("""q"""" once) hides what follows it from the scan, and a key of
// thousands of parts behind it reaches the parser (120,000 overflowed its
// stack): caught here by the depth of what was parsed, long before a stack
// overflows. The seeds hold each string form with such a key behind it.
#include <toml++/toml.h>

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "config_text.hpp"
#include "kvblob/host/config.hpp"

namespace {

// How deep the deepest node under root stands, walked without recursion.
size_t depth_of(const toml::node &root)
{
    std::vector<std::pair<const toml::node *, size_t>> todo{{&root, 1}};
    size_t deepest = 0;
    while (!todo.empty()) {
        const auto [node, depth] = todo.back();
        todo.pop_back();
        deepest = std::max(deepest, depth);
        if (const auto *table = node->as_table())
            for (const auto &[key, value] : *table) todo.emplace_back(&value, depth + 1);
        else if (const auto *array = node->as_array())
            for (const auto &value : *array) todo.emplace_back(&value, depth + 1);
    }
    return deepest;
}

// The deepest text the scan lets through: a header of max_key_parts parts,
// then per bracket or brace (max_nesting of them) a key of as many parts and
// the level the bracket opens, then the last key.
constexpr size_t deepest_allowed = (kvblob::max_nesting + 2) * (kvblob::max_key_parts + 1);

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const std::string_view text(reinterpret_cast<const char *>(data), size);
    try {
        kvblob::prescan_config("fuzz.toml", text);
    } catch (const kvblob::ConfigError &) {
        return 0;
    }
    toml::table root;
    try {
        root = toml::parse(text);
    } catch (const toml::parse_error &) {
        return 0;
    }
    if (depth_of(root) > deepest_allowed) __builtin_trap();  // the scan was walked around
    return 0;
}
