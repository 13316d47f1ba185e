// kvblob-soak: many threads, mixed put/get/probe/cancel with random sizes on
// shared and private keys, against any driver, until an operation count or a
// time limit. Every object's bytes are fixed by its key, so any READY get
// holding other bytes is counted as wrong.
//
// Exit codes: 0 no wrong bytes and no operation lost; 1 otherwise; 2 usage
// error; 3 the plugin was refused.
#include <CLI/CLI.hpp>

#include "kvblob/cli/plugin_flags.hpp"
#include "kvblob/cli/quantities.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <random>
#include <thread>

#include "kvblob/host/batch.hpp"
#include "kvblob/tools/fill_pattern.hpp"
#include "kvblob/tools/metrics_file.hpp"
#include "kvblob/host/json.hpp"
#include "kvblob/host/key_codec.hpp"
#include "kvblob/host/plugin.hpp"
#include "kvblob/host/version.hpp"

// batch.hpp's helpers, in namespace kvblob like all of the public API.
using kvblob::Batch;
using kvblob::make_span;
using kvblob::fill_pattern;

namespace {

using Clock = std::chrono::steady_clock;

struct Tally {
    std::atomic<uint64_t> ops{0}, puts{0}, gets{0}, probes{0}, cancels{0}, ready_gets{0}, wrong{0}, lost{0}, refused{0};
    std::atomic<uint64_t> ready_put_bytes{0}, ready_get_bytes{0};  // of READY rows, as the host's metrics count them
};

// The object stored under key k: its size and bytes depend on k alone.
uint64_t size_of(uint64_t k, uint64_t max_bytes) { return 1 + (k * 0x9E3779B97F4A7C15ull >> 17) % max_bytes; }
void content_of(uint64_t k, uint8_t *dst, uint64_t n) { fill_pattern(dst, n, 0x5eed0000 + k); }

}  // namespace

