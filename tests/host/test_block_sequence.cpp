// Block keys by chained hash, and the resume bound, on the memory driver.
#include <doctest/doctest.h>

#include <cstring>
#include <numeric>
#include <set>

#include "kvblob/host/block_sequence.hpp"
#include "kvblob/host/key_codec.hpp"
#include "kvblob/host/sha256.hpp"
#include "kvblob/host/sha256_oneshot.hpp"
#include "plugins/driver_harness.hpp"
#include "support/openssl_sha256.hpp"
#include "kvblob/tools/fill_pattern.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

using namespace std::chrono_literals;
using kvblob::OpKind;

namespace {

std::vector<int32_t> tokens(size_t n, int32_t first = 0)
{
    std::vector<int32_t> t(n);
    std::iota(t.begin(), t.end(), first);
    return t;
}

std::vector<kvblob::RowStatus> statuses(std::initializer_list<kvblob_row_result> results)
{
    std::vector<kvblob::RowStatus> out;
    for (auto r : results) out.push_back({r, 0});
    return out;
}

}  // namespace

TEST_CASE("block keys: one per full block, prefix/v1/hex of 16 bytes, deterministic")
{
    auto t = tokens(100);
    auto keys = kvblob::block_keys("llama", t, 16);
    CHECK(keys.size() == 6);  // 96 tokens in full blocks; the last 4 have no key
    CHECK(keys == kvblob::block_keys("llama", t, 16));
    auto decoded = kvblob::decode_key(keys[0]);
    CHECK(decoded.prefix == "llama");
    CHECK(decoded.name.size() == 16);
}

TEST_CASE("block keys chain: a shared prefix shares keys, and a change alters every later key")
{
    auto a = tokens(64), b = tokens(64);
    b[40] = -1;  // inside block 2 of 16-token blocks
    auto ka = kvblob::block_keys("m", a, 16), kb = kvblob::block_keys("m", b, 16);
    CHECK(ka[0] == kb[0]);
    CHECK(ka[1] == kb[1]);
    CHECK(ka[2] != kb[2]);
    CHECK(ka[3] != kb[3]);  // the tokens of block 3 are equal; its chain is not
    CHECK(kvblob::block_keys("m", a, 16, "fp16")[0] != ka[0]);  // the salt separates models
    CHECK(kvblob::block_keys("n", a, 16)[0] != ka[0]);
    CHECK_THROWS(kvblob::block_keys("m", a, 0));
}

namespace {

// Tokens with both signs and the extremes of int32.
std::vector<int32_t> fixed_tokens()
{
    auto t = tokens(40, -3);
    t[7] = 0x7fffffff;
    t[8] = INT32_MIN;
    return t;
}

}  // namespace

TEST_CASE("block keys by SHA-256 are the keys stored before OpenSSL computed them, on both compressions")
{
    // Computed by the hand-written SHA-256 the host had before, and checked
    // with Python's hashlib: sha256(sha256(salt) + block's tokens as int32 LE).
    // The SHA extensions (where this CPU has them) and the portable
    // compression must both give them.
    const auto t = fixed_tokens();
    std::vector<int32_t> big(131072);
    for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<int32_t>(i * 2654435761u);
    for (bool portable : {false, true}) {
        CAPTURE(portable);
        kvblob::sha256_force_portable(portable);
        CHECK(kvblob::block_keys("llama", t, 16) ==
              std::vector<std::string>{"llama/v1/be54c5b16b3956ca4478114985665683",
                                       "llama/v1/b515fc0c62faa974a4bb37fe98b5de07"});
        CHECK(kvblob::block_keys("eng", t, 4, "model-7b/fp16", kvblob::BlockHash::sha256) ==
              std::vector<std::string>{
                  "eng/v1/8a0fbc5d2405f0baf5ed97c5bf6ad889", "eng/v1/a64b4248ffbc6c840796b97677042c97",
                  "eng/v1/1095a3e777f0ff7908e114b48a93b337", "eng/v1/1b13f3014f2d1f44b892b4046da97a9d",
                  "eng/v1/e61c2499d7d7d9f9adbf5a4571ceada2", "eng/v1/fcf707e23182424d124a8136c277d5c2",
                  "eng/v1/b0fb5b1a4c32e02479deb20775fea7cb", "eng/v1/fa9a3d2a5f0029035f5ac340c4b43ec7",
                  "eng/v1/a4d0a1b9c1a9c10fcb87d2ee641c9953", "eng/v1/4725ae680bb8f3fb950bd8857a8ad906"});
        // A 128k-token request: 8192 blocks, the first and last as before.
        const auto keys = kvblob::block_keys("eng", big, 16);
        REQUIRE(keys.size() == 8192);
        CHECK(keys.front() == "eng/v1/17a57d455de7653e155e9b1bbcf345bb");
        CHECK(keys.back() == "eng/v1/a2a41ba36f4567b41d0816d04790ac98");
    }
    kvblob::sha256_force_portable(false);
}

