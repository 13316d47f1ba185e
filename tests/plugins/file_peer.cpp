// A second engine process for the file driver's tests: it opens the file
// driver on a root and puts or verifies keys PREFIX0..PREFIX{N-1}, each
// filled with the pattern of its index.
//
//   kvblob_file_peer put|verify ROOT PREFIX COUNT SIZE [OPTION=VALUE ...]
//
// Exit codes: 0 done (verify: every key READY with its exact bytes),
// 1 a row that was not, 2 bad arguments, 3 the driver could not be opened.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kvblob/host/batch.hpp"
#include "kvblob/tools/fill_pattern.hpp"
#include "kvblob/host/plugin.hpp"

// batch.hpp's helpers, in namespace kvblob like all of the public API.
using kvblob::Batch;
using kvblob::make_span;
using kvblob::fill_pattern;

int main(int argc, char **argv)
{
    if (argc < 6) {
        std::fprintf(stderr, "usage: %s put|verify ROOT PREFIX COUNT SIZE [OPTION=VALUE ...]\n", argv[0]);
        return 2;
    }
    const std::string mode = argv[1], root = argv[2], prefix = argv[3];
    const uint64_t count = std::stoull(argv[4]), size = std::stoull(argv[5]);
    if (mode != "put" && mode != "verify") return 2;
    kvblob::Options options{{"root", root}};
    std::vector<std::string> extra(argv + 6, argv + argc);
    try {
        for (const auto &kv : kvblob::parse_option_assignments(extra)) options.push_back(kv);
        auto plugin = kvblob::Plugin::load("file");
        auto driver = plugin.open(options);
        std::vector<uint8_t> buf(size), expected(size);
        kvblob_region_desc_t desc{sizeof desc, KVBLOB_MEMORY_HOST, buf.data(), size, 0, 0};
        auto region = driver.register_region(desc);
        int failures = 0;
        for (uint64_t i = 0; i < count; ++i) {
            const std::string key = prefix + std::to_string(i);
            fill_pattern(expected.data(), size, i);
            if (mode == "put") buf = expected;
            else std::memset(buf.data(), 0, size);
            Batch batch;
            batch.row(key, {make_span(region.handle(), 0, size)});
            auto op = driver.submit(mode == "put" ? kvblob::OpKind::put : kvblob::OpKind::get, batch.get());
            if (!op.wait(std::chrono::seconds(60))) return 1;
            const auto row = op.results().at(0);
            const bool ok = row.result == KVBLOB_ROW_READY && (mode == "put" || buf == expected);
            if (!ok) {
                std::fprintf(stderr, "%s %s: %s %s\n", mode.c_str(), key.c_str(), kvblob_row_result_name(row.result),
                             op.message(0).c_str());
                ++failures;
            }
        }
        return failures ? 1 : 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 3;
    }
}
