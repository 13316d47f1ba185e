// mooncake-compare: runs one list of scenarios through Mooncake store's C
// API against two libraries, the fake (tests/fakes/mooncake) and a real one
// on a running master, and fails where they answer differently. The fake
// stands in for the real store in the tests that stage failures: it must say
// what the real store says.
//
//   mooncake-compare FAKE_LIBRARY REAL_LIBRARY MASTER METADATA_URL LEASE_MS
//
// Prints one line per scenario with both answers; exit 0 when all agree,
// 1 when one differs, 2 on usage, 3 when a library cannot be set up.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <unistd.h>
#include <utility>
#include <vector>

#include "store_api.hpp"

namespace {

using kvblob::mooncake::ReplicateConfig;
using kvblob::mooncake::StoreApi;
using kvblob::mooncake::StoreLibrary;

constexpr size_t kSize = 64 << 10;

// One library's answers to the scenario list, in order.
std::vector<std::pair<std::string, std::string>> run(const StoreApi &a, const std::string &master,
                                                     const std::string &metadata, long lease_ms, const std::string &tag)
{
    std::vector<std::pair<std::string, std::string>> out;
    auto note = [&](const std::string &name, long long v) { out.emplace_back(name, std::to_string(v)); };
    void *s = a.create();
    const int setup = a.setup(s, "127.0.0.1", metadata.c_str(), 64 << 20, 16 << 20, "tcp", "", master.c_str());
    note("setup", setup);
    if (setup != 0) return out;
    std::vector<uint8_t> region(4 * kSize);
    for (size_t i = 0; i < region.size(); ++i) region[i] = static_cast<uint8_t>(i * 7 + 1);
    note("register_buffer", a.register_buffer(s, region.data(), region.size()));
    note("register_buffer overlapping", a.register_buffer(s, region.data() + kSize, kSize));

    const std::string k1 = tag + "/one", absent = tag + "/absent", fresh = tag + "/fresh", fresh2 = tag + "/fresh2";
    ReplicateConfig config{1, 0, 0, nullptr, 0};
    // Through Mooncake's batch_put_from, or (reporting) the put that
    // scripts/build-mooncake adds, which the driver calls.
    auto put = [&](const std::string &key, void *buf, size_t size, bool reporting = false) {
        const char *keys[] = {key.c_str()};
        void *bufs[] = {buf};
        size_t sizes[] = {size};
        int result = INT32_MIN;
        const int rc = (reporting ? a.batch_put_reporting_existing : a.batch_put_from)(s, keys, bufs, sizes, 1,
                                                                                      &config, &result);
        return rc != 0 ? "call " + std::to_string(rc) : std::to_string(result);
    };
    auto get = [&](const std::string &key, void *buf, size_t size) {
        const char *keys[] = {key.c_str()};
        void *bufs[] = {buf};
        size_t sizes[] = {size};
        int64_t result = INT64_MIN;
        const int rc = a.batch_get_into(s, keys, bufs, sizes, 1, &result);
        return rc != 0 ? "call " + std::to_string(rc) : std::to_string(result);
    };
    auto exist = [&](const std::string &key) {
        const char *keys[] = {key.c_str()};
        int result = INT32_MIN;
        const int rc = a.batch_is_exist(s, keys, 1, &result);
        return rc != 0 ? "call " + std::to_string(rc) : std::to_string(result);
    };
    uint8_t *src = region.data(), *dst = region.data() + 2 * kSize;

    // The driver's question before a put: an empty span, no buffer.
    out.emplace_back("empty get, absent", get(k1, nullptr, 0));
    out.emplace_back("put new key", put(k1, src, kSize));
    out.emplace_back("empty get, stored", get(k1, nullptr, 0));
    out.emplace_back("remove right after empty get", std::to_string(a.remove(s, k1.c_str(), 0)));
    out.emplace_back("put same key again", put(k1, src + 1, kSize));
    out.emplace_back("put same key again, reporting existing", put(k1, src + 1, kSize, true));
    out.emplace_back("put another key, reporting existing", put(fresh2, src + kSize, kSize, true));
    out.emplace_back("remove right after reporting put", std::to_string(a.remove(s, fresh2.c_str(), 0)));
    out.emplace_back("put another key", put(fresh, src + kSize, kSize));
    out.emplace_back("remove right after put", std::to_string(a.remove(s, fresh.c_str(), 0)));
    out.emplace_back("is_exist stored", exist(k1));
    out.emplace_back("is_exist absent", exist(absent));
    out.emplace_back("get exact span", get(k1, dst, kSize));
    out.emplace_back("get bytes equal", std::to_string(std::memcmp(dst, src, kSize) == 0));
    out.emplace_back("get larger span", get(k1, dst, kSize + 4096));
    std::memset(dst, 0xEE, kSize);
    out.emplace_back("get smaller span", get(k1, dst, kSize - 1));
    out.emplace_back("smaller span untouched", std::to_string(dst[0] == 0xEE && dst[kSize - 2] == 0xEE));
    out.emplace_back("get absent", get(absent, dst, kSize));
    note("get_size stored", a.get_size(s, k1.c_str()));
    note("get_size absent", a.get_size(s, absent.c_str()));
    note("remove while leased", a.remove(s, k1.c_str(), 0));
    note("remove absent", a.remove(s, absent.c_str(), 0));
    // The lease runs out: a remove is retried until it does (bounded).
    int removed = a.remove(s, k1.c_str(), 0);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(lease_ms * 20 + 2000);
    while (removed == -706 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));  // a retry's pause
        removed = a.remove(s, k1.c_str(), 0);
    }
    note("remove once the lease ran out", removed);
    out.emplace_back("get after remove", get(k1, dst, kSize));
    {
        const char *keys[] = {k1.c_str()};
        void *bufs[] = {src};
        size_t sizes[] = {kSize};
        note("batch_put_from, results NULL", a.batch_put_from(s, keys, bufs, sizes, 1, &config, nullptr));
        note("put reporting existing, results NULL",
             a.batch_put_reporting_existing(s, keys, bufs, sizes, 1, &config, nullptr));
        note("batch_get_into, results NULL", a.batch_get_into(s, keys, bufs, sizes, 1, nullptr));
        note("batch_is_exist, results NULL", a.batch_is_exist(s, keys, 1, nullptr));
    }
    out.emplace_back("is_exist after refused put", exist(k1));
    note("unregister_buffer", a.unregister_buffer(s, region.data()));
    a.destroy(s);
    return out;
}

}  // namespace

