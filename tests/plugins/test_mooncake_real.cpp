// The Mooncake driver against a real Mooncake store, started by
// tests/mooncake/with_mooncake.sh (KVBLOB_MOONCAKE_MASTER and friends name
// it). Without it, these tests say why and pass nothing off as checked.
#include <dlfcn.h>
#include <signal.h>

#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "plugins/driver_harness.hpp"
#include "support/process.hpp"
#include "kvblob/tools/fill_pattern.hpp"

using kvblob::OpKind;
using namespace std::chrono_literals;

namespace {

const char *env(const char *name) { return std::getenv(name); }

bool have_real_store()
{
    if (env("KVBLOB_MOONCAKE_MASTER") && env("KVBLOB_MOONCAKE_LIBRARY")) return true;
    MESSAGE("skipped: needs a real Mooncake store (run through tests/mooncake/with_mooncake.sh)");
    return false;
}

kvblob::Options real_options(const std::string &library)
{
    return {{"library", library},
            {"master_server_address", env("KVBLOB_MOONCAKE_MASTER")},
            {"metadata_server", env("KVBLOB_MOONCAKE_METADATA")},
            {"local_hostname", "127.0.0.1"},
            {"protocol", "tcp"},
            {"global_segment_size", "64M"},
            {"local_buffer_size", "16M"}};
}

std::string unique_prefix(const char *tag)
{
    return std::string(tag) + "-" + std::to_string(::getpid()) + "-" +
           std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + "/";
}

// rows keys named prefix0, prefix1, ..., each with its own size-byte slice
// of buf in order (puts and gets), or alone (probes).
Batch sliced_rows(const std::string &prefix, const Buffer &buf, uint64_t rows, uint64_t size)
{
    Batch b;
    for (uint64_t r = 0; r < rows; ++r) b.row(prefix + std::to_string(r), {make_span(buf.handle(), r * size, size)});
    return b;
}
Batch keys_only(const std::string &prefix, uint64_t rows)
{
    Batch b;
    for (uint64_t r = 0; r < rows; ++r) b.row(prefix + std::to_string(r), {});
    return b;
}

// A buffer that lives for the process: an operation whose access is
// unprovable pins its region, and the host must keep that memory (R-REG-2).
Buffer &kept_buffer(DriverHarness &h, size_t size) { return *new Buffer(h.buffer(size)); }

// Whether every thread of pid is stopped (state T in /proc/PID/task/*/stat).
// kill(SIGSTOP) returns before they are: the thread the signal picks starts
// the group stop only once it runs. On a loaded machine (the real-store
// tests beside the ThreadSanitizer suite) the master answered the put's
// first call (BatchPutStart) after kill returned, the bytes went over, and
// only its last (BatchPutEnd) timed out; the master took it on resuming, and
// 13 of the 16 rows were READY to the get below: a put that stored, not one
// that failed.
bool all_threads_stopped(pid_t pid)
{
    const std::filesystem::path tasks = "/proc/" + std::to_string(pid) + "/task";
    std::error_code ec;
    bool any = false;
    for (const auto &task : std::filesystem::directory_iterator(tasks, ec)) {
        std::ifstream stat(task.path() / "stat");
        std::string line;
        if (!std::getline(stat, line)) continue;  // the thread ended
        // "tid (comm) S ...": the state follows the last ')' (comm may hold one).
        const auto close = line.rfind(')');
        if (close == std::string::npos || close + 2 >= line.size()) return false;
        if (line[close + 2] != 'T') return false;
        any = true;
    }
    return any && !ec;
}

}  // namespace

