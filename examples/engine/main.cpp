// kvblob-engine: an engine simulator that shares KV-cache blocks through the
// driver its config file names. One instance publishes the blocks of the
// requests it served; another, serving related requests, asks the store for
// each request's longest stored prefix, fetches it, checks every byte, and
// recomputes only from the resume bound on.
//
// With --metrics-listen it serves the drivers' metrics (docs/metrics.md) at
// /metrics while it runs; --duration keeps the workload going, so a scraper
// sees the counters move, and --metrics-linger keeps serving afterwards.
//
// Exit codes: 0 every delivered block verified; 1 a block the store called
// READY held wrong bytes, or the run failed (no usable cache slot left, a
// transfer refused); 2 usage error (an address --metrics-listen cannot
// bind included); 3 the config or its driver was refused.
#include <CLI/CLI.hpp>

#include "kvblob/cli/plugin_flags.hpp"
#include "kvblob/cli/quantities.hpp"
#include "kvblob/tools/metrics_endpoint.hpp"
#include "kvblob/tools/metrics_file.hpp"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>

#include "kvblob/host/block_sequence.hpp"
#include "kvblob/host/config.hpp"
#include "kvblob/host/metrics.hpp"
#include "kvblob/host/version.hpp"
#include "workload.hpp"

namespace {

using Clock = std::chrono::steady_clock;
// How long an operation may take, and how long a slot waits for a driver's
// access to end before the page moves to a spare (--timeout).
std::chrono::milliseconds op_timeout = std::chrono::seconds(30);

// One engine: a driver and its paged KV cache, registered once. The cache
// has a slot per page and as many spares. Page p's block lives in slot
// page_slot[p]; a slot a driver may still touch (a transfer past its
// timeout, a FAULT whose transport may still write) is never written or
// handed out: the page moves to a spare, and a slot whose access is
// unprovable is never used again (kvblob::SlotLedger).
struct Instance {
    Instance(const kvblob::Plugin &plugin, const kvblob::DriverConfig &config, size_t pages, uint64_t page_bytes)
        : page_bytes(page_bytes),
          cache_bytes(2 * pages * page_bytes),
          cache(new uint8_t[cache_bytes]()),
          driver(kvblob::open_configured_driver(plugin, config))
    {
        kvblob_region_desc_t desc{sizeof desc, KVBLOB_MEMORY_HOST, cache.get(), cache_bytes, 0, 0};
        region = driver.register_region(desc);
        for (size_t p = 0; p < pages; ++p) page_slot.push_back(p * page_bytes);
        for (size_t p = 2 * pages; p-- > pages;) spare.push_back(p * page_bytes);
    }
    ~Instance()
    {
        slots = kvblob::SlotLedger();  // its operations go back to the driver object
        // A registration that cannot end yet means a driver may still touch
        // the cache: it is kept for the life of the process, never freed.
        if (region.unregister() != KVBLOB_OK) (void)cache.release();
    }
    Instance(const Instance &) = delete;
    Instance &operator=(const Instance &) = delete;

    // The slot of page p, once no driver may touch it, ready to be written
    // or handed to a transfer. Throws when no usable slot is left.
    uint64_t writable(size_t p)
    {
        while (!slots.reusable(region.handle(), page_slot[p], page_bytes, op_timeout)) {
            ++set_aside;  // left to the driver: open past the bound, or retired for good
            if (spare.empty())
                throw std::runtime_error("no cache slot left that no driver may touch (" + std::to_string(set_aside) +
                                         " set aside)");
            page_slot[p] = spare.back();
            spare.pop_back();
        }
        return page_slot[p];
    }
    std::vector<uint64_t> writable(size_t first, size_t count)
    {
        std::vector<uint64_t> out;
        for (size_t p = first; p < first + count; ++p) out.push_back(writable(p));
        return out;
    }
    uint8_t *bytes(size_t p) { return cache.get() + page_slot[p]; }

