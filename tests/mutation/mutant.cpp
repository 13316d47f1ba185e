// The mutation plugin's one switch: the mutant to run is named by the
// KVBLOB_MUTANT environment variable (tests/mutation/mutants.txt), read once,
// and answered to the breaking driver (tests/breaking/hook.hpp), which picks
// the Break registered under it. The reference drivers carry no trace of it.
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
