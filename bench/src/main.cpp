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
#include "busy_load.hpp"
#include "completion_latency.hpp"
#include "driver_lane.hpp"
#include "kvblob/tools/cuda_device.hpp"
#include "lane_memory.hpp"
#include "kvblob/cli/plugin_flags.hpp"
#include "kvblob/cli/quantities.hpp"
#include "kvblob/host/load_error.hpp"
#include "kvblob/host/version.hpp"
#include "report.hpp"

using namespace kvblob;
using namespace kvblob::bench;

int main(int argc, char **argv)
{
    CLI::App app{"Measures a kvblob driver's throughput and latency against a baseline for its medium, in the same "
                 "run: memcpy (memory driver), raw pwrite/pread in its directory (file driver), raw pipelined "
                 "hiredis (Redis driver). The null driver measures what the host costs per row."};
    app.set_version_flag("--version", tool_version_banner("kvblob-bench"));
    std::string driver_spec, sizes_text = "4K,64K,256K,1M,16M", batch_text = "32", threads_text = "1",
                             ops_text = "put,get", plot_path, max_memory_text = "2G";
    double duration = 0.5;
    std::string bytes_text;
    bool json = false, csv = false, no_baseline = false;
    std::string memory_kind = "host", statistic_text = "mean";
    cli::PluginFlags flags;
    auto *driver_flag =
        app.add_option("-d,--driver", driver_spec, "Plugin path or driver name (memory, file, redis, null)");
    bool block_keys_mode = false;
    BlockKeySettings block_key_settings;
    app.add_flag("--block-keys", block_keys_mode,
                 "Measure kvblob::block_keys instead of a driver: each hash over one request, against that hash "
                 "run once over the same token bytes")
        ->excludes(driver_flag);
    app.add_option("--request-tokens", block_key_settings.request_tokens, "With --block-keys: tokens in the request")
        ->transform(cli::Count(uint64_t{1} << 30))
        ->capture_default_str();
    app.add_option("--block-tokens", block_key_settings.tokens_per_block, "With --block-keys: tokens per block")
        ->transform(cli::Count(uint64_t{1} << 20))
        ->capture_default_str();
    cli::add_plugin_flags(app, flags);
    app.add_option("--sizes", sizes_text, "Row sizes (comma-separated, K/M/G suffixes)")->capture_default_str();
    app.add_option("--batch", batch_text, "Rows per operation (comma-separated)")->capture_default_str();
    app.add_option("--threads", threads_text, "Threads submitting at once (comma-separated)")->capture_default_str();
    app.add_option("--ops", ops_text, "Operations: put, get, probe (comma-separated)")->capture_default_str();
    app.add_option("--duration", duration, "Seconds per point, for the driver and again for the baseline")
        ->check(cli::Seconds())
        ->capture_default_str();
    app.add_option("--bytes", bytes_text, "Byte budget per point (stops at whichever budget is spent first)");
    app.add_option("--max-memory", max_memory_text, "Skip points whose buffers would exceed this")
        ->capture_default_str();
    auto *json_flag = app.add_flag("--json", json, "Print the results as JSON (fields named *ratio* hold the ratios)");
    app.add_flag("--csv", csv, "Print the results as CSV")->excludes(json_flag);
    app.add_option("--plot", plot_path, "Also draw throughput against row size to FILE.svg");
    app.add_flag("--no-baseline", no_baseline, "Measure the driver alone");
    app.add_option("--memory", memory_kind, "Where the rows live: host, or CUDA device memory (baseline cudaMemcpy)")
        ->check(CLI::IsMember({"host", "device"}))
        ->capture_default_str();
    app.add_option("--statistic", statistic_text,
                   "Throughput of each point from the mean over its operations, or from its median operation (for a "
                   "machine whose other work interrupts some of them; both sides alike)")
        ->check(CLI::IsMember({"mean", "median"}))
        ->capture_default_str();
    unsigned load = 0;
    app.add_option("--load", load,
                   "Run N busy threads (a hash loop each) beside the driver's lanes and the baseline's for the whole "
                   "run, so that each ratio compares both under the same load; N equal to the number of cores "
                   "shows what a driver keeps of its speed on a shared machine")
        ->check(CLI::Range(0u, 1024u))
        ->capture_default_str();
    bool completion = false;
    std::string modes_text = "blocking,background";
    app.add_flag("--completion", completion,
                 "Measure submit-to-completion latency of one-row gets instead: each of --modes waited on through "
                 "the driver's notification (ABI 1.1) and polled (the same driver loaded at ABI 1.0), in one run");
    app.add_option("--modes", modes_text, "With --completion: the values of the driver's mode option to measure")
        ->capture_default_str();
    if (auto code = cli::parse(app, argc, argv)) return *code;
    // Before anything is measured, and for the whole run: the driver's
    // lanes and the baseline's alike run beside it.
    std::optional<BusyLoad> busy;
    if (load) busy.emplace(load);
    if (block_keys_mode) {
        block_key_settings.duration = Seconds(duration);
        return run_block_key_bench(block_key_settings, json, std::cout);
    }
    if (driver_spec.empty()) {
        std::cerr << "kvblob-bench: --driver is required (or --block-keys)\n";
        return cli::exit_usage;
    }
    const Statistic statistic = statistic_text == "median" ? Statistic::median : Statistic::mean;

    std::vector<uint64_t> sizes, batches, thread_counts;
    std::vector<BenchOp> ops;
    uint64_t max_memory = 0;
    Budget budget;
    budget.duration = Seconds(duration);
    // Each flag's value as every tool reads one (kvblob/cli/quantities.hpp):
    // row sizes and the buffer cap within this machine's memory.
    const char *flag = "";
    try {
        const uint64_t memory = cli::physical_memory();
        flag = "--sizes", sizes = parse_sizes(sizes_text, memory);
        flag = "--batch", batches = parse_counts(batch_text, 1u << 20);
        flag = "--threads", thread_counts = parse_counts(threads_text, 1024);
        flag = "--ops", ops = parse_ops(ops_text);
        // The default cap may exceed a small machine: it is then the machine.
        flag = "--max-memory";
        max_memory = app.count("--max-memory") ? cli::parse_size(max_memory_text, memory)
                                               : std::min(cli::parse_size(max_memory_text), memory);
        flag = "--bytes";
        if (!bytes_text.empty()) budget.bytes = cli::parse_size(bytes_text);
    } catch (const std::exception &e) {
        std::cerr << "kvblob-bench: " << flag << ": " << e.what() << "\n";
        return cli::exit_usage;
    }
    const auto options = cli::driver_options(flags, "kvblob-bench");
    if (!options) return cli::exit_usage;
    if (completion) {
        std::vector<std::string> modes;
        std::istringstream words(modes_text);
        for (std::string m; std::getline(words, m, ',');)
            if (!m.empty()) modes.push_back(m);
        try {
            const auto rows = measure_completion(driver_spec, flags.load, *options, modes, sizes, budget);
            if (json) write_completion_json(std::cout, driver_spec, rows);
            else print_completion(std::cout, driver_spec, rows);
            for (const auto &r : rows)
                if (!r.skipped.empty()) return 1;
            return 0;
        } catch (const std::exception &e) {
            std::cerr << "kvblob-bench: " << e.what() << "\n";
            return 3;
        }
    }

    std::optional<Plugin> plugin;
    std::optional<Driver> driver;
    try {
        plugin.emplace(Plugin::load(driver_spec, flags.load));
        driver.emplace(plugin->open(*options));
    } catch (const std::exception &e) {
        std::cerr << "kvblob-bench: " << e.what() << "\n";
        return 3;
    }
    RunInfo info;
    info.driver_name = plugin->name();
    info.driver_version = plugin->version();
    info.driver_path = plugin->path().string();
    // As shown: a secret option's value (or a password in a URL) is never
    // printed, in the header or in --json.
    for (const auto &[key, value] : plugin->redacted(*options)) info.options.push_back(key + "=" + value);
    info.duration_s = duration;
    info.byte_budget = budget.bytes;
    info.statistic = statistic_text;
    info.load = load;
    const bool device = memory_kind == "device";
    if (device) {
        if (const std::string why = tools::cuda_unavailable_reason(); !why.empty()) {
            std::cerr << "kvblob-bench: --memory device: " << why << "\n";
            return 3;
        }
    }
    std::optional<Baseline> baseline;
    if (no_baseline) info.no_baseline_reason = "--no-baseline";
    else if (device) baseline = cuda_copy_baseline();
    else baseline = baseline_for(info.driver_name, *options, info.no_baseline_reason);
    if (baseline) info.baseline_name = baseline->name;

    DriverLaneSettings lane_settings;
    lane_settings.run_id = std::to_string(::getpid()) + "-" + std::to_string(::time(nullptr));
    lane_settings.null_driver = info.driver_name == "null";
    lane_settings.device_memory = device;

    std::vector<Point> points;
    for (auto op : ops)
        for (auto t : thread_counts)
            for (auto b : batches)
                for (auto s : sizes) points.push_back({op, s, b, static_cast<unsigned>(t)});

    std::vector<Result> results;
    bool any_errors = false;
    for (size_t i = 0; i < points.size(); ++i) {
        const Point &p = points[i];
        Result r{p, {}, std::nullopt, {}};
        const std::string label = std::string(to_string(p.op)) + " " + size_label(p.size) + " x" +
                                  std::to_string(p.batch) + " " + std::to_string(p.threads) + "t";
        std::cerr << "[" << i + 1 << "/" << points.size() << "] " << label << ": " << info.driver_name << std::flush;
        const uint64_t memory =
            cli::saturating_mul(cli::saturating_mul(cli::saturating_mul(p.size, p.batch), p.threads), baseline ? 3 : 1);
        if (memory > max_memory) {
            r.skipped = "needs " + size_label(memory) + " of buffers, more than --max-memory " + max_memory_text;
        } else if (p.op == BenchOp::probe && !driver->has(KVBLOB_CAP_PROBE)) {
            r.skipped = "the driver does not declare probe";
        } else {
            try {
                DriverLaneSettings point_settings = lane_settings;
                point_settings.run_id += "/" + std::to_string(i);  // each point's keys are its own
                r.driver = measure(p.threads, budget, [&](unsigned lane) {
                    return make_driver_lane(*driver, p, lane, point_settings);
                });
                if (baseline && baseline->supports(p.op)) {
                    std::cerr << ", " << baseline->name << std::flush;
                    r.baseline = measure(p.threads, budget, [&](unsigned lane) { return baseline->make_lane(p, lane); });
                }
            } catch (const std::exception &e) {
                r.skipped = e.what();  // a lane that could not even start is an error too
                any_errors = true;
            }
        }
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
        results.push_back(std::move(r));
    }

    if (json) write_json(std::cout, info, results);
    else if (csv) write_csv(std::cout, info, results);
    else print_table(std::cout, info, results);
    if (!plot_path.empty()) {
        std::ofstream svg(plot_path);
        write_svg(svg, info, results);
        if (!svg) {
            std::cerr << "kvblob-bench: cannot write " << plot_path << "\n";
            return 1;
        }
    }
    return any_errors ? 1 : 0;
}