// Keys by hand, the way block_keys was defined before the chain kernel: a
// digest of each message, encode_key of its first 16 bytes. Held against the
// kernel for block sizes that cross one, two and three SHA-256 blocks and
// leave 0 to 3 tokens past a group of four, for prefixes of several lengths
// (the key's head is copied 16 bytes at a time), and both compressions.
TEST_CASE("block keys by SHA-256 are each message's digest, for any block size, salt and prefix")
{
    std::vector<int32_t> t(300);
    for (size_t i = 0; i < t.size(); ++i) t[i] = static_cast<int32_t>(i * 2246822519u);
    // Heads (prefix/v1/) of 5, 15, 16, 17 and 68 bytes.
    const std::vector<std::string> prefixes = {"e", "engine-a_12", "engine-a_123", "engine-a_1234",
                                               std::string(64, 'p')};
    for (bool portable : {false, true}) {
        kvblob::sha256_force_portable(portable);
        for (size_t per_block : {1, 2, 3, 5, 7, 8, 12, 13, 14, 15, 16, 17, 24, 31, 32, 33, 64}) {
            for (const std::string &prefix : prefixes) {
                const std::string salt = "salt-" + std::to_string(per_block);
                auto chain = openssl_sha256(salt);
                std::vector<std::string> expected;
                for (size_t start = 0; start + per_block <= t.size(); start += per_block) {
                    std::string message(chain.begin(), chain.end());
                    message.append(reinterpret_cast<const char *>(t.data() + start), 4 * per_block);  // LE host
                    chain = openssl_sha256(message);
                    expected.push_back(kvblob::encode_key(prefix, std::string(chain.begin(), chain.begin() + 16)));
                }
                CHECK_MESSAGE(kvblob::block_keys(prefix, t, per_block, salt) == expected,
                              per_block << " tokens per block, prefix " << prefix << (portable ? ", portable" : ""));
            }
        }
    }
    kvblob::sha256_force_portable(false);
}

