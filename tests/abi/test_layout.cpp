// Pins sizeof/offsetof of every public ABI struct against
// tests/abi/layout.table (abi-guide rule 14).
#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "layout_probe.hpp"

namespace {

struct Pinned {
    uint32_t version;
    std::string type, member;
    size_t value;
};

std::vector<Pinned> read_table()
{
    std::ifstream in(KVBLOB_LAYOUT_TABLE);
    REQUIRE_MESSAGE(in.good(), "cannot read " KVBLOB_LAYOUT_TABLE);
    std::vector<Pinned> rows;
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream fields(line);
        std::string version;
        Pinned p{};
        fields >> version >> p.type >> p.member >> p.value;
        REQUIRE_MESSAGE(!fields.fail(), "malformed line: " << line);
        auto dot = version.find('.');
        REQUIRE(dot != std::string::npos);
        p.version = KVBLOB_MAKE_VERSION(std::stoul(version.substr(0, dot)), std::stoul(version.substr(dot + 1)));
        rows.push_back(p);
    }
    return rows;
}

std::string key(const std::string &type, const std::string &member) { return type + "." + member; }

}  // namespace

TEST_CASE("ABI layout matches the pinned table for the current ABI version")
{
    auto table = read_table();
    std::map<std::string, size_t> now;
    for (const auto &e : current_layout()) now[key(e.type, e.member)] = e.value;

    std::map<std::string, size_t> pinned_current;
    for (const auto &p : table)
        if (p.version == KVBLOB_ABI_VERSION) pinned_current[key(p.type, p.member)] = p.value;
    REQUIRE_MESSAGE(!pinned_current.empty(),
                    "layout.table has no section for the current ABI version: add one when the version moves");

    for (const auto &[k, v] : now) {
        INFO("member " << k);
        REQUIRE_MESSAGE(pinned_current.count(k), "not pinned: add it to layout.table under the new ABI version");
        CHECK_MESSAGE(pinned_current[k] == v, "moved: pinned at " << pinned_current[k] << ", now " << v
                                                                    << "; bump the ABI version and add a section");
    }
    for (const auto &[k, v] : pinned_current) CHECK_MESSAGE(now.count(k), "pinned member vanished: " << k);
}

TEST_CASE("older ABI sections of the same major are still honoured (append-only)")
{
    std::map<std::string, size_t> now;
    for (const auto &e : current_layout()) now[key(e.type, e.member)] = e.value;
    for (const auto &p : read_table()) {
        if (KVBLOB_VERSION_MAJOR(p.version) != KVBLOB_ABI_VERSION_MAJOR || p.version >= KVBLOB_ABI_VERSION)
            continue;
        const auto k = key(p.type, p.member);
        INFO("member " << k << " of ABI " << KVBLOB_VERSION_MINOR(p.version));
        REQUIRE(now.count(k));
        if (p.member == "sizeof") CHECK(now[k] >= p.value);
        else CHECK(now[k] == p.value);
    }
}

TEST_CASE("the ABI 1.0 size constants are the 1.0 section's sizes")
{
    std::map<std::string, size_t> v1_0;
    for (const auto &p : read_table())
        if (p.version == KVBLOB_ABI_1_0) v1_0[key(p.type, p.member)] = p.value;
    CHECK(KVBLOB_PLUGIN_SIZE_1_0 == v1_0[key("kvblob_plugin_t", "sizeof")]);
    CHECK(KVBLOB_CAPS_SIZE_1_0 == v1_0[key("kvblob_caps_t", "sizeof")]);
    CHECK(KVBLOB_HOST_SERVICES_SIZE_1_0 == v1_0[key("kvblob_host_services_t", "sizeof")]);
}

TEST_CASE("every struct starts with its uint32_t struct_size")
{
    for (const auto &e : current_layout())
        if (e.member == "struct_size") CHECK_MESSAGE(e.value == 0, e.type);
}
