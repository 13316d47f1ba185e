// Where a touch of guarded memory lay (R-REG-3): the spans the battery
// handed the driver are noted as they go out (Context::submit), the fault
// handler notes the first fault's address, and the check's FAIL then names
// the operation kind, the row, and the offset of the touch from its span
// ("get row 0: wrote the byte at offset 64 of its 64-byte span, 1 past its
// end"), not only an address.
#pragma once

#include <kvblob/kvblob.h>

#include <string>

#include "kvblob/host/types.hpp"

namespace kvblob::conformance {

// The battery's memory a region handle the driver gave covers, from base.
void note_region(const kvblob_region_t *region, const void *base);
// The spans of batch, submitted as kind (only put and get carry spans).
void note_spans(OpKind kind, const kvblob_batch_t &batch);

// From the fault handler: the first touch of guarded memory, at addr; write
// is 1 for a write, 0 for a read, -1 when the machine does not say.
// Async-signal-safe.
void note_guarded_fault(const void *addr, int write);

// A noted span as the fault text names it.
struct SpanNote {
    OpKind kind;
    uint64_t row;
    uintptr_t start;
    uint64_t length;
    uint64_t seq = 0;  // its place among every span noted
};

// The FAIL's text for a touch at addr (write as above) near span, or inside
// it after its access ended: "[R-REG-3] get row 0: ...". Pure, for tests.
std::string fault_site_text(uintptr_t addr, int write, const SpanNote &span);

// "[R-REG-3] ..." for the first noted fault, named by the span it lay
// nearest to in the same guarded mapping; empty when no fault was noted,
// or when no noted span lies in its mapping (a span the check handed the
// driver through the table itself): the runner then names the address.
std::string first_fault_text();

}  // namespace kvblob::conformance
