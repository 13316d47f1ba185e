// kvblob-engine: an engine simulator that shares KV-cache blocks through the
// driver its config file names. One instance publishes the blocks of the
// requests it served; another, serving related requests, asks the store for
// each request's longest stored prefix, fetches it, checks every byte, and
// recomputes only from the resume bound on.
//
// Exit codes: 0 every delivered block verified; 1 a block the store called
// READY held wrong bytes; 2 usage error; 3 the config or its driver was
// refused.
#include <CLI/CLI.hpp>

#include "kvblob/cli/plugin_flags.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>

#include "kvblob/host/block_sequence.hpp"
#include "kvblob/host/config.hpp"
#include "kvblob/host/version.hpp"
#include "workload.hpp"

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto op_timeout = std::chrono::seconds(30);

// One engine: a driver and its paged KV cache, registered once.
struct Instance {
    Instance(const kvblob::Plugin &plugin, const kvblob::Options &options, size_t pages, uint64_t page_bytes)
        : cache(pages * page_bytes), driver(plugin.open(options))
    {
        kvblob_region_desc_t desc{sizeof desc, KVBLOB_MEMORY_HOST, cache.data(), cache.size(), 0, 0};
        region = driver.register_region(desc);
    }
    // Members end in reverse: the registration, then the driver, then the memory.
    std::vector<uint8_t> cache;
    kvblob::Driver driver;
    kvblob::Region region;
};

void progress(const char *what, size_t done, size_t total)
{
    if (!isatty(STDERR_FILENO) || total < 32) return;
    const int width = 30, filled = static_cast<int>(width * done / total);
    std::fprintf(stderr, "\r%-9s [%.*s%*s] %zu/%zu", what, filled, "##############################", width - filled,
                 "", done, total);
    if (done == total) std::fprintf(stderr, "\r%*s\r", width + 40, "");
}

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
double mib(uint64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

}  // namespace

