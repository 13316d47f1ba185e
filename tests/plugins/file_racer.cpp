// One of several writers racing over the same keys on the file driver, in
// step with the test that started it: the test writes one byte to this
// process's stdin to start each round, so every racer puts the round's key
// at the same moment, then reads the key back at once (a reader while the
// others may still be writing).
//
//   kvblob_file_racer ROOT PREFIX ROUNDS SIZE SEED [OPTION=VALUE ...]
//
// Prints "ready" once the driver is open, then per round one line:
//   ROUND PUT_RESULT GET_RESULT CRC PUT_MESSAGE | GET_MESSAGE
// CRC is the CRC32C (hex) of the bytes a READY get delivered, "-" otherwise;
// the put's bytes are the pattern of SEED. Exit codes: 0 every round ran,
// 1 stdin closed early or an operation never finished, 2 bad arguments,
// 3 the driver could not be opened.
#include <kvblob/support/crc32c.hpp>

#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "kvblob/host/batch.hpp"
#include "kvblob/tools/fill_pattern.hpp"
#include "kvblob/host/plugin.hpp"

using kvblob::Batch;
using kvblob::fill_pattern;
using kvblob::make_span;

namespace {

kvblob::RowStatus one(kvblob::Driver &driver, kvblob::OpKind kind, const std::string &key, kvblob_span_t span,
                      std::string &message)
{
    Batch batch;
    batch.row(key, {span});
    auto op = driver.submit(kind, batch.get());
    if (!op.wait(std::chrono::seconds(120))) throw std::runtime_error("operation on " + key + " never finished");
    message = op.message(0);
    return op.results().at(0);
}

}  // namespace

int main(int argc, char **argv)
{
    if (argc < 6) {
        std::fprintf(stderr, "usage: %s ROOT PREFIX ROUNDS SIZE SEED [OPTION=VALUE ...]\n", argv[0]);
        return 2;
    }
    const std::string root = argv[1], prefix = argv[2];
    uint64_t rounds = 0, size = 0, seed = 0;
    try {
        rounds = std::stoull(argv[3]);
        size = std::stoull(argv[4]);
        seed = std::stoull(argv[5]);
    } catch (const std::exception &) {
        std::fprintf(stderr, "ROUNDS, SIZE and SEED must be numbers\n");
        return 2;
    }
    kvblob::Options options{{"root", root}};
    std::vector<std::string> extra(argv + 6, argv + argc);
    std::optional<kvblob::Plugin> plugin;
    std::optional<kvblob::Driver> driver;
    try {
        for (const auto &kv : kvblob::parse_option_assignments(extra)) options.push_back(kv);
        plugin.emplace(kvblob::Plugin::load("file"));
        driver.emplace(plugin->open(options));
    } catch (const std::exception &e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 3;
    }
    try {
        std::vector<uint8_t> mine(size), got(size);
        fill_pattern(mine.data(), size, seed);
        kvblob_region_desc_t put_desc{sizeof put_desc, KVBLOB_MEMORY_HOST, mine.data(), size, 0, 0};
        kvblob_region_desc_t get_desc{sizeof get_desc, KVBLOB_MEMORY_HOST, got.data(), size, 0, 0};
        auto put_region = driver->register_region(put_desc);
        auto get_region = driver->register_region(get_desc);
        std::printf("ready\n");
        std::fflush(stdout);
        for (uint64_t r = 0; r < rounds; ++r) {
            if (std::fgetc(stdin) == EOF) return 1;
            const std::string key = prefix + std::to_string(r);
            std::string put_message, get_message;
            const auto put =
                one(*driver, kvblob::OpKind::put, key, make_span(put_region.handle(), 0, size), put_message);
            std::memset(got.data(), 0, size);
            const auto get =
                one(*driver, kvblob::OpKind::get, key, make_span(get_region.handle(), 0, size), get_message);
            char crc[16] = "-";
            if (get.result == KVBLOB_ROW_READY)
                std::snprintf(crc, sizeof crc, "%08x", kvblob::support::crc32c(0, got.data(), size));
            std::printf("%llu %s %s %s %s | %s\n", static_cast<unsigned long long>(r),
                        kvblob_row_result_name(put.result), kvblob_row_result_name(get.result), crc,
                        put_message.c_str(), get_message.c_str());
            std::fflush(stdout);
        }
        return 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
    }
}
