// Checks that hold a driver's call at a known point inside it (PausedPage)
// and act while it is provably there, so that what a race would show only
// when threads happen to meet is shown every run.
#pragma once

#include "context.hpp"

namespace kvblob::conformance {

// R-CON-1: a put held at row 32 of its batch while another thread's put of
// the same keys is admitted: both are admitted (concurrency.admission-held).
void admission_held_midway(Context &c);
// R-CON-2, R-ROW-8: while a put is held reading its row's bytes, a get of
// that key from another driver is not READY (part of concurrency.threads).
void get_during_held_put(Context &c);
// R-DRN-3: while a put call, then a get call, is held reading its batch, a
// drain does not answer KVBLOB_OK (part of lifetime.drain-waits-for-calls).
void drain_during_held_calls(Context &c);

}  // namespace kvblob::conformance
