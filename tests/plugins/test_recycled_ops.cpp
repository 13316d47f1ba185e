// A released operation is kept and used again for a later submit
// (DriverBase::release, Op::recycle): nothing of the operation before may
// show in the next one: not its rows' answers or messages, not a cancel,
// not a hint, not a span.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "kvblob/support/driver_base.hpp"
#include "plugins/driver_harness.hpp"

using kvblob::OpKind;

namespace {

// No released operation is kept under AddressSanitizer (max_spare_ops).
constexpr bool ops_kept = kvblob::support::max_spare_ops > 0;

kvblob::Options controlled(const std::string &store)
{
    return {{"store", store}, {"mode", "controlled"}};
}

// Moves a controlled operation through every stage.
void advance_all(DriverHarness &h, const kvblob::Operation &op)
{
    for (auto stage : {KVBLOB_STAGE_START, KVBLOB_STAGE_TRANSFER_END, KVBLOB_STAGE_COMMIT, KVBLOB_STAGE_ACCESS_END})
        REQUIRE(h.hooks().advance(h.driver().handle(), op.handle(), stage) == KVBLOB_OK);
}

uint64_t hint_size(DriverHarness &h, const kvblob::Operation &op)
{
    return h.hooks().echo_hint(h.driver().handle(), op.handle(), nullptr, 0);
}

}  // namespace

TEST_CASE("a released operation used again starts as new: no answer, message, cancel or hint carries over")
{
    DriverHarness h("memory", controlled(unique_store("recycled")));
    auto src = h.buffer(3 * 4096, 0x3C);
    auto dst = h.buffer(3 * 4096, 0);

    // The first: three rows of two spans each, a hint, cancelled before it
    // started: every row CANCELLED, with a message.
    Batch first;
    for (int r = 0; r < 3; ++r)
        first.row("recycled/first/" + std::to_string(r),
                  {make_span(src.handle(), r * 4096, 2048), make_span(src.handle(), r * 4096 + 2048, 2048)});
    first.hint("placement: rack 7");
    auto op = h.submit(OpKind::put, first);
    REQUIRE(hint_size(h, op) == std::string("placement: rack 7").size());
    REQUIRE(op.cancel() == KVBLOB_OK);
    REQUIRE(op.is_final());
    for (uint64_t r = 0; r < 3; ++r) {
        REQUIRE(op.results()[r].result == KVBLOB_ROW_CANCELLED);
        REQUIRE_FALSE(op.message(r).empty());
    }
    const kvblob_op_t *first_handle = op.handle();
    REQUIRE(op.release() == KVBLOB_OK);

    // The next: two rows of one span, other keys, no hint.
    Batch next;
    for (int r = 0; r < 2; ++r) next.row("recycled/next/" + std::to_string(r), {make_span(src.handle(), r * 4096, 4096)});
    auto again = h.submit(OpKind::put, next);
    if (ops_kept) CHECK(again.handle() == first_handle);  // the same operation, used again
    CHECK(hint_size(h, again) == 0);
    CHECK_FALSE(again.is_final());
    CHECK(again.access() == KVBLOB_ACCESS_OPEN);
    REQUIRE(again.results().size() == 2);
    for (const auto &row : again.results()) CHECK(row.result == KVBLOB_ROW_PENDING);
    advance_all(h, again);
    REQUIRE(again.is_final());
    for (uint64_t r = 0; r < 2; ++r) {
        CHECK(again.results()[r].result == KVBLOB_ROW_READY);
        CHECK(again.message(r).empty());
    }
    REQUIRE(again.release() == KVBLOB_OK);

    // Used a third time, with more rows than it held: each row got the
    // bytes its own key was put with, and the first's keys stay unstored.
    Batch get;
    for (int r = 0; r < 2; ++r) get.row("recycled/next/" + std::to_string(r), {make_span(dst.handle(), r * 4096, 4096)});
    get.row("recycled/first/0", {make_span(dst.handle(), 2 * 4096, 4096)});
    auto third = h.submit(OpKind::get, get);
    advance_all(h, third);
    REQUIRE(third.results().size() == 3);
    CHECK(third.results()[0].result == KVBLOB_ROW_READY);
    CHECK(third.results()[1].result == KVBLOB_ROW_READY);
    CHECK(third.results()[2].result == KVBLOB_ROW_MISS);
    CHECK(std::vector<uint8_t>(dst.bytes.begin(), dst.bytes.begin() + 2 * 4096) ==
          std::vector<uint8_t>(src.bytes.begin(), src.bytes.begin() + 2 * 4096));
    CHECK(dst.bytes[2 * 4096] == 0);  // MISS leaves the destination untouched
}

TEST_CASE("operations used again in the default mode: batches of changing sizes and spans round-trip byte for byte")
{
    DriverHarness h("memory", {{"store", unique_store("recycled-bg")}});
    constexpr size_t row = 1024, most = 40;
    auto src = h.buffer(most * row);
    fill_pattern(src.bytes.data(), src.bytes.size(), 9);
    // Sizes that grow, shrink and grow past every earlier one; every third
    // batch splits its rows in two spans.
    for (size_t round = 0; round < 60; ++round) {
        const size_t rows = 1 + (round * 7) % most;
        auto dst = h.buffer(rows * row);
        Batch put, get;
        for (size_t r = 0; r < rows; ++r) {
            const std::string key = "recycled-bg/" + std::to_string(round) + "/" + std::to_string(r);
            if (round % 3 == 0)
                put.row(key, {make_span(src.handle(), r * row, row / 2), make_span(src.handle(), r * row + row / 2, row / 2)});
            else
                put.row(key, {make_span(src.handle(), r * row, row)});
            get.row(key, {make_span(dst.handle(), r * row, row)});
        }
        for (const auto &r : h.run(OpKind::put, put)) REQUIRE(r.result == KVBLOB_ROW_READY);
        for (const auto &r : h.run(OpKind::get, get)) REQUIRE(r.result == KVBLOB_ROW_READY);
        REQUIRE(dst.bytes == std::vector<uint8_t>(src.bytes.begin(), src.bytes.begin() + rows * row));
    }
}
