// What a check left in the store once it ended. The battery removes what
// each check wrote where the driver offers remove (cleanup.hpp); what stays
// (no remove, a key another writer holds, a check that never finished) is
// counted here and said in every report.
#pragma once

#include <cstdint>
#include <string>

namespace kvblob::conformance {

struct Leftover {
    uint64_t keys = 0, bytes = 0;
    // False when nobody can tell: the check crashed or ran out of time
    // before its cleanup did.
    bool known = true;
    // What stayed and why; empty when nothing did.
    std::string why;

    bool any() const { return keys > 0 || !known; }
};

// "3 keys, 12288 bytes: why", or "unknown: why".
std::string to_text(const Leftover &left);

// One line of a child's result ("left KEYS BYTES KNOWN WHY"), and back.
std::string to_wire(const Leftover &left);
Leftover from_wire(const std::string &line);

}  // namespace kvblob::conformance
