// kvblob-bench: measures any driver through the host, with a baseline for
// the same medium measured in the same run, so that every figure comes with
// the ratio that makes it comparable across machines.
//
// Exit codes: 0 measured; 1 some rows did not come back as expected (the
// figures of those points are not to be trusted); 2 usage error; 3 the
// plugin was refused or its driver would not open.
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <sstream>

#include "baseline.hpp"
#include "block_key_bench.hpp"
#include "checksum_bench.hpp"
#include "busy_load.hpp"
#include "completion_latency.hpp"
#include "driver_lane.hpp"
#include "kvblob/tools/cuda_device.hpp"
#include "lane_memory.hpp"
#include "metrics_cost.hpp"
#include "kvblob/tools/metrics_file.hpp"
#include "kvblob/cli/plugin_flags.hpp"
#include "kvblob/cli/quantities.hpp"
#include "kvblob/host/load_error.hpp"
#include "kvblob/host/version.hpp"
#include "report.hpp"
#include "tier_placement.hpp"

using namespace kvblob;
using namespace kvblob::bench;

namespace {

// What the command line asked for, as given.
struct Flags {
    std::string driver_spec, sizes_text = "4K,64K,256K,1M,16M", batch_text = "32", threads_text = "1",
                             ops_text = "put,get", plot_path, max_memory_text = "2G";
    double duration = 0.5;
    std::string bytes_text;
    bool json = false, csv = false, no_baseline = false;
    std::string memory_kind = "host", statistic_text = "mean", wait_text = "host";
    cli::PluginFlags plugin;
    bool block_keys_mode = false, checksums_mode = false;
    BlockKeySettings block_key_settings;
    unsigned load = 0;
    bool completion = false;
    std::string modes_text = "blocking,background";
    std::string metrics_text = "on", metrics_out;
    unsigned metrics_rounds = 5;
    unsigned rounds = 1;  // --rounds: alternated slices of each point
    std::string tier_text;  // --tier: top or bottom, for the tiered driver
};

// An option whose value is one of choices; --help shows them and, where
// the value holds one already, the default.
CLI::Option *add_choice(CLI::App &app, const std::string &name, std::string &value, const std::string &help,
                        std::vector<std::string> choices)
{
    CLI::Option *option = app.add_option(name, value, help)->check(CLI::IsMember(std::move(choices)));
    return value.empty() ? option : option->capture_default_str();
}

void add_flags(CLI::App &app, Flags &f)
{
    app.set_version_flag("--version", tool_version_banner("kvblob-bench"));
    auto *driver_flag =
        app.add_option("-d,--driver", f.driver_spec, "Plugin path or driver name (memory, file, redis, null)");
    app.add_flag("--block-keys", f.block_keys_mode,
                 "Measure kvblob::packed_block_keys instead of a driver: each hash over one request, against that hash "
                 "run once over the same token bytes")
        ->excludes(driver_flag);
    app.add_flag("--checksums", f.checksums_mode,
                 "Measure the drivers' CRC32C instead of a driver: each implementation this CPU runs, alone and fused "
                 "with a copy, at --sizes (default 4K,64K,1M), against memcpy of the same bytes")
        ->excludes(driver_flag)
        ->excludes("--block-keys");
    app.add_option("--request-tokens", f.block_key_settings.request_tokens, "With --block-keys: tokens in the request")
        ->transform(cli::Count(uint64_t{1} << 30))
        ->capture_default_str();
    app.add_option("--block-tokens", f.block_key_settings.tokens_per_block, "With --block-keys: tokens per block")
        ->transform(cli::Count(uint64_t{1} << 20))
        ->capture_default_str();
    cli::add_plugin_flags(app, f.plugin);
    app.add_option("--sizes", f.sizes_text, "Row sizes (comma-separated, K/M/G suffixes)")->capture_default_str();
    app.add_option("--batch", f.batch_text, "Rows per operation (comma-separated)")->capture_default_str();
    app.add_option("--threads", f.threads_text, "Threads submitting at once (comma-separated)")->capture_default_str();
    app.add_option("--ops", f.ops_text, "Operations: put, get, probe (comma-separated)")->capture_default_str();
    app.add_option("--duration", f.duration, "Seconds per point, for the driver and again for the baseline")
        ->check(cli::Seconds())
        ->capture_default_str();
    app.add_option("--rounds", f.rounds,
                   "Measure each point's driver and baseline in N alternated slices of --duration/N each (the "
                   "driver first, then the baseline first, and so on), so that both meet the same spells of a "
                   "shared machine; 1: the driver's --duration, then the baseline's. Each slice after a side's "
                   "first starts with an untimed step, as its first does")
        ->transform(cli::Count(1000))
        ->capture_default_str();
    app.add_option("--bytes", f.bytes_text, "Byte budget per point (stops at whichever budget is spent first)");
    app.add_option("--max-memory", f.max_memory_text, "Skip points whose buffers would exceed this")
        ->capture_default_str();
    auto *json_flag = app.add_flag("--json", f.json, "Print the results as JSON (fields named *ratio* hold the ratios)");
    app.add_flag("--csv", f.csv, "Print the results as CSV")->excludes(json_flag);
    app.add_option("--plot", f.plot_path, "Also draw throughput against row size to FILE.svg");
    app.add_flag("--no-baseline", f.no_baseline, "Measure the driver alone");
    add_choice(app, "--memory", f.memory_kind, "Where the rows live: host, or CUDA device memory (baseline cudaMemcpy)",
               {"host", "device"});
    add_choice(app, "--statistic", f.statistic_text,
               "Throughput of each point from the mean over its operations, or from its median operation (for a "
               "machine whose other work interrupts some of them). Under --load the median favours a side run "
               "by one thread: its median operation is one that no other thread interrupted, its speed while "
               "it runs and not its share of a core; a driver whose operation spans two threads is more "
               "often caught waiting. The mean counts every wait on both sides",
               {"mean", "median"});
    app.add_option("--load", f.load,
                   "Run N busy threads (a hash loop each) beside the driver's lanes and the baseline's for the whole "
                   "run, so that each ratio compares both under the same load; N equal to the number of cores "
                   "shows what a driver keeps of its speed on a shared machine")
        ->check(CLI::Range(0u, 1024u))
        ->capture_default_str();
    add_choice(app, "--wait", f.wait_text,
               "How the driver lane waits for each operation: host, through Operation::wait, as an engine that "
               "blocks on it (the host watches for 200 us, or 20 where the driver's operations have lately taken over "
               "50, then sleeps until the driver announces); "
               "watch, "
               "looking on the submitting thread without ever sleeping, which keeps a core busy for the whole "
               "operation. A baseline that hands its calls to a thread (Mooncake's) waits alike",
               {"host", "watch"});
    app.add_flag("--completion", f.completion,
                 "Measure submit-to-completion latency of one-row gets instead: each of --modes waited on through "
                 "the driver's notification (ABI 1.1) and polled (the same driver loaded at ABI 1.0), in one run");
    app.add_option("--modes", f.modes_text, "With --completion: the values of the driver's mode option to measure")
        ->capture_default_str();
    add_choice(app, "--metrics", f.metrics_text,
               "The host's metrics: on, off, or off,on to measure what counting costs (the driver with counting "
               "off and on, alternated in one run)",
               {"on", "off", "off,on", "on,off"});
    app.add_option("--metrics-rounds", f.metrics_rounds, "With --metrics off,on: alternated rounds per point")
        ->transform(cli::Count(1000))
        ->capture_default_str();
    app.add_option("--metrics-out", f.metrics_out, "Write the driver's metrics at the end, in Prometheus' text format");
    add_choice(app, "--tier", f.tier_text,
               "With --driver tiered: where gets and probes find their rows. top: in the top tier (written "
               "through, checked there); bottom: only in the bottom tier (removed from every tier above after "
               "the warm-up and after every timed step, untimed); promoted: only in the bottom tier, then got once "
               "through the tiered driver, which promotes them into the top tier (checked there): the gets "
               "measured are the second. The baseline is then tier 0's driver alone (top, promoted) or the "
               "bottom tier's driver alone (bottom), opened with that tier's options, its steps as far apart as "
               "the tiered driver's were (the median; none under 100 us): a bottom get waits for its promotions "
               "and takes them out, a put's keys are removed from every tier",
               {"top", "bottom", "promoted"});
}

WaitStyle wait_style(const Flags &f) { return f.wait_text == "watch" ? WaitStyle::watch : WaitStyle::host; }

// The points to measure and what each may spend, from the flags.
struct Grid {
    std::vector<uint64_t> sizes, batches, thread_counts;
    std::vector<BenchOp> ops;
    uint64_t max_memory = 0;
    Budget budget;
};

// Each flag's value as every tool reads one (kvblob/cli/quantities.hpp):
// row sizes and the buffer cap within this machine's memory. False, having
// named the flag, when one is malformed.
bool read_grid(const CLI::App &app, const Flags &f, Grid &g)
{
    g.budget.duration = Seconds(f.duration);
    const char *flag = "";
    try {
        const uint64_t memory = cli::physical_memory();
        flag = "--sizes", g.sizes = parse_sizes(f.sizes_text, memory);
        flag = "--batch", g.batches = parse_counts(f.batch_text, 1u << 20);
        flag = "--threads", g.thread_counts = parse_counts(f.threads_text, 1024);
        flag = "--ops", g.ops = parse_ops(f.ops_text);
        // The default cap may exceed a small machine: it is then the machine.
        flag = "--max-memory";
        g.max_memory = app.count("--max-memory") ? cli::parse_size(f.max_memory_text, memory)
                                                 : std::min(cli::parse_size(f.max_memory_text), memory);
        flag = "--bytes";
        if (!f.bytes_text.empty()) g.budget.bytes = cli::parse_size(f.bytes_text);
    } catch (const std::exception &e) {
        std::cerr << "kvblob-bench: " << flag << ": " << e.what() << "\n";
        return false;
    }
    return true;
}

// --completion: submit-to-completion latency of each of --modes.
int run_completion(const Flags &f, const Options &options, const Grid &g)
{
    std::vector<std::string> modes;
    std::istringstream words(f.modes_text);
    for (std::string m; std::getline(words, m, ',');)
        if (!m.empty()) modes.push_back(m);
    try {
        const auto rows = measure_completion(f.driver_spec, f.plugin.load, options, modes, g.sizes, g.budget);
        if (f.json) write_completion_json(std::cout, f.driver_spec, rows);
        else print_completion(std::cout, f.driver_spec, rows);
        for (const auto &r : rows)
            if (!r.skipped.empty()) return 1;
        return 0;
    } catch (const std::exception &e) {
        std::cerr << "kvblob-bench: " << e.what() << "\n";
        return 3;
    }
}

// What the report's header says of the run.
RunInfo info_of(const Plugin &plugin, const Options &options, const Flags &f, const Grid &g)
{
    RunInfo info;
    info.driver_name = plugin.name();
    info.driver_version = plugin.version();
    info.driver_path = plugin.path().string();
    // As shown: a secret option's value (or a password in a URL) is never
    // printed, in the header or in --json.
    for (const auto &[key, value] : plugin.redacted(options)) info.options.push_back(key + "=" + value);
    info.duration_s = f.duration;
    info.rounds = f.rounds;
    info.byte_budget = g.budget.bytes;
    info.statistic = f.statistic_text;
    info.load = f.load;
    info.wait = f.wait_text;
    return info;
}

// Every combination of the flags' lists, in the order they are measured.
std::vector<Point> points_of(const Grid &g)
{
    std::vector<Point> points;
    for (auto op : g.ops)
        for (auto t : g.thread_counts)
            for (auto b : g.batches)
                for (auto s : g.sizes) points.push_back({op, s, b, static_cast<unsigned>(t)});
    return points;
}

// Measures the driver and its baseline at every point, each one's progress
// on stderr.
class PointRun {
public:
    PointRun(const Flags &f, const Grid &g, Driver &driver, std::optional<Baseline> &baseline, const RunInfo &info,
             const DriverLaneSettings &lane_settings)
        : f_(f), g_(g), driver_(driver), baseline_(baseline), info_(info), lane_settings_(lane_settings)
    {
    }

