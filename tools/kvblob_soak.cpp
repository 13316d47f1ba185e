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

// What the command line asks for.
struct Settings {
    std::string spec;
    unsigned threads = 4, seconds = 60;
    uint64_t ops = 100000, keys = 512, max_bytes = 256 * 1024, seed = 1;
    bool json = false;
    std::string metrics_out, metrics_label;
    kvblob::cli::PluginFlags flags;
};

void add_flags(CLI::App &app, Settings &s)
{
    namespace cli = kvblob::cli;
    app.set_version_flag("--version", kvblob::tool_version_banner("kvblob-soak"));
    app.add_option("-d,--driver", s.spec, "Plugin path or driver name")->required();
    cli::add_plugin_flags(app, s.flags);
    app.add_option("--threads", s.threads, "Threads submitting")->transform(cli::Count(256));
    app.add_option("--ops", s.ops, "Operations in all, across threads")->transform(cli::Count(uint64_t{1} << 40));
    app.add_option("--seconds", s.seconds, "Stop after this long even if --ops is not reached")
        ->transform(cli::Count(static_cast<uint64_t>(cli::max_seconds)));
    app.add_option("--keys", s.keys, "Keys shared by every thread (each thread also has its own)")
        ->transform(cli::Count(uint64_t{1} << 32));
    app.add_option("--max-bytes", s.max_bytes, "Largest object (K, M, G suffixes; at most this machine's memory)")
        ->transform(cli::MemorySize());
    app.add_option("--seed", s.seed, "Seed of every thread's choices");
    app.add_flag("--json", s.json, "Print the summary as one JSON object");
    app.add_option("--metrics-out", s.metrics_out, "Write the driver's metrics at the end, in Prometheus' text format");
    app.add_option("--metrics-label", s.metrics_label, "The label of the driver's metrics (tells runs apart)");
    app.footer("Exit codes: 0 clean; 1 wrong bytes or lost operations; 2 usage error; 3 plugin refused.");
}

// One thread's share of the run: its own source and destination buffers,
// registered once, and its choices from its own seed.
class Worker {
public:
    Worker(kvblob::Driver &driver, const Settings &s, Tally &tally, const std::string &prefix, unsigned t,
           Clock::time_point deadline)
        : driver_(driver), s_(s), tally_(tally), prefix_(prefix), t_(t), deadline_(deadline)
    {
    }

    void run()
    {
        std::vector<uint8_t> src(s_.max_bytes), dst(s_.max_bytes);
        auto src_region = region(src), dst_region = region(dst);
        std::mt19937_64 rng(s_.seed * 1000003 + t_);
        while (tally_.ops.fetch_add(1) < s_.ops && Clock::now() < deadline_) {
            // Half the keys are shared by every thread, half are this thread's own.
            const uint64_t k = (rng() & 1) ? rng() % s_.keys : s_.keys * (t_ + 1) + rng() % 64;
            const unsigned what = static_cast<unsigned>(rng() % 8);
            try {
                if (what < 3 || what == 7) put(k, src, src_region, what == 7);  // 7: a put cancelled at once
                else if (what < 6) get(k, dst, dst_region);
                else if (driver_.has(KVBLOB_CAP_PROBE)) probe(k);
            } catch (const kvblob::CallError &) {
                ++tally_.refused;  // the in-flight limit, say: counted, not an error
            }
            if (t_ == 0 && isatty(STDERR_FILENO) && tally_.ops % 1000 == 0)
                std::fprintf(stderr, "\r%llu / %llu operations", static_cast<unsigned long long>(tally_.ops.load()),
                             static_cast<unsigned long long>(s_.ops));
        }
    }

private:
    kvblob::Region region(std::vector<uint8_t> &m)
    {
        kvblob_region_desc_t d{sizeof d, KVBLOB_MEMORY_HOST, m.data(), m.size(), 0, 0};
        return driver_.register_region(d);
    }
    std::string key(uint64_t k) const { return kvblob::encode_key(prefix_, std::to_string(k)); }

    void put(uint64_t k, std::vector<uint8_t> &src, kvblob::Region &r, bool cancel)
    {
        const uint64_t n = size_of(k, s_.max_bytes);
        content_of(k, src.data(), n);
        Batch b;
        b.row(key(k), {make_span(r.handle(), 0, n)});
        auto op = driver_.submit(kvblob::OpKind::put, b.get());
        if (cancel) {
            op.cancel();
            ++tally_.cancels;
        }
        if (!op.wait(std::chrono::seconds(30))) ++tally_.lost;
        else if (op.results().at(0).result == KVBLOB_ROW_READY) tally_.ready_put_bytes += n;
        ++tally_.puts;
    }

    void get(uint64_t k, std::vector<uint8_t> &dst, kvblob::Region &r)
    {
        const uint64_t n = size_of(k, s_.max_bytes);
        std::memset(dst.data(), 0, n);
        Batch b;
        b.row(key(k), {make_span(r.handle(), 0, n)});
        auto op = driver_.submit(kvblob::OpKind::get, b.get());
        if (!op.wait(std::chrono::seconds(30))) {
            ++tally_.lost;
            return;
        }
        ++tally_.gets;
        if (op.results().at(0).result != KVBLOB_ROW_READY) return;
        ++tally_.ready_gets;
        tally_.ready_get_bytes += n;
        std::vector<uint8_t> expected(n);
        content_of(k, expected.data(), n);
        if (std::memcmp(expected.data(), dst.data(), n) != 0) ++tally_.wrong;
    }

