// The capability record of a driver a test writes on DriverBase to watch
// its machinery alone (tests/plugins/test_waiter_runs.cpp,
// test_release_waits.cpp): probes only, whose rows carry no spans, so the
// test needs no region.
#pragma once

#include <kvblob/kvblob.h>

inline kvblob_caps_t probe_caps()
{
    kvblob_caps_t caps{};
    caps.struct_size = sizeof caps;
    caps.max_rows_per_op = 16;
    caps.max_key_bytes = 64;
    caps.max_object_bytes = 1 << 20;
    caps.max_ops_in_flight = 1024;
    caps.flags = KVBLOB_CAP_PROBE;
    return caps;
}
