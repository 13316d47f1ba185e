// Deliberately broken builds of the bundled drivers. A check no broken
// driver makes fail is a check that cannot fail, so:
//   - each pairing plugin (tests/pairing) is built from the same sources with
//     KVBLOB_BROKEN_BUILD and answers kvblob_broken_check() with the id of
//     the one check whose rule it breaks;
//   - the mutation plugin (tests/mutation) is the same build once more, whose
//     kvblob_broken_check() answers the KVBLOB_MUTANT environment variable,
//     so one library serves every mutant of the campaign.
// In every other build KVBLOB_BREAKS(id) is the constant false, so the
// reference code carries no run-time trace of it.
#pragma once

#ifdef KVBLOB_BROKEN_BUILD
#include <cstring>
extern "C" const char *kvblob_broken_check();
#define KVBLOB_BREAKS(check) (std::strcmp(kvblob_broken_check(), check) == 0)
#else
#define KVBLOB_BREAKS(check) false
#endif