    const uint64_t page_bytes, cache_bytes;
    // Members end in reverse: the ledger, the registration, the driver, then
    // the memory (unless ~Instance kept it).
    std::unique_ptr<uint8_t[]> cache;
    kvblob::Driver driver;
    kvblob::Region region;
    kvblob::SlotLedger slots;
    std::vector<uint64_t> page_slot, spare;
    uint64_t set_aside = 0;
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

// What the command line asks for.
struct Settings {
    std::string config_path, salt = "sim-model/fp16", block_hash_name = "sha256", metrics_listen, metrics_out;
    size_t requests = 64, block_tokens = 16, system_tokens = 64, turn_tokens = 48;
    uint64_t block_bytes = 64 * 1024, seed = 1;
    double timeout_s = 30, duration_s = 0;
    bool metrics_linger = false;
    kvblob::BlockHash block_hash = kvblob::BlockHash::sha256;
};

// What the rounds did, added up.
struct Totals {
    uint64_t published = 0, wanted = 0, delivered = 0, full_hits = 0, wrong = 0, fetched_bytes = 0, served = 0,
             publishes = 0;  // requests published, every round
    Clock::duration publish_time{}, fetch_time{};
};

// The publisher served every other request earlier: it computes their
// blocks and publishes them (a block already stored stays as it is).
void publish_round(Instance &publisher, const std::vector<engine::Request> &workload, const Settings &s, Totals &t)
{
    for (size_t i = 0; i < workload.size(); i += 2) {
        const auto keys = kvblob::packed_block_keys("sim", workload[i].tokens, s.block_tokens, s.salt, s.block_hash);
        const auto offsets = publisher.writable(0, keys.size());  // the last put may still read a slot
        for (size_t b = 0; b < keys.size(); ++b) engine::compute_block(keys[b], publisher.bytes(b), s.block_bytes);
        const auto t0 = Clock::now();
        auto results = kvblob::transfer_blocks(publisher.driver, kvblob::OpKind::put, keys, publisher.region.handle(),
                                               offsets, s.block_bytes, op_timeout, publisher.slots);
        t.publish_time += Clock::now() - t0;
        t.published += kvblob::resume_bound(results);
        ++t.publishes;
        progress("publish", i / 2 + 1, (workload.size() + 1) / 2);
    }
}

// The fetcher serves every request: the store's prefix first, then
// recompute from the resume bound.
void fetch_round(Instance &fetcher, const std::vector<engine::Request> &workload, const Settings &s, Totals &t)
{
    for (size_t i = 0; i < workload.size(); ++i) {
        const auto keys = kvblob::packed_block_keys("sim", workload[i].tokens, s.block_tokens, s.salt, s.block_hash);
        t.wanted += keys.size();
        const auto t0 = Clock::now();
        const size_t stored = kvblob::stored_prefix(fetcher.driver, keys, op_timeout);
        auto results = kvblob::transfer_blocks(fetcher.driver, kvblob::OpKind::get, keys.first(stored),
                                               fetcher.region.handle(), fetcher.writable(0, stored), s.block_bytes,
                                               op_timeout, fetcher.slots);
        t.fetch_time += Clock::now() - t0;
        // Delivered: READY and the driver done with the slot.
        const size_t bound = kvblob::resume_bound(results);
        std::vector<uint8_t> expected(s.block_bytes);
        for (size_t b = 0; b < bound; ++b) {
            engine::compute_block(keys[b], expected.data(), s.block_bytes);
            if (std::memcmp(expected.data(), fetcher.bytes(b), s.block_bytes) != 0) ++t.wrong;
        }
        // Recompute what the store did not deliver, each into a slot no
        // driver may still write (a failed get's may: it moves to a spare).
        for (size_t b = bound; b < keys.size(); ++b) {
            fetcher.writable(b);
            engine::compute_block(keys[b], fetcher.bytes(b), s.block_bytes);
        }
        t.delivered += bound;
        t.fetched_bytes += bound * s.block_bytes;
        t.full_hits += bound == keys.size();
        ++t.served;
        progress("fetch", i + 1, workload.size());
    }
}

void report(const Totals &t, size_t pages, uint64_t block_bytes, uint64_t set_aside)
{
    std::printf("publisher: %llu requests, %llu blocks published (%.1f MiB) in %.3f s\n",
                static_cast<unsigned long long>(t.publishes),
                static_cast<unsigned long long>(t.published), mib(t.published * block_bytes), seconds(t.publish_time));
    std::printf("fetcher:   %llu requests, %llu blocks wanted, %llu delivered by the store (%.1f%%), %llu recomputed\n",
                static_cast<unsigned long long>(t.served), static_cast<unsigned long long>(t.wanted),
                static_cast<unsigned long long>(t.delivered),
                100.0 * static_cast<double>(t.delivered) / static_cast<double>(t.wanted),
                static_cast<unsigned long long>(t.wanted - t.delivered));
    std::printf("           resume bound: mean %.1f of %zu blocks; %llu requests served whole\n",
                static_cast<double>(t.delivered) / static_cast<double>(t.served), pages,
                static_cast<unsigned long long>(t.full_hits));
    std::printf("           fetched %.1f MiB in %.3f s (%.2f GB/s, probe included)\n", mib(t.fetched_bytes),
                seconds(t.fetch_time), static_cast<double>(t.fetched_bytes) / 1e9 / std::max(seconds(t.fetch_time), 1e-9));
    if (set_aside)
        std::printf("           %llu cache slots set aside: a driver may still touch them\n",
                    static_cast<unsigned long long>(set_aside));
}

void add_flags(CLI::App &app, Settings &s)
{
    namespace cli = kvblob::cli;
    app.set_version_flag("--version", kvblob::tool_version_banner("kvblob-engine"));
    app.add_option("-c,--config", s.config_path, "Driver config file (TOML)")->required();
    constexpr uint64_t max_tokens = uint64_t{1} << 32;  // a token position is 32 bits
    app.add_option("--requests", s.requests, "Requests the fetching instance serves")->transform(cli::Count(1u << 30));
    app.add_option("--block-tokens", s.block_tokens, "Tokens per KV block")->transform(cli::Count(max_tokens));
    app.add_option("--block-bytes", s.block_bytes, "Bytes of KV per block (K, M, G suffixes)")->transform(cli::MemorySize());
    app.add_option("--system-tokens", s.system_tokens, "Tokens of the system prompt every request shares")
        ->transform(cli::Count(max_tokens, true));
    app.add_option("--turn-tokens", s.turn_tokens, "Tokens per conversation turn")->transform(cli::Count(max_tokens));
    app.add_option("--salt", s.salt, "What separates this model's blocks from others' (model, dtype)");
    app.add_option("--block-hash", s.block_hash_name,
                   "How blocks are named: sha256, or xxh3 (faster; only where every request's tokens are trusted)")
        ->check(CLI::IsMember({"sha256", "xxh3"}))
        ->capture_default_str();
    app.add_option("--seed", s.seed, "Seed of the workload");
    app.add_option("--timeout", s.timeout_s, "Seconds an operation may take, and a slot may wait for a driver to let go")
        ->check(cli::Seconds())
        ->capture_default_str();
    app.add_option("--duration", s.duration_s, "Seconds to keep serving rounds of the workload (default: one round)")
        ->check(cli::Seconds());
    auto *listen = app.add_option("--metrics-listen", s.metrics_listen,
                                  "Serve the drivers' metrics at http://HOST:PORT/metrics while running "
                                  "(127.0.0.1:9464; port 0: any free port)");
    app.add_flag("--metrics-linger", s.metrics_linger, "After the run, keep serving /metrics until SIGINT or SIGTERM")
        ->needs(listen);
    app.add_option("--metrics-out", s.metrics_out, "Write the drivers' metrics at the end, in Prometheus' text format");
    app.footer("Exit codes: 0 verified; 1 wrong bytes reported READY, or the run failed; 2 usage error (a "
               "--metrics-listen address that cannot be bound included); 3 config or driver refused.");
}

// What the run holds at once: every request's tokens, and two instances'
// caches of a slot and a spare per block of a request (plus one block to
// verify). Empty when this machine has it.
std::string memory_problem(const Settings &s)
{
    namespace cli = kvblob::cli;
    const uint64_t tokens = s.system_tokens + 3 * uint64_t{s.turn_tokens};
    const uint64_t pages = tokens / s.block_tokens;
    const uint64_t need = cli::saturating_add(cli::saturating_mul(cli::saturating_mul(s.requests, tokens), 4),
                                              cli::saturating_mul(4 * pages + 1, s.block_bytes));
    try {
        cli::require_memory(need, std::to_string(s.requests) + " requests of " + std::to_string(tokens) +
                                      " tokens and 2 caches of 2 x " + std::to_string(pages) + " blocks of " +
                                      cli::bytes_text(static_cast<double>(s.block_bytes)));
    } catch (const std::invalid_argument &e) {
        return e.what();
    }
    return {};
}

sigset_t stop_signals()
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    return set;
}
void block_stop_signals()
{
    const sigset_t set = stop_signals();
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
}
void wait_for_stop_signal()
{
    const sigset_t set = stop_signals();
    int signal = 0;
    sigwait(&set, &signal);
}

// The run: both instances, then rounds of publishing and fetching until
// --duration has passed (one round by default), then the metrics, while
// the drivers are still open. Exit code as main's.
int run(const Settings &s, const kvblob::tools::MetricsEndpoint *endpoint)
{
    const auto config = kvblob::read_driver_config(s.config_path);
    const auto plugin = kvblob::load_configured_plugin(config);
    const auto workload = engine::make_requests(s.requests, s.system_tokens, s.turn_tokens, s.seed);
    const size_t pages = (s.system_tokens + 3 * s.turn_tokens) / s.block_tokens;
    if (pages == 0) {
        std::cerr << "kvblob-engine: a request is shorter than one block\n";
        return 2;
    }
    // Opened before the banner: a driver that refuses an option is refused
    // before the engine says it runs.
    Instance publisher(plugin, config, pages, s.block_bytes), fetcher(plugin, config, pages, s.block_bytes);
    std::cout << "kvblob-engine: driver " << plugin.name() << " " << plugin.version() << " from " << s.config_path
              << "; " << s.requests << " requests of " << pages << " blocks of " << s.block_bytes << " bytes, named by "
              << kvblob::to_string(s.block_hash) << std::endl;
    Totals totals;
    const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s.duration_s));
    do {
        publish_round(publisher, workload, s, totals);
        fetch_round(fetcher, workload, s, totals);
    } while (Clock::now() < until);
    report(totals, pages, s.block_bytes, publisher.set_aside + fetcher.set_aside);
    if (totals.wrong) {
        std::printf("WRONG BYTES: %llu blocks reported READY held other bytes than computed\n",
                    static_cast<unsigned long long>(totals.wrong));
        return 1;
    }
    std::printf("verified: every delivered block matched its computed bytes\n");
    if (!s.metrics_out.empty()) kvblob::tools::write_metrics_file(s.metrics_out, kvblob::metrics_of_open_drivers());
    if (endpoint && s.metrics_linger) {
        std::cout << "metrics: still serving " << endpoint->url() << " until SIGINT or SIGTERM" << std::endl;
        wait_for_stop_signal();
    }
    return 0;
}

}  // namespace

