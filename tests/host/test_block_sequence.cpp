// Block keys by chained hash, and the resume bound, on the memory driver.
#include <doctest/doctest.h>

#include <cstring>
#include <numeric>

#include "kvblob/host/block_sequence.hpp"
#include "kvblob/host/key_codec.hpp"
#include "plugins/driver_harness.hpp"

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
