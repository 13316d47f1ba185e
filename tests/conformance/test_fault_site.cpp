// How a touch of guarded memory is named (conformance-runner/src/fault_site.hpp):
// by the operation kind, the row and the offset from its span.
#include <doctest/doctest.h>

#include "fault_site.hpp"

using kvblob::OpKind;
using kvblob::conformance::fault_site_text;
using kvblob::conformance::SpanNote;

TEST_CASE("fault site: a write one byte past a span names the kind, the row and the offset")
{
    const SpanNote span{OpKind::get, 3, 0x10000, 4096};
    CHECK(fault_site_text(0x11000, 1, span) ==
          "[R-REG-3] get row 3: the driver wrote the byte at offset 4096 of its 4096-byte span, 1 past its end "
          "(guarded memory)");
    CHECK(fault_site_text(0x11010, 0, span) ==
          "[R-REG-3] get row 3: the driver read the byte at offset 4112 of its 4096-byte span, 17 past its end "
          "(guarded memory)");
}

TEST_CASE("fault site: before a span, and inside one after its access ended")
{
    const SpanNote span{OpKind::put, 0, 0x10000, 64};
    CHECK(fault_site_text(0xFFFF, -1, span) ==
          "[R-REG-3] put row 0: the driver touched the byte 1 before the start of its 64-byte span (guarded memory)");
    CHECK(fault_site_text(0x10020, 0, span) ==
          "[R-REG-3] put row 0: the driver read the byte at offset 32 of its 64-byte span after its access ended");
}