    Result measure_point(const Point &p, size_t i, size_t count)
    {
        Result r{p, {}, std::nullopt, {}};
        const std::string label = std::string(to_string(p.op)) + " " + size_label(p.size) + " x" +
                                  std::to_string(p.batch) + " " + std::to_string(p.threads) + "t";
        std::cerr << "[" << i + 1 << "/" << count << "] " << label << ": " << info_.driver_name << std::flush;
        // Both sides' lanes are alive at once (measure_alternated): the
        // driver lanes' buffers and the rows they stored, and the
        // baseline's source and destination.
        const uint64_t memory = cli::saturating_mul(cli::saturating_mul(cli::saturating_mul(p.size, p.batch), p.threads),
                                                    baseline_ ? 4 : 2);
        if (memory > g_.max_memory) {
            r.skipped = "needs " + size_label(memory) + " of buffers, more than --max-memory " + f_.max_memory_text;
        } else if (p.op == BenchOp::probe && !driver_.has(KVBLOB_CAP_PROBE)) {
            r.skipped = "the driver does not declare probe";
        } else {
            measure_both(p, i, r);
        }
        const Statistic statistic = f_.statistic_text == "median" ? Statistic::median : Statistic::mean;
        report_as(r.driver, statistic);
        if (r.baseline) report_as(*r.baseline, statistic);
        any_errors = any_errors || r.driver.errors > 0 || (r.baseline && r.baseline->errors > 0);
        if (r.skipped.empty()) {
            std::cerr << ": " << r.driver.gbps << " GB/s";
            if (auto ratio = r.ratio()) std::cerr << ", ratio " << *ratio;
        } else {
            std::cerr << ": skipped (" << r.skipped << ")";
        }
        std::cerr << "\n";
        return r;
    }

