// R-ACC-2 against the bound a driver declares (KVBLOB_CAP_ACCESS_BOUND,
// ABI 1.1): every kind of operation ends its access within the bound of its
// results being final. Context::settle waits that bound and a margin
// (access_wait.hpp) in every check and fails R-ACC-2 past it; this check
// asks each kind of operation once, and says what it saw.
#include <algorithm>
#include <cstring>

#include "access_wait.hpp"
#include "common.hpp"

namespace kvblob::conformance {

namespace {

// Runs one operation: how long after its results were seen final its access
// was seen ended (settle fails R-ACC-2 when that is beyond the wait).
std::chrono::nanoseconds access_after_final(Context &c, Driver &d, OpKind kind, Batch &batch,
                                            kvblob_row_result expected)
{
    kvblob_op_t *op = c.admit(d, kind, batch);
    const auto deadline = std::chrono::steady_clock::now() + c.op_timeout;
    for (uint32_t fin = 0; !fin;) {
        d.table().poll(d.handle(), op, &fin);
        expect(fin || std::chrono::steady_clock::now() < deadline, "R-ACC-2",
               std::string(to_string(kind)) + " not final within the check's timeout");
        if (!fin) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    const auto final_at = std::chrono::steady_clock::now();
    expect(c.settle(d, op), "R-ACC-2", std::string(to_string(kind)) + " did not end its access");
    const auto after = std::chrono::steady_clock::now() - final_at;
    for (const auto &r : c.results(d, op, batch.size()))
        expect(r.result == expected, "R-ROW-1",
               std::string(to_string(kind)) + " row is " + kvblob_row_result_name(r.result) + ", not " +
                   kvblob_row_result_name(expected));
    expect(d.table().release(d.handle(), op) == KVBLOB_OK, "R-OPS-1",
           "release refused for a final operation whose access ended");
    return after;
}

void lifetime_access_bound(Context &c)
{
    auto d = c.open();
    constexpr uint64_t rows = 8, size = 4096;
    GuardedBuffer src(rows * size), dst(rows * size), absent(size);
    fill_pattern(src.data(), src.size(), 61);
    auto rs = c.reg(d, src), rd = c.reg(d, dst), ra = c.reg(d, absent);
    auto pairs = row_pairs(c, rs, rd, rows, size);
    std::chrono::nanoseconds slowest{0};
    auto saw = [&](std::chrono::nanoseconds t) { slowest = std::max(slowest, t); };
    saw(access_after_final(c, d, OpKind::put, pairs.put, KVBLOB_ROW_READY));
    saw(access_after_final(c, d, OpKind::get, pairs.get, KVBLOB_ROW_READY));
    expect(std::memcmp(src.data(), dst.data(), src.size()) == 0, "R-ROW-6", "bytes differ");
    if (d.has(KVBLOB_CAP_ABSENT_IS_MISS)) {
        Batch miss;
        miss.row(c.key("absent"), {make_span(ra, 0, size)});
        saw(access_after_final(c, d, OpKind::get, miss, KVBLOB_ROW_MISS));
    }
    Batch keys;
    for (uint64_t i = 0; i < rows; ++i) keys.row(c.key(std::to_string(i)));
    if (d.has(KVBLOB_CAP_PROBE)) saw(access_after_final(c, d, OpKind::probe, keys, KVBLOB_ROW_READY));
    if (d.has(KVBLOB_CAP_REMOVE)) saw(access_after_final(c, d, OpKind::remove, keys, KVBLOB_ROW_READY));
    c.note("declared bound " + ms_text(std::chrono::nanoseconds(d.caps().access_end_bound_ns)) +
           ", waited at most " + ms_text(access_wait(d.caps())) + "; slowest access end seen " +
           ms_text(slowest) + " after final");
}

}  // namespace

// The checks of this file, in run order.
void add_access_bound_checks(std::vector<Check> &out)
{
    const Check checks[] = {
        {"lifetime.access-bound", {"R-ACC-2"}, Level::must, KVBLOB_CAP_ACCESS_BOUND, {},
         "every kind of operation ends its access within the access-end bound the driver declares, "
         "counted from its results being final",
         lifetime_access_bound},
    };
    out.insert(out.end(), std::begin(checks), std::end(checks));
}

}  // namespace kvblob::conformance