    void probe(uint64_t k)
    {
        Batch b;
        b.row(key(k));
        auto op = driver_.submit(kvblob::OpKind::probe, b.get());
        if (!op.wait(std::chrono::seconds(30))) ++tally_.lost;
        ++tally_.probes;
    }

    kvblob::Driver &driver_;
    const Settings &s_;
    Tally &tally_;
    const std::string &prefix_;
    unsigned t_;
    Clock::time_point deadline_;
};

void print_summary(const Settings &s, const std::string &driver, const Tally &tally, uint64_t done, double elapsed)
{
    if (s.json) {
        std::cout << "{\"driver\":" << kvblob::json_quote(driver) << ",\"threads\":" << s.threads
                  << ",\"operations\":" << done << ",\"seconds\":" << elapsed << ",\"puts\":" << tally.puts
                  << ",\"gets\":" << tally.gets << ",\"probes\":" << tally.probes
                  << ",\"cancelled_puts\":" << tally.cancels << ",\"ready_gets_verified\":" << tally.ready_gets
                  << ",\"wrong\":" << tally.wrong << ",\"lost\":" << tally.lost << ",\"refused\":" << tally.refused
                  << ",\"ready_put_bytes\":" << tally.ready_put_bytes << ",\"ready_get_bytes\":" << tally.ready_get_bytes
                  << "}\n";
        return;
    }
    std::printf("kvblob-soak: driver %s, %u threads, %llu operations in %.1f s (%.0f ops/s)\n", driver.c_str(),
                s.threads, static_cast<unsigned long long>(done), elapsed, static_cast<double>(done) / elapsed);
    std::printf("  puts %llu (%llu cancelled at once), gets %llu, probes %llu, refused %llu\n",
                static_cast<unsigned long long>(tally.puts.load()), static_cast<unsigned long long>(tally.cancels.load()),
                static_cast<unsigned long long>(tally.gets.load()), static_cast<unsigned long long>(tally.probes.load()),
                static_cast<unsigned long long>(tally.refused.load()));
    std::printf("  %llu READY gets verified: %llu wrong, %llu operations lost\n",
                static_cast<unsigned long long>(tally.ready_gets.load()),
                static_cast<unsigned long long>(tally.wrong.load()), static_cast<unsigned long long>(tally.lost.load()));
}

// The run itself, once the driver is open: exit 0 clean, 1 otherwise.
int soak(const Settings &s, const kvblob::Plugin &plugin, kvblob::Driver &driver)
{
    Tally tally;
    const auto start = Clock::now();
    const auto deadline = start + std::chrono::seconds(s.seconds);
    const std::string prefix = "soak" + std::to_string(getpid());
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < s.threads; ++t)
        pool.emplace_back([&, t] { Worker(driver, s, tally, prefix, t, deadline).run(); });
    for (auto &t : pool) t.join();
    if (isatty(STDERR_FILENO)) std::fprintf(stderr, "\r%40s\r", "");
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    print_summary(s, plugin.name(), tally, std::min<uint64_t>(tally.ops.load(), s.ops), elapsed);
    if (!s.metrics_out.empty()) kvblob::tools::write_metrics_file(s.metrics_out, {driver.metrics()});
    return tally.wrong == 0 && tally.lost == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char **argv)
{
    namespace cli = kvblob::cli;
    CLI::App app{"Soak a kvblob driver: threads of mixed operations, every READY byte verified."};
    Settings s;
    add_flags(app, s);
    if (auto done = cli::parse(app, argc, argv)) return *done;
    const auto options = cli::driver_options(s.flags, "kvblob-soak");
    if (!options) return cli::exit_usage;

    try {
        auto plugin = kvblob::Plugin::load(s.spec, s.flags.load);
        auto driver = plugin.open(*options, {}, {}, s.metrics_label);
        s.max_bytes = std::min<uint64_t>(s.max_bytes, driver.caps().max_object_bytes);
        try {  // each thread holds a source and a destination of max_bytes
            cli::require_memory(cli::saturating_mul(2 * uint64_t{s.threads}, s.max_bytes),
                                std::to_string(s.threads) + " threads x 2 buffers of --max-bytes " +
                                    cli::bytes_text(static_cast<double>(s.max_bytes)));
        } catch (const std::invalid_argument &e) {
            std::cerr << "kvblob-soak: " << e.what() << "\n";
            return cli::exit_usage;
        }
        return soak(s, plugin, driver);
    } catch (const kvblob::LoadError &e) {
        std::cerr << e.what() << "\n";
        return 3;
    } catch (const std::invalid_argument &e) {  // a --metrics-label the host refuses
        std::cerr << "kvblob-soak: " << e.what() << "\n";
        return kvblob::cli::exit_usage;
    }
}
