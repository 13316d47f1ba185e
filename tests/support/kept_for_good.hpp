// Objects a test hands to a driver that may never be proven done with them
// (R-REG-2, R-ADM-1): allocated for the life of the process, on purpose, and
// marked so that LeakSanitizer (on in the asan preset) reports every other
// leak and not these.
#pragma once

#include <utility>

#include "kvblob/host/keep_alive.hpp"

template <class T, class... Args>
T &kept_for_good(Args &&...args)
{
    T *object = new T(std::forward<Args>(args)...);
    kvblob::keep_alive_for_good(object);
    return *object;
}