TEST_CASE("packed block keys: the same keys, back to back in one buffer, each a view")
{
    const auto t = tokens(16 * 5 + 3);
    for (auto hash : {kvblob::BlockHash::sha256, kvblob::BlockHash::xxh3}) {
        const auto strings = kvblob::block_keys("eng", t, 16, "m", hash);
        const kvblob::PackedKeys packed = kvblob::packed_block_keys("eng", t, 16, "m", hash);
        REQUIRE(packed.size() == 5);
        CHECK(packed.width() == strings[0].size());
        CHECK(packed.strings() == strings);
        size_t i = 0;
        for (std::string_view key : packed) {
            CHECK(key == strings[i]);
            CHECK(key.data() == packed.data() + i * packed.width());  // contiguous, fixed width
            CHECK(packed[i] == key);
            ++i;
        }
        CHECK(i == 5);
    }
    // Moving keys moves their buffer: views of it stay valid, and the
    // moved-from keys are empty.
    kvblob::PackedKeys from = kvblob::packed_block_keys("eng", t, 16);
    const kvblob::KeysView view = from.first(2);
    const std::string second(view[1]);
    kvblob::PackedKeys to = std::move(from);
    CHECK(from.empty());
    CHECK(to.size() == 5);
    CHECK(view[1] == second);
    CHECK(to.data() == view.data());
    // No full block: no keys, and nothing to read.
    const auto none = kvblob::packed_block_keys("eng", tokens(15), 16);
    CHECK(none.empty());
    CHECK(none.begin() == none.end());
    CHECK(kvblob::block_keys("eng", {}, 16).empty());
    CHECK_THROWS_AS(kvblob::packed_block_keys("eng", t, 0), std::invalid_argument);
    CHECK_THROWS_AS(kvblob::packed_block_keys("Bad", t, 16), std::invalid_argument);
}

TEST_CASE("block keys by XXH3-128: the same chain with XXH3, under the prefix tagged -xxh3")
{
    REQUIRE(XXH_VERSION_NUMBER >= 800);  // XXH3's output is stable from 0.8.0
    XXH128_canonical_t empty;
    XXH128_canonicalFromHash(&empty, XXH3_128bits("", 0));
    // The published XXH3-128 of no bytes (xxhsum -H2).
    const uint8_t published[16] = {0x99, 0xaa, 0x06, 0xd3, 0x01, 0x47, 0x98, 0xd8,
                                   0x60, 0x01, 0xc3, 0x24, 0x46, 0x8d, 0x49, 0x7f};
    CHECK(std::memcmp(empty.digest, published, 16) == 0);

    // The chain, by hand: chain 0 is XXH3-128(salt), chain i+1 XXH3-128 of
    // chain i (canonical, big-endian) then block i's tokens as int32 LE.
    const auto t = fixed_tokens();
    std::string chain(reinterpret_cast<const char *>(empty.digest), 16);
    std::vector<std::string> expected;
    for (size_t b = 0; b + 16 <= t.size(); b += 16) {
        std::string input = chain;
        for (size_t i = b; i < b + 16; ++i)
            for (int k = 0; k < 4; ++k) input += static_cast<char>(static_cast<uint32_t>(t[i]) >> (8 * k));
        XXH128_canonical_t next;
        XXH128_canonicalFromHash(&next, XXH3_128bits(input.data(), input.size()));
        chain.assign(reinterpret_cast<const char *>(next.digest), 16);
        expected.push_back(kvblob::encode_key("llama-xxh3", chain));
    }
    const auto keys = kvblob::block_keys("llama", t, 16, {}, kvblob::BlockHash::xxh3);
    CHECK(keys == expected);
    // Pinned as well: keys stored with xxh3 stay valid.
    CHECK(keys == std::vector<std::string>{"llama-xxh3/v1/1615b46ce61647128233beb5474f50c1",
                                           "llama-xxh3/v1/5d392286b5c57558aa251120538d6270"});

    auto a = tokens(64), b = tokens(64);
    b[40] = -1;
    const auto ka = kvblob::block_keys("m", a, 16, {}, kvblob::BlockHash::xxh3);
    const auto kb = kvblob::block_keys("m", b, 16, {}, kvblob::BlockHash::xxh3);
    CHECK(ka[1] == kb[1]);
    CHECK(ka[2] != kb[2]);
    CHECK(ka[3] != kb[3]);
    CHECK(kvblob::block_keys("m", a, 16, "fp16", kvblob::BlockHash::xxh3)[0] != ka[0]);
}

