#include "plan.hpp"

#include <sstream>
#include <stdexcept>

namespace kvblob::bench {

namespace {

std::vector<std::string> split(const std::string &list)
{
    std::vector<std::string> out;
    std::stringstream in(list);
    std::string item;
    while (std::getline(in, item, ','))
        if (!item.empty()) out.push_back(item);
    if (out.empty()) throw std::invalid_argument("empty list '" + list + "'");
    return out;
}

}  // namespace

const char *to_string(BenchOp op)
{
    switch (op) {
    case BenchOp::put: return "put";
    case BenchOp::get: return "get";
    case BenchOp::probe: return "probe";
    }
    return "?";
}

// item as a positive number; with suffixes, K, M and G (or KiB, MiB, GiB)
// multiply it. what names the kind of number in the error.
uint64_t parse_positive(const std::string &item, bool suffixes, const char *what)
{
    size_t used = 0;
    uint64_t v = 0;
    try {
        v = std::stoull(item, &used);
    } catch (const std::exception &) {
        used = 0;
    }
    const std::string suffix = item.substr(used);
    int shift = suffix.empty() ? 0 : -1;
    if (suffixes && suffix == "B") shift = 0;
    if (suffixes && (suffix == "K" || suffix == "KiB")) shift = 10;
    if (suffixes && (suffix == "M" || suffix == "MiB")) shift = 20;
    if (suffixes && (suffix == "G" || suffix == "GiB")) shift = 30;
    if (used == 0 || v == 0 || shift < 0) throw std::invalid_argument("'" + item + "' is not " + what);
    return v << shift;
}

std::vector<uint64_t> parse_sizes(const std::string &list)
{
    std::vector<uint64_t> out;
    for (const auto &item : split(list)) out.push_back(parse_positive(item, true, "a size (use 4K, 1M, 16M)"));
    return out;
}

std::vector<uint64_t> parse_counts(const std::string &list)
{
    std::vector<uint64_t> out;
    for (const auto &item : split(list)) out.push_back(parse_positive(item, false, "a positive count"));
    return out;
}

std::vector<BenchOp> parse_ops(const std::string &list)
{
    std::vector<BenchOp> out;
    for (const auto &item : split(list)) {
        if (item == "put") out.push_back(BenchOp::put);
        else if (item == "get") out.push_back(BenchOp::get);
        else if (item == "probe") out.push_back(BenchOp::probe);
        else throw std::invalid_argument("'" + item + "' is not an operation (put, get, probe)");
    }
    return out;
}

std::string size_label(uint64_t bytes)
{
    if (bytes >= (1ull << 30) && bytes % (1ull << 30) == 0) return std::to_string(bytes >> 30) + "G";
    if (bytes >= (1ull << 20) && bytes % (1ull << 20) == 0) return std::to_string(bytes >> 20) + "M";
    if (bytes >= (1ull << 10) && bytes % (1ull << 10) == 0) return std::to_string(bytes >> 10) + "K";
    return std::to_string(bytes);
}

}  // namespace kvblob::bench
