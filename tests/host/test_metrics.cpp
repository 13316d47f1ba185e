// What the host counts for each driver (kvblob/host/metrics.hpp), checked
// against the operations a test performs: every row result, every refusal
// by its rule, bytes exact, gauges back to zero, and the Prometheus page
// whole whatever a label holds.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "fixtures/spy.hpp"
#include "kvblob/host/config.hpp"
#include "kvblob/host/metrics.hpp"
#include "plugins/driver_harness.hpp"
#include "support/kept_for_good.hpp"
#include "support/temp_dir.hpp"

using kvblob::MetricsSnapshot;
using kvblob::OpKind;
using namespace std::chrono_literals;

namespace {

uint64_t rows(const MetricsSnapshot &m, OpKind kind, kvblob_row_result r)
{
    return m.of(kind).rows[static_cast<size_t>(r)];
}

// The open drivers' snapshots with this label.
std::vector<MetricsSnapshot> labelled(const std::string &label)
{
    std::vector<MetricsSnapshot> out;
    for (auto &m : kvblob::metrics_of_open_drivers())
        if (m.label == label) out.push_back(m);
    return out;
}

// The value of the one sample line that starts with `series ` (its name and
// labels as written), or -1 when the page has none.
double sample(const std::string &page, const std::string &series)
{
    std::istringstream in(page);
    std::string line;
    double found = -1;
    int seen = 0;
    while (std::getline(in, line))
        if (line.rfind(series + " ", 0) == 0) found = std::stod(line.substr(series.size() + 1)), ++seen;
    REQUIRE_MESSAGE(seen <= 1, "series " << series << " written " << seen << " times");
    return found;
}

void write_file(const std::filesystem::path &file, const std::string &text)
{
    std::ofstream(file) << text;
}

struct Spied {
    explicit Spied(kvblob::Options options, const std::string &label = "")
        : plugin(kvblob::Plugin::load(KVBLOB_FIXTURE_DIR "/libkvblob_spy.so")),
          driver(plugin.open(std::move(options), [](kvblob_log_level, const std::string &) {}, {}, label))
    {
    }
    kvblob::Region region(std::vector<uint8_t> &memory)
    {
        kvblob_region_desc_t desc{sizeof desc, KVBLOB_MEMORY_HOST, memory.data(), memory.size(), 0, 0};
        return driver.register_region(desc);
    }
    kvblob::Plugin plugin;
    kvblob::Driver driver;
};

}  // namespace

