// The results slots themselves (R-ROW-1): rows read in pages at any offset,
// PENDING before final, each row's result where its key is whatever the
// order of keys, and row_message's length, terminator and truncation.
#include <cstring>

#include "common.hpp"

namespace kvblob::conformance {

namespace {

// Results of rows [first, first + count), read into an array one element
// longer, whose last element must be left alone.
std::vector<kvblob_row_status_t> page(Driver &d, kvblob_op_t *op, uint64_t first, uint64_t count)
{
    std::vector<kvblob_row_status_t> out(count + 1);
    for (auto &r : out) r = {sizeof r, unwritten, unwritten, 0};
    kvblob_status st = d.table().results(d.handle(), op, first, count, out.data());
    expect(st == KVBLOB_OK, "R-ROW-1",
           "results(first " + std::to_string(first) + ", count " + std::to_string(count) + ") answered " +
               kvblob_status_name(st));
    expect(out[count].result == unwritten && out[count].driver_code == unwritten, "R-ROW-1",
           "results(first " + std::to_string(first) + ", count " + std::to_string(count) +
               ") wrote past the count it was given");
    out.pop_back();
    return out;
}

void results_paging_and_order(Context &c)
{
    auto d = c.open();
    if (d.caps().max_rows_per_op < 8) throw NotSupported("max_rows_per_op is below 8");
    constexpr uint64_t n = 512;
    GuardedBuffer src(4 * n), dst(8 * n);
    fill_pattern(src.data(), src.size(), 31);
    std::memset(dst.data(), 0x5C, dst.size());
    auto rs = c.reg(d, src), rd = c.reg(d, dst);
    // Stored: z, b, m (put in that order); absent: a, y; stored with another size: q.
    Batch put;
    put.row(c.key("z"), {make_span(rs, 0, n)})
        .row(c.key("b"), {make_span(rs, n, n)})
        .row(c.key("m"), {make_span(rs, 2 * n, n)})
        .row(c.key("q"), {make_span(rs, 3 * n, n / 2)});
    for (const auto &r : c.run(d, OpKind::put, put))
        expect(r.result == KVBLOB_ROW_READY, "R-ROW-1", "put not READY");
    // Rows in an order that is neither the keys' nor the puts'.
    const char *names[] = {"m", "y", "z", "q", "a", "b"};
    const uint64_t from[] = {2 * n, 0, 0, 3 * n, 0, n};  // where each stored one came from
    // A gap after each destination span: a row that writes past its span
    // is caught there (R-REG-3), never read as the next row's destination
    // written.
    constexpr uint64_t gap = 64, stride = n + gap;
    Batch get;
    for (uint64_t i = 0; i < 6; ++i) get.row(c.key(names[i]), {make_span(rd, i * stride, n)});
    c.require_absent_not_ready(d, "rows a and y, never put, are told from the stored rows");
    auto op = c.admit(d, OpKind::get, get);
    expect(c.settle(d, op), "R-ACC-2", "get did not settle");
    const auto all = page(d, op, 0, 6);
    for (uint64_t i = 0; i < 6; ++i)
        for (uint64_t b = 0; b < gap; ++b)
            expect(dst.data()[i * stride + n + b] == 0x5C, "R-REG-3",
                   "get row " + std::to_string(i) + " (key " + names[i] + ", " +
                       kvblob_row_result_name(all[i].result) + "): the driver wrote the byte at offset " +
                       std::to_string(n + b) + " of its " + std::to_string(n) + "-byte span, " +
                       std::to_string(b + 1) + " past its end (a gap the battery left after it)");
    for (uint64_t i = 0; i < 6; ++i) {
        const std::string name = names[i];
        const auto res = all[i].result;
        const std::string row = "row " + std::to_string(i) + " (key " + name + ")";
        if (name == "y" || name == "a") {
            expect(res != KVBLOB_ROW_READY, "R-ROW-1",
                   row + " of an absent key answered READY; R-ROW-1 wants each row's own result "
                         "(a get of that key alone is not READY)");
            if (res == KVBLOB_ROW_MISS)
                for (uint64_t b = 0; b < n; ++b)
                    expect(dst.data()[i * stride + b] == 0x5C, "R-ROW-3",
                           row + " is MISS and its destination was written");
        }
        else if (name == "q")
            expect(res == KVBLOB_ROW_FAULT, "R-ROW-1",
                   row + " of an object of another size is " + kvblob_row_result_name(res));
        else
            expect(res == KVBLOB_ROW_READY &&
                       std::memcmp(dst.data() + i * stride, src.data() + from[i], n) == 0,
                   "R-ROW-1",
                   row + " is " + kvblob_row_result_name(res) +
                       ", or holds another row's bytes: results follow the rows, not the keys");
    }
    for (uint64_t first = 0; first <= 6; ++first)
        for (uint64_t count = 0; first + count <= 6; ++count) {
            const auto part = page(d, op, first, count);
            for (uint64_t i = 0; i < count; ++i)
                expect(part[i].result == all[first + i].result &&
                           part[i].driver_code == all[first + i].driver_code,
                       "R-ROW-1",
                       "results(first " + std::to_string(first) + ", count " +
                           std::to_string(count) + ") gives row " + std::to_string(first + i) +
                           " a result other than a read of all rows does");
        }
    expect(d.table().release(d.handle(), op) == KVBLOB_OK, "R-OPS-1", "release refused");
}

void results_pending_before_final(Context &c)
{
    auto d = c.open();
    GuardedBuffer buf(1024);
    fill_pattern(buf.data(), buf.size(), 32);
    auto r = c.reg(d, buf);
    auto k = c.key("held");
    expect(c.run_one(d, OpKind::put, k, {make_span(r, 0, 1024)}) == KVBLOB_ROW_READY, "R-ROW-1",
           "put not READY");
    c.stage(d, "stage_held_get", k, "R-ROW-1");
    Batch b;
    b.row(k, {make_span(r, 0, 1024)});
    auto op = c.admit(d, OpKind::get, b);
    uint32_t fin = 1;
    expect(d.table().poll(d.handle(), op, &fin) == KVBLOB_OK && fin == 0, "R-CON-3",
           "a get held inside the store is final before it was released");
    const auto held = page(d, op, 0, 1);
    expect(held[0].result == KVBLOB_ROW_PENDING, "R-ROW-1",
           std::string("the held row of an operation not final reads ") +
               kvblob_row_result_name(held[0].result) + ", not PENDING");
    c.stage(d, "release_staged", "R-ROW-1");
    expect(c.settle(d, op), "R-ACC-2", "the released get did not settle");
    const auto done = page(d, op, 0, 1);
    expect(done[0].result == KVBLOB_ROW_READY, "R-ROW-1",
           std::string("the released get is ") + kvblob_row_result_name(done[0].result));
    expect(d.table().release(d.handle(), op) == KVBLOB_OK, "R-OPS-1", "release refused");
}

void results_row_message(Context &c)
{
    auto d = c.open();
    GuardedBuffer src(4096), dst(1024);
    auto rs = c.reg(d, src), rd = c.reg(d, dst);
    auto k = c.key("sized");
    expect(c.run_one(d, OpKind::put, k, {make_span(rs, 0, 4096)}) == KVBLOB_ROW_READY, "R-ROW-1",
           "put not READY");
    Batch b;
    b.row(k, {make_span(rd, 0, 1024)});  // shorter than the object: FAULT (R-ROW-5)
    auto op = c.admit(d, OpKind::get, b);
    expect(c.settle(d, op), "R-ACC-2", "get did not settle");
    const auto res = page(d, op, 0, 1);
    expect(res[0].result == KVBLOB_ROW_FAULT, "R-ROW-5",
           std::string("a get into a shorter row is ") + kvblob_row_result_name(res[0].result));
    auto call = [&](char *buf, uint32_t capacity) {
        return d.table().row_message(d.handle(), op, 0, buf, capacity);
    };
    // The whole message, in a buffer far larger than it.
    std::string big(4096, '\x7f');
    const uint32_t length = call(big.data(), static_cast<uint32_t>(big.size()));
    const size_t written = strnlen(big.data(), big.size());
    expect(written < big.size(), "R-ROW-1", "row_message did not NUL-terminate its message");
    expect(length == written, "R-ROW-1",
           "row_message returned " + std::to_string(length) + " for a message of " +
               std::to_string(written) + " bytes (the length excludes the terminator)");
    expect(length > 0, "R-ROW-1", "a FAULT row has no message (FAULT carries a code and a message)");
    const std::string message(big.data(), written);
    // Asked for the length alone: nothing written.
    char none = '\x7f';
    expect(call(&none, 0) == length && none == '\x7f', "R-ROW-1",
           "row_message with capacity 0 wrote a byte or returned another length");
    expect(call(nullptr, 0) == length, "R-ROW-1", "row_message(NULL, 0) returned another length");
    // Truncated: capacity - 1 bytes and a NUL, nothing past capacity.
    for (uint32_t capacity : {1u, 2u, length / 2 + 1, length, length + 1}) {
        std::string buf(capacity + 16, '\x7f');
        const uint32_t got = call(buf.data(), capacity);
        const size_t kept = std::min<size_t>(length, capacity - 1);
        expect(got == length, "R-ROW-1",
               "row_message returned " + std::to_string(got) + " with capacity " +
                   std::to_string(capacity) + ", not the full length " + std::to_string(length));
        expect(buf.compare(0, kept, message, 0, kept) == 0 && buf[kept] == '\0', "R-ROW-1",
               "row_message with capacity " + std::to_string(capacity) +
                   " did not write the message's first " + std::to_string(kept) +
                   " bytes and a NUL");
        expect(buf.find_first_not_of('\x7f', capacity) == std::string::npos, "R-ROW-1",
               "row_message wrote past capacity " + std::to_string(capacity));
    }
    expect(d.table().release(d.handle(), op) == KVBLOB_OK, "R-OPS-1", "release refused");
}

}  // namespace

// The checks of this file, in run order.
void add_results_checks(std::vector<Check> &out)
{
    const Check checks[] = {
        {"results.paging-and-order", {"R-ROW-1"}, Level::must, 0, {},
         "results read in pages at any offset agree, and each row's result is its own key's, "
         "whatever the order of keys",
         results_paging_and_order},
        {"results.pending-before-final", {"R-ROW-1"}, Level::must, 0, {"stage_held_get", "release_staged"},
         "before an operation is final, a row without its result reads PENDING, and none does after",
         results_pending_before_final},
        {"results.row-message", {"R-ROW-1"}, Level::must, 0, {},
         "row_message returns the message's length without its terminator, like snprintf; writes at most "
         "capacity bytes, NUL-terminated, truncating",
         results_row_message},
    };
    out.insert(out.end(), std::begin(checks), std::end(checks));
}

}  // namespace kvblob::conformance
