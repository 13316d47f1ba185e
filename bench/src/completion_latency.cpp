#include "completion_latency.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <ostream>
#include <unistd.h>

#include "kvblob/host/batch.hpp"

namespace kvblob::bench {

namespace {

using Clock = std::chrono::steady_clock;

// Operations run untimed first, so that the store, the allocator and the
// driver's threads are warm.
constexpr int warmup_ops = 200;

double percentile_us(std::vector<double> &us, double q)
{
    if (us.empty()) return 0;
    const size_t i = std::min(us.size() - 1, static_cast<size_t>(q * static_cast<double>(us.size())));
    std::nth_element(us.begin(), us.begin() + static_cast<std::ptrdiff_t>(i), us.end());
    return us[i];
}

bool has_option(const Plugin &plugin, const char *name)
{
    for (const auto &o : plugin.options())
        if (o.name && std::strcmp(o.name, name) == 0) return true;
    return false;
}

CompletionRow measure_one(const std::string &spec, const LoadOptions &base, const Options &options,
                          const std::string &mode, bool notified, uint64_t size, const Budget &budget)
{
    CompletionRow row{mode, notified ? "notified" : "polled", size, 0, 0, 0, 0, {}};
    LoadOptions load = base;
    // Polled: the driver as a 1.0 host sees it, so the host's own wait polls.
    load.newest_abi_version = notified ? KVBLOB_ABI_VERSION : KVBLOB_ABI_1_0;
    auto plugin = Plugin::load(spec, load);
    Options opts = options;
    if (mode != "-") {
        std::erase_if(opts, [](const auto &kv) { return kv.first == "mode"; });
        opts.emplace_back("mode", mode);
    }
    auto driver = plugin.open(opts);
    if (notified && !driver.has(KVBLOB_CAP_NOTIFY)) {
        row.skipped = "the driver does not declare notify";
        return row;
    }
    if (!notified && driver.has(KVBLOB_CAP_NOTIFY)) {
        row.skipped = "the driver declares notify at ABI 1.0";
        return row;
    }
    std::vector<uint8_t> src(size, 0x5A), dst(size, 0);
    auto rs = driver.register_region({sizeof(kvblob_region_desc_t), KVBLOB_MEMORY_HOST, src.data(), size, 0, 0});
    auto rd = driver.register_region({sizeof(kvblob_region_desc_t), KVBLOB_MEMORY_HOST, dst.data(), size, 0, 0});
    const std::string key = "kvblob-bench-completion/" + std::to_string(::getpid()) + "/" + mode + "/" + row.wait +
                            "/" + std::to_string(size);
    Batch put, get;
    put.row(key, {make_span(rs.handle(), 0, size)});
    get.row(key, {make_span(rd.handle(), 0, size)});
    {
        auto op = driver.submit(OpKind::put, put.get());
        if (!op.wait(std::chrono::seconds(30)) || op.results().at(0).result != KVBLOB_ROW_READY) {
            row.skipped = "the put of the key did not come back READY";
            return row;
        }
    }
    std::vector<double> us;
    const auto end_at = Clock::now() + std::chrono::duration_cast<Clock::duration>(budget.duration);
    for (int i = 0;; ++i) {
        const auto t0 = Clock::now();
        auto op = driver.submit(OpKind::get, get.get());
        const bool settled = op.wait(std::chrono::seconds(30));
        const auto t1 = Clock::now();
        if (!settled || op.results().at(0).result != KVBLOB_ROW_READY) {
            row.skipped = "a get did not come back READY within 30 s";
            return row;
        }
        op.release();
        if (i < warmup_ops) continue;
        us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
        if (t1 >= end_at) break;
    }
    Batch remove;
    remove.row(key);
    if (driver.has(KVBLOB_CAP_REMOVE)) driver.submit(OpKind::remove, remove.get()).wait(std::chrono::seconds(30));
    row.ops = us.size();
    double sum = 0;
    for (double v : us) sum += v;
    row.avg_us = sum / static_cast<double>(us.size());
    row.p50_us = percentile_us(us, 0.50);
    row.p99_us = percentile_us(us, 0.99);
    return row;
}

const CompletionRow *find(const std::vector<CompletionRow> &rows, const std::string &mode, const char *wait,
                          uint64_t size)
{
    for (const auto &r : rows)
        if (r.mode == mode && r.wait == wait && r.size == size && r.skipped.empty()) return &r;
    return nullptr;
}

}  // namespace

std::vector<CompletionRow> measure_completion(const std::string &driver_spec, const LoadOptions &load,
                                              const Options &options, const std::vector<std::string> &modes,
                                              const std::vector<uint64_t> &sizes, const Budget &budget)
{
    // Only a driver that has a mode option is measured in several modes.
    std::vector<std::string> measured = modes;
    if (!has_option(Plugin::load(driver_spec, load), "mode")) measured = {"-"};
    std::vector<CompletionRow> rows;
    for (uint64_t size : sizes)
        for (const auto &mode : measured)
            for (bool notified : {true, false}) {
                std::cerr << "completion " << size_label(size) << " " << mode << " "
                          << (notified ? "notified" : "polled") << std::flush;
                rows.push_back(measure_one(driver_spec, load, options, mode, notified, size, budget));
                const auto &r = rows.back();
                if (r.skipped.empty()) std::cerr << ": p50 " << r.p50_us << " us, p99 " << r.p99_us << " us\n";
                else std::cerr << ": skipped (" << r.skipped << ")\n";
            }
    return rows;
}

void print_completion(std::ostream &out, const std::string &driver, const std::vector<CompletionRow> &rows)
{
    out << "completion latency (" << driver
        << "): submit to results final and access ended, one-row get, one operation at a time\n"
           "notified: loaded at ABI 1.1, the host's wait sleeps until the driver announces; "
           "polled: the same driver loaded at ABI 1.0, the host's wait polls\n";
    out << std::left << std::setw(8) << "size" << std::setw(12) << "mode" << std::setw(10) << "wait" << std::right
        << std::setw(9) << "ops" << std::setw(11) << "p50 us" << std::setw(11) << "p99 us" << std::setw(11)
        << "avg us" << "\n";
    out << std::fixed << std::setprecision(2);
    for (const auto &r : rows) {
        out << std::left << std::setw(8) << size_label(r.size) << std::setw(12) << r.mode << std::setw(10) << r.wait;
        if (!r.skipped.empty()) {
            out << "skipped: " << r.skipped << "\n";
            continue;
        }
        out << std::right << std::setw(9) << r.ops << std::setw(11) << r.p50_us << std::setw(11) << r.p99_us
            << std::setw(11) << r.avg_us << "\n";
    }
    // The comparisons the figures are for, each within one run.
    for (const auto &r : rows) {
        if (r.wait != std::string("notified") || !r.skipped.empty()) continue;
        if (const auto *polled = find(rows, r.mode, "polled", r.size))
            out << size_label(r.size) << " " << r.mode << ": notified p50 " << r.p50_us << " us, polled p50 "
                << polled->p50_us << " us (polled / notified " << std::setprecision(1)
                << polled->p50_us / r.p50_us << "x)" << std::setprecision(2) << "\n";
        if (r.mode != "blocking")
            if (const auto *blocking = find(rows, "blocking", "notified", r.size))
                out << size_label(r.size) << " " << r.mode << " notified p50 is " << r.p50_us - blocking->p50_us
                    << " us above blocking notified (goal: within 2 us)\n";
    }
}

void write_completion_json(std::ostream &out, const std::string &driver, const std::vector<CompletionRow> &rows)
{
    out << "{\"driver\":\"" << driver << "\",\"completion\":[";
    bool first = true;
    for (const auto &r : rows) {
        out << (first ? "" : ",") << "{\"size\":" << r.size << ",\"mode\":\"" << r.mode << "\",\"wait\":\"" << r.wait
            << "\"";
        if (r.skipped.empty())
            out << ",\"ops\":" << r.ops << ",\"p50_us\":" << r.p50_us << ",\"p99_us\":" << r.p99_us
                << ",\"avg_us\":" << r.avg_us;
        else
            out << ",\"skipped\":\"" << r.skipped << "\"";
        out << "}";
        first = false;
    }
    out << "]}\n";
}

}  // namespace kvblob::bench