    bool any_errors = false;

private:
    void measure_both(const Point &p, size_t i, Result &r)
    {
        try {
            DriverLaneSettings point_settings = lane_settings_;
            point_settings.run_id += "/" + std::to_string(i);  // each point's keys are its own
            const MakeLane driver_lane = [&](unsigned lane) {
                return make_driver_lane(driver_, p, lane, point_settings);
            };
            const MakeLane baseline_lane = [&](unsigned lane) { return baseline_->make_lane(p, lane); };
            const bool with_baseline = baseline_ && baseline_->supports(p.op);
            if (with_baseline) std::cerr << ", " << baseline_->name << std::flush;
            PairMeasurement m = measure_alternated(p.threads, g_.budget, f_.rounds, driver_lane,
                                                   with_baseline ? &baseline_lane : nullptr);
            r.driver = std::move(m.driver);
            r.baseline = std::move(m.baseline);
        } catch (const std::exception &e) {
            r.skipped = e.what();  // a lane that could not even start is an error too
            any_errors = true;
        }
    }

    const Flags &f_;
    const Grid &g_;
    Driver &driver_;
    std::optional<Baseline> &baseline_;
    const RunInfo &info_;
    const DriverLaneSettings &lane_settings_;
};

// The results as asked: a table, JSON or CSV, and the plot.
int write_results(const Flags &f, const RunInfo &info, const std::vector<Result> &results, bool any_errors)
{
    if (f.json) write_json(std::cout, info, results);
    else if (f.csv) write_csv(std::cout, info, results);
    else print_table(std::cout, info, results);
    if (!f.plot_path.empty()) {
        std::ofstream svg(f.plot_path);
        write_svg(svg, info, results);
        if (!svg) {
            std::cerr << "kvblob-bench: cannot write " << f.plot_path << "\n";
            return 1;
        }
    }
    return any_errors ? 1 : 0;
}

// The driver loaded and opened, against its baseline, at every point.
int run_driver_bench(const Flags &f, const Options &options, const Grid &g)
{
    std::optional<Plugin> plugin;
    std::optional<Driver> driver;
    try {
        LoadOptions load = f.plugin.load;
        load.count_metrics = f.metrics_text == "on";
        plugin.emplace(Plugin::load(f.driver_spec, load));
        driver.emplace(plugin->open(options));
    } catch (const std::exception &e) {
        std::cerr << "kvblob-bench: " << e.what() << "\n";
        return 3;
    }
    RunInfo info = info_of(*plugin, options, f, g);
    const bool device = f.memory_kind == "device";
    if (device) {
        if (const std::string why = tools::cuda_unavailable_reason(); !why.empty()) {
            std::cerr << "kvblob-bench: --memory device: " << why << "\n";
            return 3;
        }
    }
    DriverLaneSettings lane_settings;
    lane_settings.run_id = std::to_string(::getpid()) + "-" + std::to_string(::time(nullptr));
    lane_settings.null_driver = info.driver_name == "null";
    lane_settings.device_memory = device;
    lane_settings.wait = wait_style(f);

    // --tier: the tiered driver's tiers opened beside it, to place each
    // lane's rows and to measure the tier's driver alone.
    std::optional<TierStores> tiers;
    if (!f.tier_text.empty()) {
        if (info.driver_name != "tiered") {
            std::cerr << "kvblob-bench: --tier is for the tiered driver, not " << info.driver_name << "\n";
            return cli::exit_usage;
        }
        try {
            const TierPlace place = f.tier_text == "top"      ? TierPlace::top
                                   : f.tier_text == "bottom" ? TierPlace::bottom
                                                             : TierPlace::promoted;
            tiers.emplace(*plugin, f.plugin.load, options, place);
        } catch (const std::exception &e) {
            std::cerr << "kvblob-bench: " << e.what() << "\n";
            return 3;
        }
        lane_settings.placement = &*tiers;
        info.tier = tiers->place_name();
    }

    std::optional<Baseline> baseline;
    if (f.no_baseline) info.no_baseline_reason = "--no-baseline";
    else if (device) baseline = cuda_copy_baseline();
    else if (tiers) baseline = tiers->reference(lane_settings);
    else baseline = baseline_for(info.driver_name, options, wait_style(f), info.no_baseline_reason);
    if (baseline) info.baseline_name = baseline->name;

    const std::vector<Point> points = points_of(g);
    PointRun run(f, g, *driver, baseline, info, lane_settings);
    std::vector<Result> results;
    for (size_t i = 0; i < points.size(); ++i) results.push_back(run.measure_point(points[i], i, points.size()));
    if (!f.metrics_out.empty()) tools::write_metrics_file(f.metrics_out, {driver->metrics()});
    return write_results(f, info, results, run.any_errors);
}

}  // namespace