TEST_CASE("metrics: every row result, byte and operation of the memory driver is counted once")
{
    kvblob::Plugin plugin = kvblob::Plugin::load("memory");
    kvblob::Driver driver = plugin.open({{"store", unique_store("metrics")}}, {}, {}, "counted");
    std::vector<uint8_t> src(3 * 4096, 7), dst(3 * 4096);
    kvblob_region_desc_t sd{sizeof sd, KVBLOB_MEMORY_HOST, src.data(), src.size(), 0, 0};
    kvblob_region_desc_t dd{sizeof dd, KVBLOB_MEMORY_HOST, dst.data(), dst.size(), 0, 0};
    kvblob::Region s = driver.register_region(sd), d = driver.register_region(dd);
    CHECK(driver.metrics().regions == 2);
    CHECK(driver.metrics().region_bytes == src.size() + dst.size());

    // Rows of three sizes: the READY bytes are each row's own.
    Batch put;
    put.row("m/a", {make_span(s.handle(), 0, 100)}).row("m/b", {make_span(s.handle(), 4096, 4096)});
    put.row("m/c", {make_span(s.handle(), 8192, 1000)});
    auto op = driver.submit(OpKind::put, put.get());
    CHECK(driver.metrics().ops_in_flight == 1);
    REQUIRE(op.wait(60s));
    REQUIRE(op.results().size() == 3);
    (void)op.results();  // read twice: counted once
    REQUIRE(op.release() == KVBLOB_OK);

    // Two stored keys and one absent: READY, READY, MISS.
    Batch get;
    get.row("m/a", {make_span(d.handle(), 0, 100)}).row("m/c", {make_span(d.handle(), 4096, 1000)});
    get.row("m/absent", {make_span(d.handle(), 8192, 50)});
    auto got = driver.submit(OpKind::get, get.get());
    REQUIRE(got.wait(60s));
    CHECK(got.results()[2].result == KVBLOB_ROW_MISS);
    REQUIRE(got.release() == KVBLOB_OK);

    // A probe released without its results ever read is counted too.
    Batch probe;
    probe.row("m/b").row("m/absent");
    auto probed = driver.submit(OpKind::probe, probe.get());
    REQUIRE(probed.wait(60s));
    REQUIRE(probed.release() == KVBLOB_OK);

    // Refused by the host, each under its own rule; the driver is not asked.
    Batch empty_batch, long_key, unknown_region;
    long_key.row(std::string(driver.caps().max_key_bytes + 1, 'k'), {make_span(s.handle(), 0, 10)});
    unknown_region.row("m/x", {make_span(reinterpret_cast<kvblob_region_t *>(&src), 0, 10)});
    CHECK_THROWS_AS(driver.submit(OpKind::put, empty_batch.get()), kvblob::CallError);
    CHECK_THROWS_AS(driver.submit(OpKind::put, long_key.get()), kvblob::CallError);
    CHECK_THROWS_AS(driver.submit(OpKind::get, unknown_region.get()), kvblob::CallError);

    const MetricsSnapshot m = driver.metrics();
    CHECK(m.driver == "memory");
    CHECK(m.label == "counted");
    CHECK(m.of(OpKind::put).submitted == 3);
    CHECK(m.of(OpKind::get).submitted == 2);
    CHECK(m.of(OpKind::probe).submitted == 1);
    CHECK(m.of(OpKind::remove).submitted == 0);
    CHECK(m.of(OpKind::put).refused == std::map<std::string, uint64_t>{{"R-ADM-3", 1}, {"R-ADM-4", 1}});
    CHECK(m.of(OpKind::get).refused == std::map<std::string, uint64_t>{{"R-ADM-6", 1}});
    CHECK(rows(m, OpKind::put, KVBLOB_ROW_READY) == 3);
    CHECK(rows(m, OpKind::get, KVBLOB_ROW_READY) == 2);
    CHECK(rows(m, OpKind::get, KVBLOB_ROW_MISS) == 1);
    CHECK(rows(m, OpKind::probe, KVBLOB_ROW_READY) == 1);
    CHECK(rows(m, OpKind::probe, KVBLOB_ROW_MISS) == 1);
    CHECK(m.of(OpKind::put).ready_bytes == 100 + 4096 + 1000);
    CHECK(m.of(OpKind::get).ready_bytes == 100 + 1000);
    CHECK(m.of(OpKind::probe).ready_bytes == 0);
    // One latency per admitted operation, in both histograms.
    CHECK(m.of(OpKind::put).until_final.count == 1);
    CHECK(m.of(OpKind::get).until_final.count == 1);
    CHECK(m.of(OpKind::probe).until_final.count == 1);
    CHECK(m.of(OpKind::put).access_end_after_final.count == 1);
    CHECK(m.of(OpKind::put).until_final.sum_ns > 0);
    CHECK(m.ops_in_flight == 0);
    CHECK(m.pinned_bytes == 0);
    CHECK(m.contract_breaks.empty());

    const std::string page = kvblob::prometheus_text(labelled("counted"));
    CHECK(sample(page, R"(kvblob_rows_total{driver="memory",label="counted",kind="get",result="MISS"})") == 1);
    CHECK(sample(page, R"(kvblob_ready_bytes_total{driver="memory",label="counted",kind="put"})") == 5196);
    CHECK(sample(page, R"(kvblob_operations_refused_total{driver="memory",label="counted",kind="put",rule="R-ADM-4"})") ==
          1);
    CHECK(sample(page, R"(kvblob_operation_seconds_count{driver="memory",label="counted",kind="get"})") == 1);
    CHECK(sample(page, R"(kvblob_operation_seconds_bucket{driver="memory",label="counted",kind="get",le="+Inf"})") == 1);
    CHECK(sample(page, R"(kvblob_regions{driver="memory",label="counted"})") == 2);
}

