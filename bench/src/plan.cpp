#include "plan.hpp"

#include <sstream>
#include <stdexcept>

#include "kvblob/cli/quantities.hpp"

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

std::vector<uint64_t> parse_sizes(const std::string &list, uint64_t limit)
{
    std::vector<uint64_t> out;
    for (const auto &item : split(list)) out.push_back(cli::parse_size(item, limit));
    return out;
}

std::vector<uint64_t> parse_counts(const std::string &list, uint64_t limit)
{
    std::vector<uint64_t> out;
    for (const auto &item : split(list)) out.push_back(cli::parse_count(item, limit));
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