int main(int argc, char **argv)
{
    CLI::App app{"Soak a kvblob driver: threads of mixed operations, every READY byte verified."};
    app.set_version_flag("--version", kvblob::tool_version_banner("kvblob-soak"));
    std::string spec;
    unsigned threads = 4, seconds = 60;
    uint64_t ops = 100000, keys = 512, max_bytes = 256 * 1024, seed = 1;
    bool json = false;
    std::string metrics_out, metrics_label;
    app.add_option("-d,--driver", spec, "Plugin path or driver name")->required();
    kvblob::cli::PluginFlags flags;
    kvblob::cli::add_plugin_flags(app, flags);
    namespace cli = kvblob::cli;
    app.add_option("--threads", threads, "Threads submitting")->transform(cli::Count(256));
    app.add_option("--ops", ops, "Operations in all, across threads")->transform(cli::Count(uint64_t{1} << 40));
    app.add_option("--seconds", seconds, "Stop after this long even if --ops is not reached")
        ->transform(cli::Count(static_cast<uint64_t>(cli::max_seconds)));
    app.add_option("--keys", keys, "Keys shared by every thread (each thread also has its own)")
        ->transform(cli::Count(uint64_t{1} << 32));
    app.add_option("--max-bytes", max_bytes, "Largest object (K, M, G suffixes; at most this machine's memory)")
        ->transform(cli::MemorySize());
    app.add_option("--seed", seed, "Seed of every thread's choices");
    app.add_flag("--json", json, "Print the summary as one JSON object");
    app.add_option("--metrics-out", metrics_out, "Write the driver's metrics at the end, in Prometheus' text format");
    app.add_option("--metrics-label", metrics_label, "The label of the driver's metrics (tells runs apart)");
    app.footer("Exit codes: 0 clean; 1 wrong bytes or lost operations; 2 usage error; 3 plugin refused.");
    if (auto done = kvblob::cli::parse(app, argc, argv)) return *done;
    const auto options = kvblob::cli::driver_options(flags, "kvblob-soak");
    if (!options) return kvblob::cli::exit_usage;

    try {
        auto plugin = kvblob::Plugin::load(spec, flags.load);
        auto driver = plugin.open(*options, {}, {}, metrics_label);
        const auto &caps = driver.caps();
        max_bytes = std::min<uint64_t>(max_bytes, caps.max_object_bytes);
        try {  // each thread holds a source and a destination of max_bytes
            cli::require_memory(cli::saturating_mul(2 * uint64_t{threads}, max_bytes),
                                std::to_string(threads) + " threads x 2 buffers of --max-bytes " +
                                    cli::bytes_text(static_cast<double>(max_bytes)));
        } catch (const std::invalid_argument &e) {
            std::cerr << "kvblob-soak: " << e.what() << "\n";
            return cli::exit_usage;
        }
        Tally tally;
        const auto start = Clock::now();
        const auto deadline = start + std::chrono::seconds(seconds);
        const std::string prefix = "soak" + std::to_string(getpid());

        auto worker = [&](unsigned t) {
            std::vector<uint8_t> src(max_bytes), dst(max_bytes);
            auto region = [&](std::vector<uint8_t> &m) {
                kvblob_region_desc_t d{sizeof d, KVBLOB_MEMORY_HOST, m.data(), m.size(), 0, 0};
                return driver.register_region(d);
            };
            auto src_region = region(src), dst_region = region(dst);
            std::mt19937_64 rng(seed * 1000003 + t);
            while (tally.ops.fetch_add(1) < ops && Clock::now() < deadline) {
                // Half the keys are shared by every thread, half are this thread's own.
                const uint64_t k = (rng() & 1) ? rng() % keys : keys * (t + 1) + rng() % 64;
                const uint64_t n = size_of(k, max_bytes);
                const std::string key = kvblob::encode_key(prefix, std::to_string(k));
                Batch b;
                const unsigned what = static_cast<unsigned>(rng() % 8);
                try {
                    if (what < 3 || what == 7) {  // put, or a put cancelled at once
                        content_of(k, src.data(), n);
                        b.row(key, {make_span(src_region.handle(), 0, n)});
                        auto op = driver.submit(kvblob::OpKind::put, b.get());
                        if (what == 7) {
                            op.cancel();
                            ++tally.cancels;
                        }
                        if (!op.wait(std::chrono::seconds(30))) ++tally.lost;
                        else if (op.results().at(0).result == KVBLOB_ROW_READY) tally.ready_put_bytes += n;
                        ++tally.puts;
                    } else if (what < 6) {
                        std::memset(dst.data(), 0, n);
                        b.row(key, {make_span(dst_region.handle(), 0, n)});
                        auto op = driver.submit(kvblob::OpKind::get, b.get());
                        if (!op.wait(std::chrono::seconds(30))) {
                            ++tally.lost;
                            continue;
                        }
                        ++tally.gets;
                        if (op.results().at(0).result == KVBLOB_ROW_READY) {
                            ++tally.ready_gets;
                            tally.ready_get_bytes += n;
                            std::vector<uint8_t> expected(n);
                            content_of(k, expected.data(), n);
                            if (std::memcmp(expected.data(), dst.data(), n) != 0) ++tally.wrong;
                        }
                    } else if (driver.has(KVBLOB_CAP_PROBE)) {
                        b.row(key);
                        auto op = driver.submit(kvblob::OpKind::probe, b.get());
                        if (!op.wait(std::chrono::seconds(30))) ++tally.lost;
                        ++tally.probes;
                    }
                } catch (const kvblob::CallError &) {
                    ++tally.refused;  // the in-flight limit, say: counted, not an error
                }
                if (t == 0 && isatty(STDERR_FILENO) && tally.ops % 1000 == 0)
                    std::fprintf(stderr, "\r%llu / %llu operations", static_cast<unsigned long long>(tally.ops.load()),
                                 static_cast<unsigned long long>(ops));
            }
        };
        std::vector<std::thread> pool;
        for (unsigned t = 0; t < threads; ++t) pool.emplace_back(worker, t);
        for (auto &t : pool) t.join();
        if (isatty(STDERR_FILENO)) std::fprintf(stderr, "\r%40s\r", "");
        const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
        const uint64_t done = std::min<uint64_t>(tally.ops.load(), ops);
        const bool clean = tally.wrong == 0 && tally.lost == 0;
        if (json) {
            std::cout << "{\"driver\":" << kvblob::json_quote(plugin.name()) << ",\"threads\":" << threads
                      << ",\"operations\":" << done << ",\"seconds\":" << elapsed << ",\"puts\":" << tally.puts
                      << ",\"gets\":" << tally.gets << ",\"probes\":" << tally.probes
                      << ",\"cancelled_puts\":" << tally.cancels << ",\"ready_gets_verified\":" << tally.ready_gets
                      << ",\"wrong\":" << tally.wrong << ",\"lost\":" << tally.lost << ",\"refused\":" << tally.refused
                      << ",\"ready_put_bytes\":" << tally.ready_put_bytes << ",\"ready_get_bytes\":" << tally.ready_get_bytes
                      << "}\n";
        } else {
            std::printf("kvblob-soak: driver %s, %u threads, %llu operations in %.1f s (%.0f ops/s)\n",
                        plugin.name().c_str(), threads, static_cast<unsigned long long>(done), elapsed,
                        static_cast<double>(done) / elapsed);
            std::printf("  puts %llu (%llu cancelled at once), gets %llu, probes %llu, refused %llu\n",
                        static_cast<unsigned long long>(tally.puts.load()),
                        static_cast<unsigned long long>(tally.cancels.load()),
                        static_cast<unsigned long long>(tally.gets.load()),
                        static_cast<unsigned long long>(tally.probes.load()),
                        static_cast<unsigned long long>(tally.refused.load()));
            std::printf("  %llu READY gets verified: %llu wrong, %llu operations lost\n",
                        static_cast<unsigned long long>(tally.ready_gets.load()),
                        static_cast<unsigned long long>(tally.wrong.load()),
                        static_cast<unsigned long long>(tally.lost.load()));
        }
        if (!metrics_out.empty()) kvblob::tools::write_metrics_file(metrics_out, {driver.metrics()});
        return clean ? 0 : 1;
    } catch (const kvblob::LoadError &e) {
        std::cerr << e.what() << "\n";
        return 3;
    } catch (const std::invalid_argument &e) {  // a --metrics-label the host refuses
        std::cerr << "kvblob-soak: " << e.what() << "\n";
        return kvblob::cli::exit_usage;
    }
}