int main(int argc, char **argv)
{
    if (argc != 6) {
        std::fprintf(stderr, "usage: mooncake-compare FAKE_LIBRARY REAL_LIBRARY MASTER METADATA_URL LEASE_MS\n");
        return 2;
    }
    // Loaded as the driver loads them: a library of another Mooncake
    // version is refused here too.
    std::unique_ptr<StoreLibrary> fake_library, real_library;
    try {
        fake_library = std::make_unique<StoreLibrary>(argv[1]);
        real_library = std::make_unique<StoreLibrary>(argv[2]);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "mooncake-compare: %s\n", e.what());
        return 3;
    }
    if (!fake_library->api().remove || !real_library->api().remove) {
        std::fprintf(stderr, "mooncake-compare: a library has no mooncake_store_remove\n");
        return 3;
    }
    const StoreApi &fake = fake_library->api(), &real = real_library->api();
    const long lease_ms = std::atol(argv[5]);
    // The fake grants the leases the master does.
    ::setenv("KVBLOB_FAKE_MOONCAKE_LEASE_MS", argv[5], 1);
    const std::string tag = "compare-" + std::to_string(::getpid());
    const auto f = run(fake, "compare-fake-" + std::to_string(::getpid()), "", lease_ms, tag);
    const auto r = run(real, argv[3], argv[4], lease_ms, tag);
    if (r.empty() || r[0].second != "0") {
        std::fprintf(stderr, "mooncake-compare: the real library's setup failed (%s)\n", r.empty() ? "?" : r[0].second.c_str());
        return 3;
    }
    int differ = 0, same = 0;
    for (size_t i = 0; i < std::max(f.size(), r.size()); ++i) {
        const std::string name = i < r.size() ? r[i].first : f[i].first;
        const std::string fa = i < f.size() ? f[i].second : "(none)", ra = i < r.size() ? r[i].second : "(none)";
        const bool ok = fa == ra;
        (ok ? same : differ)++;
        std::printf("%-34s fake %-10s real %-10s %s\n", name.c_str(), fa.c_str(), ra.c_str(), ok ? "" : "DIFFERENT");
    }
    std::printf("%d passed, %d failed\n", same, differ);
    return differ ? 1 : 0;
}
