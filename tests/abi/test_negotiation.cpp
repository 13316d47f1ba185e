// Every bundled driver, the vendor template and a fixture answer a table of
// offered ABI ranges the way abi-guide rule 5 says (the Vulkan loader tests
// its interface versions the same way): the highest version both sides
// speak, a table laid out for it, or KVBLOB_E_UNSUPPORTED when the ranges
// do not meet. Then the two pairings through the host: a 1.1 host runs a
// 1.0 driver and a 1.1 driver, each using only what both speak.
#include <dlfcn.h>
#include <doctest/doctest.h>

#include <kvblob/host/plugin.hpp>
#include <kvblob/kvblob.h>

#include <memory>
#include <string>
#include <vector>

namespace {

struct Speaker {
    std::string file;
    uint32_t newest;  // the newest ABI version the plugin speaks
};

std::vector<Speaker> speakers()
{
    const std::string lib = KVBLOB_PLUGIN_DIR;
    return {
        {lib + "/libkvblob_memory.so", KVBLOB_ABI_1_1},   {lib + "/libkvblob_file.so", KVBLOB_ABI_1_1},
        {lib + "/libkvblob_redis.so", KVBLOB_ABI_1_1},    {lib + "/libkvblob_mooncake.so", KVBLOB_ABI_1_1},
        {lib + "/libkvblob_minimal.so", KVBLOB_ABI_1_1},  {lib + "/libkvblob_null.so", KVBLOB_ABI_1_1},
        {std::string(KVBLOB_FIXTURE_DIR) + "/libkvblob_fixture_good.so", KVBLOB_ABI_1_0},
    };
}

struct Offer {
    const char *what;
    uint32_t min, max;
};

constexpr uint32_t v(uint32_t major, uint32_t minor) { return KVBLOB_MAKE_VERSION(major, minor); }

const Offer offers[] = {
    {"exactly 1.0", v(1, 0), v(1, 0)},
    {"exactly 1.1", v(1, 1), v(1, 1)},
    {"this host's range", KVBLOB_ABI_VERSION_OLDEST, KVBLOB_ABI_VERSION},
    {"wider above (a 2.x host that still speaks 1.x)", v(1, 0), v(2, 0)},
    {"wider above within the major", v(1, 0), v(1, 9)},
    {"wider below", v(0, 1), v(1, 1)},
    {"disjoint above", v(2, 0), v(2, 3)},
    {"disjoint below", v(0, 1), v(0, 9)},
};

// What a correct plugin answers: the highest version in both ranges.
uint32_t expected(const Offer &o, uint32_t newest)
{
    const uint32_t high = o.max < newest ? o.max : newest;
    const uint32_t low = o.min > KVBLOB_ABI_1_0 ? o.min : KVBLOB_ABI_1_0;
    return high >= low ? high : 0;
}

struct Closer {
    void operator()(void *h) const { dlclose(h); }
};

}  // namespace

TEST_CASE("every bundled driver, the template and a fixture answer a table of offered ranges")
{
    for (const auto &s : speakers()) {
        std::unique_ptr<void, Closer> handle(dlopen(s.file.c_str(), RTLD_NOW | RTLD_LOCAL));
        REQUIRE_MESSAGE(handle, s.file << ": " << dlerror());
        auto entry = reinterpret_cast<kvblob_negotiate_fn>(dlsym(handle.get(), KVBLOB_ENTRY_SYMBOL));
        REQUIRE_MESSAGE(static_cast<bool>(entry), s.file << " exports no entry");
        for (const auto &o : offers) {
            INFO(s.file << " offered " << o.what);
            kvblob_negotiation_t n{};
            n.struct_size = sizeof n;
            n.host_min_abi_version = o.min;
            n.host_max_abi_version = o.max;
            const kvblob_status st = entry(&n);
            const uint32_t want = expected(o, s.newest);
            if (want == 0) {
                CHECK(st == KVBLOB_E_UNSUPPORTED);
                CHECK(n.plugin == nullptr);
                continue;
            }
            REQUIRE(st == KVBLOB_OK);
            CHECK(n.chosen_abi_version == want);
            REQUIRE(n.plugin);
            CHECK(n.plugin->abi_version == want);
            CHECK(n.plugin->struct_size >= KVBLOB_PLUGIN_SIZE_1_0);
            if (want == KVBLOB_ABI_1_0) CHECK(n.plugin->struct_size == KVBLOB_PLUGIN_SIZE_1_0);
        }
    }
}

