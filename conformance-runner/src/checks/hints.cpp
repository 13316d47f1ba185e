// Checks of hints (R-HNT-*): what a driver with hints receives of the
// engine's hint bytes, and keeps.
#include <cstring>

#include "common.hpp"

namespace kvblob::conformance {

namespace {

void hints_exact_bytes(Context &c)
{
    auto d = c.open();
    GuardedBuffer buf(64);
    auto r = c.reg(d, buf);
    static const char bytes[] = "\x01place\0ment=near\xff\0";  // NULs inside, on purpose
    const std::string hint(bytes, sizeof bytes - 1);
    Batch b;
    b.row(c.key("hinted"), {make_span(r, 0, 64)}).hint(hint);
    auto op = c.admit(d, OpKind::put, b);
    // The engine reuses its buffer at once: the same bytes, overwritten.
    const kvblob_hint_t *given = b.get().hint;
    std::memset(const_cast<void *>(given->bytes), 'X', given->size);
    auto kept = c.echo_hint(d, op);
    expect(kept == hint, "R-HNT-1",
           "the driver kept " + std::to_string(kept.size()) + " bytes of a " +
               std::to_string(hint.size()) + "-byte hint, or other bytes");
    expect(c.settle(d, op), "R-ACC-2", "the put did not settle");
    // A long hint arrives whole, too (no fixed-size field cuts it).
    std::string long_hint(1000, '\0');
    fill_pattern(reinterpret_cast<uint8_t *>(long_hint.data()), long_hint.size(), 7);
    Batch l;
    l.row(c.key("long"), {make_span(r, 0, 64)}).hint(long_hint);
    auto lop = c.admit(d, OpKind::put, l);
    kept = c.echo_hint(d, lop);
    expect(kept == long_hint, "R-HNT-1",
           "the driver kept " + std::to_string(kept.size()) + " bytes of a 1000-byte hint, or other bytes");
    expect(c.settle(d, lop), "R-ACC-2", "the put did not settle");
}

}  // namespace

// The checks of this file, in run order.
void add_hints_checks(std::vector<Check> &out)
{
    const Check checks[] = {
        {"hints.exact-bytes", {"R-HNT-1"}, Level::must, KVBLOB_CAP_HINTS, {"echo_hint"},
         "a driver with hints receives each hint's bytes exactly, and keeps its own copy",
         hints_exact_bytes},
    };
    out.insert(out.end(), std::begin(checks), std::end(checks));
}

}  // namespace kvblob::conformance
