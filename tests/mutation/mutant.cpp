// The mutation plugin's one switch: the mutant to run is named by the
// KVBLOB_MUTANT environment variable (tests/mutation/mutants.txt), read once.
// Only this library reads it; the reference drivers carry no trace of it
// (plugins/support/include/kvblob/support/breakage.hpp).
#include <cstdlib>
#include <string>

extern "C" const char *kvblob_broken_check()
{
    static const std::string mutant = [] {
        const char *m = std::getenv("KVBLOB_MUTANT");
        return std::string(m ? m : "");
    }();
    return mutant.c_str();
}
