// What kvblob-bench measures: points (operation, row size, rows per batch,
// threads), each run until its budget of time or bytes is spent.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace kvblob::bench {

enum class BenchOp { put, get, probe };
const char *to_string(BenchOp op);

struct Point {
    BenchOp op = BenchOp::put;
    uint64_t size = 0;   // bytes per row
    uint64_t batch = 1;  // rows per operation
    unsigned threads = 1;
    uint64_t bytes_per_op() const { return op == BenchOp::probe ? 0 : size * batch; }
};

struct Budget {
    std::chrono::duration<double> duration{0.5};
    uint64_t bytes = 0;  // 0: no byte budget
};

// "4K,64K,1M" -> sizes; "put,get" -> ops; "1,32" -> counts, each item
// parsed as every tool parses one (tools/common/include/kvblob/cli/quantities.hpp)
// and refused above limit. Throw std::invalid_argument naming the bad item.
std::vector<uint64_t> parse_sizes(const std::string &list, uint64_t limit);
std::vector<uint64_t> parse_counts(const std::string &list, uint64_t limit);
std::vector<BenchOp> parse_ops(const std::string &list);
// 1048576 -> "1M", 4096 -> "4K".
std::string size_label(uint64_t bytes);

}  // namespace kvblob::bench