TEST_CASE("metrics: the driver's refusals, its broken answers, its log lines and pinned memory")
{
    SUBCASE("a refusal without a rule is the driver's; one that is not a refusal breaks R-ADM-1 and pins")
    {
        Spied rejecting(kvblob::Options{{"admit", "rejected"}});
        std::vector<uint8_t> memory(4096);
        auto region = rejecting.region(memory);
        Batch b;
        b.row("k", {make_span(region.handle(), 0, 4096)});
        CHECK_THROWS_AS(rejecting.driver.submit(OpKind::put, b.get()), kvblob::CallError);
        CHECK(rejecting.driver.metrics().of(OpKind::put).refused == std::map<std::string, uint64_t>{{"driver", 1}});
        CHECK(rejecting.driver.metrics().pinned_bytes == 0);

        Spied failing(kvblob::Options{{"admit", "internal"}});
        auto &held = kept_for_good<std::vector<uint8_t>>(8192);  // pinned for good below
        auto held_region = failing.region(held);
        Batch c;
        c.row("k", {make_span(held_region.handle(), 0, 4096)});
        CHECK_THROWS_AS(failing.driver.submit(OpKind::put, c.get()), kvblob::CallError);
        const auto m = failing.driver.metrics();
        CHECK(m.contract_breaks.at("R-ADM-1") == 1);
        CHECK(m.pinned_bytes == held.size());  // the whole registration, for good (R-REG-2)
    }
    SUBCASE("an answer the host corrects is counted under the rule the row's message names")
    {
        Spied wrong(kvblob::Options{{"results", "out-of-range"}});
        std::vector<uint8_t> memory(4096);
        auto region = wrong.region(memory);
        Batch b;
        b.row("k", {make_span(region.handle(), 0, 4096)});
        auto op = wrong.driver.submit(OpKind::put, b.get());
        REQUIRE(op.wait(60s));
        CHECK(op.results()[0].result == KVBLOB_ROW_FAULT);
        const std::string message = op.message(0);
        REQUIRE(op.release() == KVBLOB_OK);
        const auto m = wrong.driver.metrics();
        REQUIRE(m.contract_breaks.size() == 1);
        CHECK(message.find("broke " + m.contract_breaks.begin()->first) != std::string::npos);
        CHECK(rows(m, OpKind::put, KVBLOB_ROW_FAULT) == 1);
        CHECK(m.of(OpKind::put).ready_bytes == 0);
    }
    SUBCASE("access unprovable pins every region the operation names, counted once")
    {
        Spied unprovable(kvblob::Options{{"access", "unprovable"}});
        auto &a = kept_for_good<std::vector<uint8_t>>(4096);  // pinned for good below
        auto &b = kept_for_good<std::vector<uint8_t>>(12288);
        auto ra = unprovable.region(a), rb = unprovable.region(b);
        for (int round = 0; round < 2; ++round) {
            Batch batch;
            batch.row("k" + std::to_string(round), {make_span(ra.handle(), 0, 10)}).row("j", {make_span(rb.handle(), 0, 10)});
            auto op = unprovable.driver.submit(OpKind::get, batch.get());
            CHECK(op.access() == KVBLOB_ACCESS_UNPROVABLE);
            kept_for_good<kvblob::Operation>(std::move(op));
        }
        CHECK(unprovable.driver.metrics().pinned_bytes == a.size() + b.size());
    }
}