TEST_CASE("block keys of the two hashes never collide: the prefix names the hash")
{
    using kvblob::BlockHash;
    const auto t = tokens(256);
    std::set<std::string> sha, xxh;
    for (const char *prefix : {"m", "m-xxh3x", "m-xxh", "xxh3"}) {
        for (auto &k : kvblob::block_keys(prefix, t, 16)) sha.insert(k);
        for (auto &k : kvblob::block_keys(prefix, t, 16, {}, BlockHash::xxh3)) {
            CHECK(kvblob::decode_key(k).prefix == std::string(prefix) + "-xxh3");
            xxh.insert(k);
        }
    }
    for (const auto &k : xxh) CHECK(sha.count(k) == 0);
    CHECK(sha.size() == 4 * 16);
    CHECK(xxh.size() == 4 * 16);
    // A SHA-256 prefix may not take the tag, so "m-xxh3" always means XXH3.
    CHECK_THROWS_WITH_AS(kvblob::block_keys("m-xxh3", t, 16), doctest::Contains("names XXH3 block keys"),
                         std::invalid_argument);
    CHECK(kvblob::decode_key(kvblob::block_keys("m-xxh3", t, 16, {}, BlockHash::xxh3)[0]).prefix == "m-xxh3-xxh3");
    // The tag must fit in the 64 bytes of a prefix.
    CHECK_NOTHROW(kvblob::block_keys(std::string(64, 'a'), t, 16));
    CHECK_NOTHROW(kvblob::block_keys(std::string(59, 'a'), t, 16, {}, BlockHash::xxh3));
    CHECK_THROWS_WITH_AS(kvblob::block_keys(std::string(60, 'a'), t, 16, {}, BlockHash::xxh3),
                         doctest::Contains("the hash's tag -xxh3"), std::invalid_argument);
    CHECK_THROWS_AS(kvblob::block_keys("Bad", t, 16), std::invalid_argument);
}

TEST_CASE("block hash names: sha256 and xxh3, anything else refused naming the choices")
{
    CHECK(kvblob::parse_block_hash("sha256") == kvblob::BlockHash::sha256);
    CHECK(kvblob::parse_block_hash("xxh3") == kvblob::BlockHash::xxh3);
    CHECK(kvblob::to_string(kvblob::BlockHash::sha256) == "sha256");
    CHECK(kvblob::to_string(kvblob::BlockHash::xxh3) == "xxh3");
    CHECK_THROWS_WITH_AS(kvblob::parse_block_hash("md5"), doctest::Contains("sha256, xxh3"), std::invalid_argument);
}

TEST_CASE("resume bound: the delivered prefix, stopping at the first block not READY")
{
    using kvblob::resume_bound;
    CHECK(resume_bound(std::vector<kvblob::RowStatus>{}) == 0);
    CHECK(resume_bound(statuses({KVBLOB_ROW_READY, KVBLOB_ROW_READY, KVBLOB_ROW_READY})) == 3);
    CHECK(resume_bound(statuses({KVBLOB_ROW_READY, KVBLOB_ROW_FAULT, KVBLOB_ROW_READY})) == 1);
    CHECK(resume_bound(statuses({KVBLOB_ROW_MISS, KVBLOB_ROW_READY})) == 0);
    CHECK(resume_bound(statuses({KVBLOB_ROW_READY, KVBLOB_ROW_NOT_READY, KVBLOB_ROW_NOT_READY})) == 1);
    CHECK(resume_bound(statuses({KVBLOB_ROW_READY, KVBLOB_ROW_PENDING})) == 1);
}