TEST_CASE("mooncake real: each batch call the library refuses as a whole gives FAULT rows, and no READY row for data not stored")
{
    if (!have_real_store()) return;
    const char *shim = KVBLOB_MOONCAKE_SHIM;
    ::setenv("KVBLOB_MOONCAKE_REAL_LIBRARY", env("KVBLOB_MOONCAKE_LIBRARY"), 1);
    auto options = real_options(shim);
    options.emplace_back("prefix", unique_prefix("whole"));
    DriverHarness h("mooncake", options);
    // The shim the driver loaded: the next batch call reaches the real
    // library with a NULL results array, which it refuses (-1, nothing
    // written, through its own code).
    void *handle = ::dlopen(shim, RTLD_NOW | RTLD_NOLOAD);
    REQUIRE(handle != nullptr);
    auto refuse_next = reinterpret_cast<void (*)()>(::dlsym(handle, "kvblob_shim_refuse_next_batch"));
    auto refused = reinterpret_cast<int (*)()>(::dlsym(handle, "kvblob_shim_refused_count"));
    REQUIRE((refuse_next && refused));

    constexpr uint64_t rows = 16, size = 64 << 10;
    auto &src = kept_buffer(h, rows * size);
    fill_pattern(src.bytes.data(), src.bytes.size(), 11);
    Batch puts = sliced_rows("k", src, rows, size);

    refuse_next();
    auto put = h.submit(OpKind::put, puts);
    REQUIRE(put.wait(30s));
    CHECK(refused() == 1);
    for (uint64_t r = 0; r < rows; ++r) {
        CHECK(put.results()[r].result == KVBLOB_ROW_FAULT);
        CHECK(put.message(r).find("kvblob_mooncake_batch_put_from_reporting_existing failed as a whole") != std::string::npos);
    }
    CHECK(put.access() == KVBLOB_ACCESS_UNPROVABLE);
    // Nothing was stored, and nothing says it was.
    Batch probes = keys_only("k", rows);
    for (const auto &row : h.run(OpKind::probe, probes)) CHECK(row.result == KVBLOB_ROW_MISS);

    // Stored for real, then a get the library refuses: FAULT, not READY,
    // not MISS, and its access unprovable.
    auto &good = kept_buffer(h, size);
    fill_pattern(good.bytes.data(), size, 12);
    REQUIRE(h.one(OpKind::put, "stored", {make_span(good.handle(), 0, size)}) == KVBLOB_ROW_READY);
    auto &dst = kept_buffer(h, size);
    refuse_next();
    Batch gets;
    gets.row("stored", {make_span(dst.handle(), 0, size)});
    auto get = h.submit(OpKind::get, gets);
    REQUIRE(get.wait(30s));
    CHECK(refused() == 2);
    CHECK(get.results()[0].result == KVBLOB_ROW_FAULT);
    CHECK(get.access() == KVBLOB_ACCESS_UNPROVABLE);

    // A probe the library refuses: FAULT, never MISS (R-ROW-4).
    refuse_next();
    CHECK(h.one(OpKind::probe, "stored") == KVBLOB_ROW_FAULT);
    CHECK(refused() == 3);
    CHECK(h.one(OpKind::probe, "stored") == KVBLOB_ROW_READY);  // the store itself is fine
}

TEST_CASE("mooncake real: a master stopped mid-batch gives FAULT rows, never READY for data not stored, and serves again")
{
    if (!have_real_store()) return;
    const char *pid_text = env("KVBLOB_MOONCAKE_MASTER_PID");
    REQUIRE(pid_text != nullptr);
    const pid_t master = static_cast<pid_t>(std::atoi(pid_text));
    // Client-to-master RPCs give up after 2 s instead of 30 s.
    ::setenv("MC_RPC_TIMEOUT_MS", "2000", 1);
    auto options = real_options(env("KVBLOB_MOONCAKE_LIBRARY"));
    options.emplace_back("prefix", unique_prefix("stopped"));
    DriverHarness h("mooncake", options);
    constexpr uint64_t rows = 16, size = 64 << 10;
    auto &src = kept_buffer(h, rows * size);
    fill_pattern(src.bytes.data(), src.bytes.size(), 21);
    REQUIRE(h.one(OpKind::put, "warm", {make_span(src.handle(), 0, size)}) == KVBLOB_ROW_READY);

    Batch puts = sliced_rows("s", src, rows, size);
    CHECK_FALSE(all_threads_stopped(master));  // running: the look below can tell
    REQUIRE(::kill(master, SIGSTOP) == 0);
    // The kernel's own word that the stop took: every thread in state T.
    const auto stop_deadline = std::chrono::steady_clock::now() + 60s;
    bool stopped = false;
    while (!(stopped = all_threads_stopped(master)) && std::chrono::steady_clock::now() < stop_deadline)
        std::this_thread::yield();
    REQUIRE(stopped);
    auto put = h.submit(OpKind::put, puts);
    const bool done = put.wait(60s);
    REQUIRE(::kill(master, SIGCONT) == 0);
    REQUIRE(done);
    for (uint64_t r = 0; r < rows; ++r) {
        CHECK(put.results()[r].result == KVBLOB_ROW_FAULT);
        INFO(put.message(r));
    }
    MESSAGE("a put to a stopped master answers: " << put.message(0));

    // After the master resumes, no row the put did not store is READY to a
    // get, and the store serves new work.
    auto &dst = kept_buffer(h, rows * size);
    Batch gets = sliced_rows("s", dst, rows, size);
    const auto got = h.run(OpKind::get, gets);
    for (uint64_t r = 0; r < rows; ++r) {
        CHECK(got[r].result != KVBLOB_ROW_READY);
        if (got[r].result == KVBLOB_ROW_READY)
            MESSAGE("row " << r << " READY, bytes "
                           << (std::memcmp(dst.bytes.data() + r * size, src.bytes.data() + r * size, size) == 0 ? "the put's" : "NOT the put's"));
    }
    CHECK(h.one(OpKind::put, "after", {make_span(src.handle(), 0, size)}) == KVBLOB_ROW_READY);
    ::unsetenv("MC_RPC_TIMEOUT_MS");
}

