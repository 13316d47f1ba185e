// What a failed submit was, decided from the call's structure: the status
// the driver answered, and the rule id the driver put in the one place the
// contract gives it (a leading "[R-ADM-n] " in err, as plugins/support's
// admission writes it). The rest of the text is the driver's own words and
// is never searched. Internal to the host library.
#pragma once

#include <kvblob/kvblob.h>

#include <string>

namespace kvblob {

struct DriverRefusal {
    // REJECTED or CLOSED: the one answer that certifies nothing was touched
    // (R-ADM-1); any other failure proves nothing.
    bool refused = false;
    // The rule CallError names: R-ADM-2 for CLOSED; for REJECTED the rule
    // the driver gave (R-ADM-3 .. R-ADM-9), or R-ADM-1 where it gave none;
    // R-ADM-1 for an answer that is not a refusal, which breaks it.
    std::string rule;
    // What the metrics count the refusal under: the rule where the
    // structure names one, "driver" where only the driver knows why.
    std::string counted;
};

DriverRefusal driver_refusal(kvblob_status status, const char *err);

}  // namespace kvblob