TEST_CASE("publish, probe and fetch blocks through a driver, with the resume bound in each case")
{
    MemoryHarness h({{"store", unique_store("blocks")}, {"mode", "background"}});
    const uint64_t block = 4096;
    const auto keys = kvblob::block_keys("eng", tokens(8 * 16), 16);
    REQUIRE(keys.size() == 8);
    auto src = h.buffer(8 * block), dst = h.buffer(8 * block);
    for (size_t i = 0; i < 8; ++i) fill_pattern(src.bytes.data() + i * block, block, 500 + i);
    std::vector<uint64_t> offsets;
    for (uint64_t i = 0; i < 8; ++i) offsets.push_back(i * block);
    auto &d = h.driver();
    kvblob::SlotLedger ledger;

    SUBCASE("all READY")
    {
        auto put = kvblob::transfer_blocks(d, OpKind::put, keys, src.handle(), offsets, block, 10s, ledger);
        CHECK(kvblob::resume_bound(put) == 8);
        CHECK(kvblob::stored_prefix(d, keys, 10s) == 8);
        auto got = kvblob::transfer_blocks(d, OpKind::get, keys, dst.handle(), offsets, block, 10s, ledger);
        CHECK(kvblob::resume_bound(got) == 8);
        CHECK(dst.bytes == src.bytes);
    }
    SUBCASE("packed keys, and the first of them, go into batches as they are")
    {
        const auto packed = kvblob::packed_block_keys("eng", tokens(8 * 16), 16);
        REQUIRE(packed.strings() == keys);
        const std::vector<uint64_t> first5(offsets.begin(), offsets.begin() + 5);
        auto put = kvblob::transfer_blocks(d, OpKind::put, packed.first(5), src.handle(), first5, block, 10s, ledger);
        CHECK(kvblob::resume_bound(put) == 5);
        CHECK(kvblob::stored_prefix(d, packed, 10s) == 5);
        CHECK(kvblob::stored_prefix(d, keys, 10s) == 5);  // the same objects as the strings name
        auto got = kvblob::transfer_blocks(d, OpKind::get, packed, dst.handle(), offsets, block, 10s, ledger);
        CHECK(kvblob::resume_bound(got) == 5);
        CHECK(std::memcmp(dst.bytes.data(), src.bytes.data(), 5 * block) == 0);
        CHECK_THROWS_AS(  // one offset per key
            kvblob::transfer_blocks(d, OpKind::get, packed.first(2), dst.handle(), offsets, block, 10s, ledger),
            std::invalid_argument);
    }
    SUBCASE("a fault in the middle")
    {
        kvblob::transfer_blocks(d, OpKind::put, keys, src.handle(), offsets, block, 10s, ledger);
        REQUIRE(h.hook(h.hooks().stage_failing_read, keys[5]) == KVBLOB_OK);
        auto got = kvblob::transfer_blocks(d, OpKind::get, keys, dst.handle(), offsets, block, 10s, ledger);
        CHECK(kvblob::resume_bound(got) == 5);
        CHECK(std::memcmp(dst.bytes.data(), src.bytes.data(), 5 * block) == 0);
    }
    SUBCASE("a MISS at the start")
    {
        std::vector<std::string> later(keys.begin() + 1, keys.end());
        std::vector<uint64_t> later_offsets(offsets.begin() + 1, offsets.end());
        kvblob::transfer_blocks(d, OpKind::put, later, src.handle(), later_offsets, block, 10s, ledger);
        CHECK(kvblob::stored_prefix(d, keys, 10s) == 0);
        CHECK(kvblob::resume_bound(kvblob::transfer_blocks(d, OpKind::get, keys, dst.handle(), offsets, block, 10s, ledger)) == 0);
    }
    SUBCASE("NOT_READY blocks: another writer holds block 3")
    {
        REQUIRE(h.hook(h.hooks().stage_foreign_writer, keys[3]) == KVBLOB_OK);
        auto put = kvblob::transfer_blocks(d, OpKind::put, keys, src.handle(), offsets, block, 10s, ledger);
        CHECK(put[3].status.result == KVBLOB_ROW_NOT_READY);
        CHECK(kvblob::stored_prefix(d, keys, 10s) == 3);
        CHECK(kvblob::resume_bound(kvblob::transfer_blocks(d, OpKind::get, keys, dst.handle(), offsets, block, 10s, ledger)) == 3);
    }
}
