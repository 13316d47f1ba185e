// Deliberately broken builds of the bundled drivers, for the battery's
// pairing tests (a check no broken driver makes fail is a check that cannot
// fail). A broken plugin is built from the same sources with
// KVBLOB_BROKEN_BUILD and defines kvblob_broken_check: the id of the one
// check whose rule it breaks. In every other build KVBLOB_BREAKS(id) is the
// constant false, so the reference code carries no run-time trace of it.
#pragma once

#ifdef KVBLOB_BROKEN_BUILD
#include <cstring>
extern "C" const char kvblob_broken_check[];
#define KVBLOB_BREAKS(check) (std::strcmp(kvblob_broken_check, check) == 0)
#else
#define KVBLOB_BREAKS(check) false
#endif