TEST_CASE("a 1.1 host runs a 1.0 driver at 1.0 and a 1.1 driver at 1.1")
{
    auto old_driver = kvblob::Plugin::load(std::string(KVBLOB_FIXTURE_DIR) + "/libkvblob_fixture_good.so");
    CHECK(old_driver.abi_version() == KVBLOB_ABI_1_0);
    auto opened_old = old_driver.open();
    CHECK_FALSE(opened_old.has(KVBLOB_CAP_ACCESS_BOUND));
    CHECK(opened_old.caps().access_end_bound_ns == 0);

    auto new_driver = kvblob::Plugin::load(std::string(KVBLOB_PLUGIN_DIR) + "/libkvblob_memory.so");
    CHECK(new_driver.abi_version() == KVBLOB_ABI_1_1);
    CHECK(new_driver.open().caps().max_rows_per_op > 0);
}

TEST_CASE("secret options: the driver's flag at 1.1, a guess by name at 1.0")
{
    auto redis = kvblob::Plugin::load(std::string(KVBLOB_PLUGIN_DIR) + "/libkvblob_redis.so");
    CHECK(redis.secret_option("password"));
    CHECK_FALSE(redis.secret_option("url"));
    CHECK_FALSE(redis.secret_option("username"));
    const auto shown = redis.redacted({{"url", "redis://h:1"}, {"password", "hunter2"}});
    CHECK(shown[0].second == "redis://h:1");
    CHECK(shown[1].second == kvblob::redacted_value);

    // A 1.1 driver's flag marks a name no guess would catch.
    auto flagged = kvblob::Plugin::load(std::string(KVBLOB_FIXTURE_DIR) + "/libkvblob_fixture_option_flags.so");
    CHECK(flagged.abi_version() == KVBLOB_ABI_1_1);
    CHECK(flagged.secret_option("greeting"));

    // A 1.0 driver cannot flag: its option names are judged.
    auto old_driver = kvblob::Plugin::load(std::string(KVBLOB_FIXTURE_DIR) + "/libkvblob_fixture_good.so");
    CHECK_FALSE(old_driver.secret_option("greeting"));
    CHECK(old_driver.secret_option("password"));
    CHECK(old_driver.secret_option("API_TOKEN"));
    CHECK(old_driver.secret_option("aws_secret_key"));
    CHECK_FALSE(old_driver.secret_option("max_key_bytes"));
    for (const char *name : {"pass", "db_passphrase", "PWD", "credentials_file", "dsn", "private_key_path",
                             "s3_access_key", "request_signature", "session_key", "auth"})
        CHECK_MESSAGE(old_driver.secret_option(name), name);
    for (const char *name : {"url", "root", "host", "port", "username", "key_prefix", "max_object_bytes"})
        CHECK_MESSAGE(!old_driver.secret_option(name), name);
}

TEST_CASE("secret options: a URL that carries a password is redacted whatever its name")
{
    CHECK(kvblob::holds_credentials("redis://:hunter2@10.0.0.1:6379"));
    CHECK(kvblob::holds_credentials("redis://app:hunter2@h:1/0"));
    CHECK(kvblob::holds_credentials("s3://key:secret@bucket/p@th"));
    CHECK_FALSE(kvblob::holds_credentials("redis://app@h:1"));  // a user name only
    CHECK_FALSE(kvblob::holds_credentials("redis://h:6379"));
    CHECK_FALSE(kvblob::holds_credentials("http://h:1/a:b@c"));  // an '@' in the path, not the userinfo
    CHECK_FALSE(kvblob::holds_credentials("user:pw@h"));  // not a URL
    CHECK(kvblob::holds_credentials("host=db port=5432 password=hunter2"));  // a DSN
    CHECK(kvblob::holds_credentials("redis://h:1/0?Password=hunter2"));
    CHECK_FALSE(kvblob::holds_credentials("host=db port=5432 user=app"));
    auto redis = kvblob::Plugin::load(std::string(KVBLOB_PLUGIN_DIR) + "/libkvblob_redis.so");
    const auto shown = redis.redacted({{"url", "redis://:hunter2@h:1"}, {"database", "3"}});
    CHECK(shown[0].second == kvblob::redacted_value);
    CHECK(shown[1].second == "3");
}