int main(int argc, char **argv)
{
    CLI::App app{"An engine simulator that shares KV-cache blocks through a kvblob driver named by a config file."};
    Settings s;
    add_flags(app, s);
    if (auto done = kvblob::cli::parse(app, argc, argv)) return *done;
    op_timeout = std::chrono::milliseconds(static_cast<int64_t>(s.timeout_s * 1000));
    s.block_hash = kvblob::parse_block_hash(s.block_hash_name);
    if (const std::string problem = memory_problem(s); !problem.empty()) {
        std::cerr << "kvblob-engine: " << problem << "\n";
        return kvblob::cli::exit_usage;
    }
    // SIGINT and SIGTERM end the lingering endpoint (sigwait), so every
    // thread started from here on leaves them to it.
    if (s.metrics_linger) block_stop_signals();
    try {
        // Bound before any work: a port already taken is the user's to fix.
        std::optional<kvblob::tools::MetricsEndpoint> endpoint;
        if (!s.metrics_listen.empty()) {
            try {
                endpoint.emplace(kvblob::tools::parse_listen_address(s.metrics_listen));
            } catch (const std::exception &e) {
                std::cerr << "kvblob-engine: --metrics-listen " << e.what() << "\n";
                return kvblob::cli::exit_usage;
            }
            std::cout << "metrics: serving " << endpoint->url() << std::endl;
        }
        return run(s, endpoint ? &*endpoint : nullptr);
    } catch (const kvblob::ConfigError &e) {
        std::cerr << e.what() << "\n";
        return 3;
    } catch (const kvblob::LoadError &e) {
        std::cerr << e.what() << "\n";
        return 3;
    } catch (const std::exception &e) {
        std::cerr << "kvblob-engine: " << e.what() << "\n";
        return 1;
    }
}