int main(int argc, char **argv)
{
    CLI::App app{"Measures a kvblob driver's throughput and latency against a baseline for its medium, in the same "
                 "run: memcpy (memory driver), raw pwrite/pread in its directory (file driver), raw pipelined "
                 "hiredis (Redis driver). The null driver measures what the host costs per row."};
    Flags f;
    add_flags(app, f);
    if (auto code = cli::parse(app, argc, argv)) return *code;
    // Before anything is measured, and for the whole run: the driver's
    // lanes and the baseline's alike run beside it.
    std::optional<BusyLoad> busy;
    if (f.load) busy.emplace(f.load);
    if (f.block_keys_mode) {
        f.block_key_settings.duration = Seconds(f.duration);
        return run_block_key_bench(f.block_key_settings, f.json, std::cout);
    }
    if (f.checksums_mode) {
        ChecksumSettings settings;
        settings.duration = Seconds(f.duration);
        try {
            settings.sizes = parse_sizes(app.count("--sizes") ? f.sizes_text : "4K,64K,1M", cli::physical_memory());
        } catch (const std::exception &e) {
            std::cerr << "kvblob-bench: --sizes: " << e.what() << "\n";
            return cli::exit_usage;
        }
        return run_checksum_bench(settings, f.json, std::cout);
    }
    if (f.driver_spec.empty()) {
        std::cerr << "kvblob-bench: --driver is required (or --block-keys, or --checksums)\n";
        return cli::exit_usage;
    }
    Grid g;
    if (!read_grid(app, f, g)) return cli::exit_usage;
    const auto options = cli::driver_options(f.plugin, "kvblob-bench");
    if (!options) return cli::exit_usage;
    if (f.completion) return run_completion(f, *options, g);
    if (f.metrics_text.find(',') != std::string::npos) {
        MetricsCostSettings settings{f.driver_spec, f.plugin.load, *options, points_of(g), g.budget, f.metrics_rounds};
        return run_metrics_cost(settings, f.json, std::cout);
    }
    return run_driver_bench(f, *options, g);
}