TEST_CASE("metrics: a label is checked, escaped on the page, and two opens sharing it are one series")
{
    CHECK_THROWS_WITH_AS(Spied({}, std::string("bad\rlabel")), doctest::Contains("control character 0x0d at byte 3"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(Spied({}, std::string("a\0b", 3)), doctest::Contains("0x00"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(Spied({}, "\xff"), doctest::Contains("not UTF-8"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(Spied({}, std::string(kvblob::max_metrics_label + 1, 'x')), doctest::Contains("at most"),
                         std::invalid_argument);

    const std::string odd = "quote \" back \\ line\nend \xc3\xa9";
    Spied one({}, odd), two({}, odd);
    std::vector<uint8_t> memory(4096);
    auto region = one.region(memory);
    const std::string page = kvblob::prometheus_text(kvblob::metrics_of_open_drivers());
    const std::string escaped = R"(label="quote \" back \\ line\nend )" "\xc3\xa9\"";
    CHECK(page.find(escaped) != std::string::npos);
    CHECK(sample(page, "kvblob_regions{driver=\"spy\"," + escaped + "}") == 1);
    CHECK(sample(page, "kvblob_operations_in_flight{driver=\"spy\"," + escaped + "}") == 0);
    // Every line is a comment or one sample: a name, labels, a value.
    std::istringstream in(page);
    std::string line;
    std::set<std::string> typed;
    while (std::getline(in, line)) {
        if (line.rfind("# TYPE ", 0) == 0) CHECK(typed.insert(line.substr(7, line.find(' ', 7) - 7)).second);
        if (line[0] == '#') continue;
        CHECK(line.rfind("kvblob_", 0) == 0);
        const size_t space = line.rfind(' ');
        CHECK_NOTHROW((void)std::stod(line.substr(space + 1)));
    }
    CHECK(typed.size() == kvblob::metric_families().size());
}

TEST_CASE("metrics: the list of open drivers follows open and close, and a scrape never waits or tears")
{
    const std::string label = "scraped-while-closing";
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> pages{0};
    std::thread scraper([&] {
        while (!stop.load()) {
            const std::string page = kvblob::prometheus_text(kvblob::metrics_of_open_drivers());
            REQUIRE(page.size() > 0);
            REQUIRE(page.back() == '\n');
            ++pages;
        }
    });
    for (int round = 0; round < 50; ++round) {
        Spied s({}, label);
        CHECK(labelled(label).size() == 1);
        CHECK(s.driver.shutdown(5s) == KVBLOB_OK);
        CHECK(labelled(label).empty());
    }
    // At least one scrape ran beside the opens and closes.
    while (pages.load() < 2) std::this_thread::yield();
    stop = true;
    scraper.join();
}

TEST_CASE("metrics: 10,000 operations in flight are counted, scraped, and released back to zero")
{
    Spied s({}, "ten-thousand");
    std::vector<uint8_t> memory(4096);
    auto region = s.region(memory);
    std::vector<kvblob::Operation> ops;
    ops.reserve(10000);
    for (int i = 0; i < 10000; ++i) {
        Batch b;
        b.row("k" + std::to_string(i), {make_span(region.handle(), 0, 64)});
        ops.push_back(s.driver.submit(OpKind::get, b.get()));
    }
    CHECK(s.driver.metrics().ops_in_flight == 10000);
    CHECK(sample(kvblob::prometheus_text(labelled("ten-thousand")),
                 R"(kvblob_operations_in_flight{driver="spy",label="ten-thousand"})") == 10000);
    for (auto &op : ops) REQUIRE(op.release() == KVBLOB_OK);  // the spy's operations end at once
    const auto m = s.driver.metrics();
    CHECK(m.ops_in_flight == 0);
    CHECK(m.of(OpKind::get).submitted == 10000);
    CHECK(rows(m, OpKind::get, KVBLOB_ROW_READY) == 10000);  // counted at release: never read
    CHECK(m.of(OpKind::get).ready_bytes == 10000 * 64);
}

TEST_CASE("metrics: a config's [metrics] label reaches the driver, and a bad one is the file's error")
{
    TempDir dir;
    const std::filesystem::path folder = dir.path();
    const auto good = folder / "good.toml";
    write_file(good, "[driver]\nname = \"memory\"\n[driver.options]\nstore = \"" + unique_store("cfg") +
                         "\"\n[metrics]\nlabel = \"prefill-0\"\n");
    const auto config = kvblob::read_driver_config(good);
    CHECK(config.metrics_label == "prefill-0");
    auto plugin = kvblob::load_configured_plugin(config);
    auto driver = kvblob::open_configured_driver(plugin, config);
    CHECK(driver.metrics().label == "prefill-0");

    const auto bad = folder / "bad.toml";
    write_file(bad, "[driver]\nname = \"memory\"\n[metrics]\nlabel = \"a\\u0007b\"\n");
    CHECK_THROWS_WITH_AS(kvblob::read_driver_config(bad), doctest::Contains("bad.toml:4:9: [metrics] label holds the control character 0x07"),
                         kvblob::ConfigError);
    const auto unknown = folder / "unknown.toml";
    write_file(unknown, "[driver]\nname = \"memory\"\n[metrics]\nport = 9464\n");
    CHECK_THROWS_WITH_AS(kvblob::read_driver_config(unknown), doctest::Contains("unknown key 'port' in [metrics]"),
                         kvblob::ConfigError);
}
