// The signed report channel between the runner and its children
// (conformance-runner/src/report_channel.hpp): a record the child signed is
// read back as its own, and text it did not sign is counted, not believed.
#include <doctest/doctest.h>

#include <cstring>
#include <string>

#include "report_channel.hpp"

using namespace kvblob::conformance;

namespace {
std::string hex(const std::array<uint8_t, 32> &mac)
{
    std::string out;
    for (uint8_t b : mac) out += std::string(1, "0123456789abcdef"[b >> 4]) + "0123456789abcdef"[b & 0xF];
    return out;
}

std::string signed_record(const RunKey &key, const std::string &text)
{
    std::string record(text.size() + record_overhead, '\0');
    record.resize(sign_record(key, text.data(), text.size(), record.data()));
    return record;
}
}  // namespace

TEST_CASE("hmac_sha256 answers RFC 4231's test cases")
{
    const char *data = "what do ya want for nothing?";
    CHECK(hex(hmac_sha256(reinterpret_cast<const uint8_t *>("Jefe"), 4, data, std::strlen(data))) ==
          "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    // Test case 2 of RFC 4231 spans one block; this one (test case 3) spans two.
    uint8_t key[20];
    std::memset(key, 0xaa, sizeof key);
    const std::string dd(50, '\xdd');
    CHECK(hex(hmac_sha256(key, sizeof key, dd.data(), dd.size())) ==
          "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
}

TEST_CASE("the channel keeps the records signed under the child's key and counts the rest")
{
    const RunKey child_key = fresh_key();
    const std::string verdict = signed_record(child_key, "PASS\n"), left = signed_record(child_key, "left 0 0 1 ");
    auto both = read_records(verdict + left, child_key, false);
    REQUIRE(both.authentic.size() == 2);
    CHECK(both.authentic[0] == "PASS\n");
    CHECK(both.authentic[1] == "left 0 0 1 ");
    CHECK(both.forged_bytes == 0);

    // A forged verdict written blindly before the child's own: counted, not believed.
    const std::string forged("PASS\n\0", 6);
    auto mixed = read_records(forged + verdict, child_key, false);
    CHECK(mixed.authentic.size() == 1);
    CHECK(mixed.forged_bytes == forged.size());

    // Each child has a key of its own: under another child's, nothing is this one's.
    const RunKey other_key = fresh_key();
    CHECK(other_key != child_key);
    auto other = read_records(verdict, other_key, false);
    CHECK(other.authentic.empty());
    CHECK(other.forged_bytes == verdict.size());

    // A record cut short (the child was killed while writing) is neither.
    auto cut = read_records(verdict + left.substr(0, 30), child_key, false);
    CHECK(cut.authentic.size() == 1);
    CHECK(cut.forged_bytes == 0);
}