int main(int argc, char **argv)
{
    CLI::App app{"An engine simulator that shares KV-cache blocks through a kvblob driver named by a config file."};
    app.set_version_flag("--version", kvblob::tool_version_banner("kvblob-engine"));
    std::string config_path, salt = "sim-model/fp16";
    size_t requests = 64, block_tokens = 16, system_tokens = 64, turn_tokens = 48;
    uint64_t block_bytes = 64 * 1024, seed = 1;
    app.add_option("-c,--config", config_path, "Driver config file (TOML)")->required();
    app.add_option("--requests", requests, "Requests the fetching instance serves")->check(CLI::PositiveNumber);
    app.add_option("--block-tokens", block_tokens, "Tokens per KV block")->check(CLI::PositiveNumber);
    app.add_option("--block-bytes", block_bytes, "Bytes of KV per block (K, M suffixes)")
        ->transform(CLI::AsSizeValue(false))
        ->check(CLI::PositiveNumber);
    app.add_option("--system-tokens", system_tokens, "Tokens of the system prompt every request shares");
    app.add_option("--turn-tokens", turn_tokens, "Tokens per conversation turn")->check(CLI::PositiveNumber);
    app.add_option("--salt", salt, "What separates this model's blocks from others' (model, dtype)");
    app.add_option("--seed", seed, "Seed of the workload");
    app.footer("Exit codes: 0 verified; 1 wrong bytes reported READY; 2 usage error; 3 config or driver refused.");
    if (auto done = kvblob::cli::parse(app, argc, argv)) return *done;

    try {
        const auto config = kvblob::read_driver_config(config_path);
        const auto plugin = kvblob::load_configured_plugin(config);
        const auto workload = engine::make_requests(requests, system_tokens, turn_tokens, seed);
        const size_t pages = (system_tokens + 3 * turn_tokens) / block_tokens;
        if (pages == 0) {
            std::cerr << "kvblob-engine: a request is shorter than one block\n";
            return 2;
        }
        std::cout << "kvblob-engine: driver " << plugin.name() << " " << plugin.version() << " from " << config_path
                  << "; " << requests << " requests of " << pages << " blocks of " << block_bytes << " bytes\n";
        Instance publisher(plugin, config.options, pages, block_bytes), fetcher(plugin, config.options, pages, block_bytes);
        std::vector<uint64_t> offsets(pages);
        for (size_t p = 0; p < pages; ++p) offsets[p] = p * block_bytes;

        // The publisher served every other request earlier: it computes their
        // blocks and publishes them (a block already stored stays as it is).
        uint64_t published = 0;
        Clock::duration publish_time{};
        for (size_t i = 0; i < workload.size(); i += 2) {
            const auto keys = kvblob::block_keys("sim", workload[i].tokens, block_tokens, salt);
            for (size_t b = 0; b < keys.size(); ++b)
                engine::compute_block(keys[b], publisher.cache.data() + offsets[b], block_bytes);
            const auto t0 = Clock::now();
            auto results = kvblob::transfer_blocks(publisher.driver, kvblob::OpKind::put, keys,
                                                   publisher.region.handle(), offsets, block_bytes, op_timeout);
            publish_time += Clock::now() - t0;
            published += kvblob::resume_bound(results);
            progress("publish", i / 2 + 1, (workload.size() + 1) / 2);
        }

        // The fetcher serves every request: the store's prefix first, then
        // recompute from the resume bound.
        uint64_t wanted = 0, delivered = 0, full_hits = 0, wrong = 0, fetched_bytes = 0;
        Clock::duration fetch_time{};
        for (size_t i = 0; i < workload.size(); ++i) {
            const auto keys = kvblob::block_keys("sim", workload[i].tokens, block_tokens, salt);
            wanted += keys.size();
            const auto t0 = Clock::now();
            const size_t stored = kvblob::stored_prefix(fetcher.driver, keys, op_timeout);
            const std::vector<std::string> hit(keys.begin(), keys.begin() + static_cast<long>(stored));
            const std::vector<uint64_t> hit_offsets(offsets.begin(), offsets.begin() + static_cast<long>(stored));
            auto results = kvblob::transfer_blocks(fetcher.driver, kvblob::OpKind::get, hit, fetcher.region.handle(),
                                                   hit_offsets, block_bytes, op_timeout);
            fetch_time += Clock::now() - t0;
            const size_t bound = kvblob::resume_bound(results);
            std::vector<uint8_t> expected(block_bytes);
            for (size_t b = 0; b < bound; ++b) {
                engine::compute_block(keys[b], expected.data(), block_bytes);
                if (std::memcmp(expected.data(), fetcher.cache.data() + offsets[b], block_bytes) != 0) ++wrong;
            }
            for (size_t b = bound; b < keys.size(); ++b)  // recompute what the store did not deliver
                engine::compute_block(keys[b], fetcher.cache.data() + offsets[b], block_bytes);
            delivered += bound;
            fetched_bytes += bound * block_bytes;
            full_hits += bound == keys.size();
            progress("fetch", i + 1, workload.size());
        }

        std::printf("publisher: %zu requests, %llu blocks published (%.1f MiB) in %.3f s\n", (workload.size() + 1) / 2,
                    static_cast<unsigned long long>(published), mib(published * block_bytes), seconds(publish_time));
        std::printf("fetcher:   %zu requests, %llu blocks wanted, %llu delivered by the store (%.1f%%), %llu recomputed\n",
                    workload.size(), static_cast<unsigned long long>(wanted), static_cast<unsigned long long>(delivered),
                    100.0 * static_cast<double>(delivered) / static_cast<double>(wanted),
                    static_cast<unsigned long long>(wanted - delivered));
        std::printf("           resume bound: mean %.1f of %zu blocks; %llu requests served whole\n",
                    static_cast<double>(delivered) / static_cast<double>(workload.size()), pages,
                    static_cast<unsigned long long>(full_hits));
        std::printf("           fetched %.1f MiB in %.3f s (%.2f GB/s, probe included)\n", mib(fetched_bytes),
                    seconds(fetch_time), static_cast<double>(fetched_bytes) / 1e9 / std::max(seconds(fetch_time), 1e-9));
        if (wrong) {
            std::printf("WRONG BYTES: %llu blocks reported READY held other bytes than computed\n",
                        static_cast<unsigned long long>(wrong));
            return 1;
        }
        std::printf("verified: every delivered block matched its computed bytes\n");
        return 0;
    } catch (const kvblob::ConfigError &e) {
        std::cerr << e.what() << "\n";
        return 3;
    } catch (const kvblob::LoadError &e) {
        std::cerr << e.what() << "\n";
        return 3;
    }
}
