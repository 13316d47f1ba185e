// The bundled drivers declare R-ACC-2's bound (KVBLOB_CAP_ACCESS_BOUND,
// kvblob_caps_t.access_end_bound_ns) where the negotiated ABI lays it out:
// at 1.1, and never at 1.0, where they set no 1.1 bit and write nothing past
// the 1.0 record. The memory driver's access_delay_ms is the bound it
// declares (plugins/memory/access_timer.hpp).
#include <dlfcn.h>
#include <doctest/doctest.h>
#include <stdlib.h>

#include <kvblob/kvblob.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace {

constexpr uint64_t canary = 0xA5A5A5A5A5A5A5A5ull;

// What the driver in library declares when opened negotiated at exactly
// version with options, straight through its table, as a host of that
// version would: caps zero-filled to the version's size, the rest a canary.
kvblob_caps_t caps_at(const std::string &library, uint32_t version,
                      const std::vector<std::pair<std::string, std::string>> &options)
{
    void *handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);  // kept: a driver's threads may outlive close
    REQUIRE_MESSAGE(handle, dlerror());
    auto entry = reinterpret_cast<kvblob_negotiate_fn>(dlsym(handle, KVBLOB_ENTRY_SYMBOL));
    REQUIRE(static_cast<bool>(entry));
    kvblob_negotiation_t n{};
    n.struct_size = sizeof n;
    n.host_min_abi_version = n.host_max_abi_version = version;
    REQUIRE(entry(&n) == KVBLOB_OK);
    REQUIRE(n.chosen_abi_version == version);
    std::vector<kvblob_option_t> opts;
    for (const auto &[k, v] : options) opts.push_back({sizeof(kvblob_option_t), 0, k.c_str(), v.c_str()});
    kvblob_caps_t caps{};
    caps.struct_size = version >= KVBLOB_ABI_1_1 ? sizeof caps : KVBLOB_CAPS_SIZE_1_0;
    if (version < KVBLOB_ABI_1_1) caps.access_end_bound_ns = canary;  // past the 1.0 record
    kvblob_host_services_t host{};
    host.struct_size = version >= KVBLOB_ABI_1_1 ? sizeof host : KVBLOB_HOST_SERVICES_SIZE_1_0;
    const kvblob_open_args_t args{sizeof args, version, opts.data(), opts.size(), &host};
    kvblob_driver_t *d = nullptr;
    char err[256] = {0};
    REQUIRE_MESSAGE(n.plugin->open(&args, &caps, &d, err, sizeof err) == KVBLOB_OK, err);
    CHECK(n.plugin->drain(d, 10'000'000'000ull) == KVBLOB_OK);
    CHECK(n.plugin->close(d) == KVBLOB_OK);
    return caps;
}

const std::string memory = std::string(KVBLOB_PLUGIN_DIR) + "/libkvblob_memory.so";

}  // namespace

TEST_CASE("memory driver: access_delay_ms is the access-end bound it declares at ABI 1.1, none at 1.0")
{
    const auto delayed = caps_at(memory, KVBLOB_ABI_1_1, {{"access_delay_ms", "50"}});
    CHECK((delayed.flags & KVBLOB_CAP_ACCESS_BOUND) != 0);
    CHECK(delayed.access_end_bound_ns == 50'000'000ull);
    // By default access ends before results are final: a bound of 0.
    const auto plain = caps_at(memory, KVBLOB_ABI_1_1, {});
    CHECK((plain.flags & KVBLOB_CAP_ACCESS_BOUND) != 0);
    CHECK(plain.access_end_bound_ns == 0);
    // In controlled mode access ends when a test says: no bound.
    const auto controlled = caps_at(memory, KVBLOB_ABI_1_1, {{"mode", "controlled"}});
    CHECK((controlled.flags & KVBLOB_CAP_ACCESS_BOUND) == 0);
    const auto old = caps_at(memory, KVBLOB_ABI_1_0, {{"access_delay_ms", "50"}});
    CHECK((old.flags & ~KVBLOB_CAP_KNOWN_MASK_1_0) == 0);
    CHECK(old.access_end_bound_ns == canary);
}

TEST_CASE("file driver: an access-end bound of 0 at ABI 1.1, none at 1.0")
{
    char root[] = "/tmp/kvblob-access-bound-XXXXXX";
    REQUIRE(mkdtemp(root));
    const auto now = caps_at(std::string(KVBLOB_PLUGIN_DIR) + "/libkvblob_file.so", KVBLOB_ABI_1_1, {{"root", root}});
    CHECK((now.flags & KVBLOB_CAP_ACCESS_BOUND) != 0);
    CHECK(now.access_end_bound_ns == 0);
    const auto old = caps_at(std::string(KVBLOB_PLUGIN_DIR) + "/libkvblob_file.so", KVBLOB_ABI_1_0, {{"root", root}});
    CHECK((old.flags & ~KVBLOB_CAP_KNOWN_MASK_1_0) == 0);
    CHECK(old.access_end_bound_ns == canary);
    std::filesystem::remove_all(root);
}

TEST_CASE("memory driver: a negative access_delay_ms is refused, naming it (R-OPN-1)")
{
    void *handle = dlopen(memory.c_str(), RTLD_NOW | RTLD_LOCAL);
    REQUIRE(handle);
    auto entry = reinterpret_cast<kvblob_negotiate_fn>(dlsym(handle, KVBLOB_ENTRY_SYMBOL));
    REQUIRE(static_cast<bool>(entry));
    kvblob_negotiation_t n{};
    n.struct_size = sizeof n;
    n.host_min_abi_version = KVBLOB_ABI_VERSION_OLDEST;
    n.host_max_abi_version = KVBLOB_ABI_VERSION;
    REQUIRE(entry(&n) == KVBLOB_OK);
    const kvblob_option_t bad{sizeof(kvblob_option_t), 0, "access_delay_ms", "-5"};
    kvblob_caps_t caps{};
    caps.struct_size = sizeof caps;
    const kvblob_open_args_t args{sizeof args, n.chosen_abi_version, &bad, 1, nullptr};
    kvblob_driver_t *d = nullptr;
    char err[256] = {0};
    CHECK(n.plugin->open(&args, &caps, &d, err, sizeof err) == KVBLOB_E_BAD_OPTION);
    CHECK(std::string(err).find("access_delay_ms") != std::string::npos);
}