// Run alone on a master of its own (ctest mooncake_real_dead_segment): the
// peer's segment must be the pool's only one, so that every row is sent to
// the dead node; and the dead segment it leaves would take other tests'
// objects until the master notices.
TEST_CASE("mooncake real: a get or a put on a segment whose node died is FAULT, never READY, and its access ended when the store answered in time")
{
    if (!have_real_store()) return;
    // A second client lends the pool its only segment; the driver lends none,
    // so its objects travel to the peer over TCP.
    ChildProcess peer({KVBLOB_MOONCAKE_PEER_BIN, env("KVBLOB_MOONCAKE_LIBRARY"), env("KVBLOB_MOONCAKE_MASTER"),
                       env("KVBLOB_MOONCAKE_METADATA"), std::to_string(64 << 20)},
                      true);
    REQUIRE(peer.started());
    std::string line;
    REQUIRE(peer.read_line(line));
    REQUIRE(line.rfind("ready ", 0) == 0);
    kvblob::Options options;
    for (auto &[k, v] : real_options(env("KVBLOB_MOONCAKE_LIBRARY")))
        options.emplace_back(k, k == "global_segment_size" ? "0" : v);
    options.emplace_back("prefix", unique_prefix("peer"));
    DriverHarness h("mooncake", options);
    constexpr uint64_t rows = 8, size = 256 << 10;
    auto &src = kept_buffer(h, rows * size);
    fill_pattern(src.bytes.data(), src.bytes.size(), 31);
    Batch stored = sliced_rows("before", src, rows, size);
    for (const auto &row : h.run(OpKind::put, stored)) REQUIRE(row.result == KVBLOB_ROW_READY);
    auto &dst = kept_buffer(h, rows * size);
    Batch fetched = sliced_rows("before", dst, rows, size);
    for (const auto &row : h.run(OpKind::get, fetched)) REQUIRE(row.result == KVBLOB_ROW_READY);
    CHECK(std::memcmp(dst.bytes.data(), src.bytes.data(), rows * size) == 0);

    // The node holding the segment dies; the master still allocates there,
    // and still lists the objects it held.
    peer.kill(SIGKILL);
    REQUIRE(peer.wait() == 128 + SIGKILL);

    // Each operation on the dead node's segment: its answer, after how long,
    // and its access. The store waits for every transfer of a batch to end
    // before it answers, unless its completion timeout gave up
    // (plugins/mooncake/README.md): an answer within the driver's bound
    // proves access ended.
    auto on_dead_segment = [&](OpKind kind, Batch &batch, bool (*row_ok)(kvblob_row_result)) {
        const auto t0 = std::chrono::steady_clock::now();
        auto op = h.submit(kind, batch);
        REQUIRE(op.wait(120s));
        const auto took = std::chrono::steady_clock::now() - t0;
        MESSAGE("a " << (kind == OpKind::get ? "get" : "put") << " on a dead node's segment answers, after "
                     << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms: " << op.message(0));
        for (uint64_t r = 0; r < rows; ++r) {
            INFO(op.message(r));
            CHECK(row_ok(op.results()[r].result));
        }
        if (took < 30s) CHECK(op.access() == KVBLOB_ACCESS_ENDED);
        else CHECK(op.access() == KVBLOB_ACCESS_UNPROVABLE);
    };
    // Their bytes are gone with the node: a get of them never says READY
    // (FAULT, or MISS once the master forgot them).
    Batch lost = sliced_rows("before", dst, rows, size);
    on_dead_segment(OpKind::get, lost, [](kvblob_row_result r) { return r != KVBLOB_ROW_READY; });
    // New objects still go there, and fail.
    Batch puts = sliced_rows("after", src, rows, size);
    on_dead_segment(OpKind::put, puts, [](kvblob_row_result r) { return r == KVBLOB_ROW_FAULT; });
    Batch probes = keys_only("after", rows);
    for (const auto &row : h.run(OpKind::probe, probes)) CHECK(row.result != KVBLOB_ROW_READY);
}
