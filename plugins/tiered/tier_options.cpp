#include "tier_options.hpp"

#include <kvblob/support/options.hpp>

#include <map>

namespace kvblob::tiered {

using support::OptionError;

namespace {

constexpr const char prefix[] = "tier.";
constexpr size_t prefix_len = sizeof prefix - 1;
constexpr size_t most_tiers = 16;
// A tier may itself be a tiered driver, whose keys then read
// tier.N.tier.M.<option>. Each level loads and opens the levels below it and
// asks their drivers which options are secret, so the work grows with the
// cube of the depth: 200 levels took minutes to open. Four levels cover any
// stack of write modes an engine composes.
constexpr size_t most_nesting = 4;

// How many tier.N. parts a key starts with.
size_t nesting_of(const std::string &key)
{
    size_t depth = 0, at = 0;
    while (key.compare(at, prefix_len, prefix) == 0) {
        size_t end = at + prefix_len;
        while (end < key.size() && key[end] >= '0' && key[end] <= '9') ++end;
        if (end == at + prefix_len || end >= key.size() || key[end] != '.') break;
        ++depth;
        at = end + 1;
    }
    return depth;
}

}  // namespace

SplitOptions split_tier_options(const kvblob_open_args_t &args)
{
    SplitOptions out;
    std::map<size_t, TierSpec> tiers;
    std::map<size_t, bool> has_driver;
    for (uint64_t i = 0; i < args.option_count; ++i) {
        const kvblob_option_t &o = args.options[i];
        if (!o.key) throw OptionError("an option without a key");
        const std::string key = o.key;
        if (key.compare(0, prefix_len, prefix) != 0) {
            out.own.push_back(o);
            continue;
        }
        const size_t dot = key.find('.', prefix_len);
        const std::string index_text = key.substr(prefix_len, dot == std::string::npos ? std::string::npos : dot - prefix_len);
        if (dot == std::string::npos || index_text.empty() || index_text.size() > 2 ||
            index_text.find_first_not_of("0123456789") != std::string::npos ||
            (index_text.size() > 1 && index_text[0] == '0'))
            throw OptionError("option '" + key + "': a tier option is written tier.N.<option>, N a tier index (0 the top)");
        if (nesting_of(key) > most_nesting)
            throw OptionError("option '" + key + "': tiers of tiers nest at most " + std::to_string(most_nesting) +
                              " deep (tier.N. given " + std::to_string(nesting_of(key)) + " times)");
        const size_t index = std::stoul(index_text);
        if (index >= most_tiers)
            throw OptionError("option '" + key + "': at most " + std::to_string(most_tiers) + " tiers");
        const std::string name = key.substr(dot + 1);
        if (name.empty()) throw OptionError("option '" + key + "' names no option of tier " + index_text);
        const std::string value = o.value ? o.value : "";
        TierSpec &tier = tiers[index];
        if (name == "driver") {
            if (has_driver[index]) throw OptionError("option '" + key + "' is given twice");
            if (value.empty()) throw OptionError("option '" + key + "' is empty: name the tier's driver");
            has_driver[index] = true;
            tier.driver = value;
        } else {
            tier.options.emplace_back(name, value);
        }
    }
    size_t expected = 0;
    for (auto &[index, tier] : tiers) {
        if (index != expected)
            throw OptionError("option 'tier." + std::to_string(expected) + ".driver' is missing: tiers are numbered from 0 without gaps, and tier " +
                              std::to_string(index) + " is given");
        if (!has_driver[index])
            throw OptionError("option 'tier." + std::to_string(index) + ".driver' is missing: tier " + std::to_string(index) +
                              " has options but no driver");
        out.tiers.push_back(std::move(tier));
        ++expected;
    }
    if (out.tiers.size() < 2)
        throw OptionError("option 'tier." + std::to_string(out.tiers.size()) +
                          ".driver' is missing: a tiered store needs at least two tiers (tier.0.driver, tier.1.driver)");
    return out;
}

}  // namespace kvblob::tiered
