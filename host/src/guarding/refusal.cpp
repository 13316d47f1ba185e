#include "refusal.hpp"

#include <cstring>

namespace kvblob {

namespace {

// The rule a REJECTED refusal names in its leading field: "[R-ADM-n]" with
// n one of the refusals a driver may make (R-ADM-3 .. R-ADM-9); empty
// otherwise. Only the field's fixed place is read.
std::string leading_admission_rule(const char *err)
{
    static constexpr char prefix[] = "[R-ADM-";
    constexpr size_t prefix_size = sizeof prefix - 1;
    if (!err || std::strncmp(err, prefix, prefix_size) != 0) return {};
    const char digit = err[prefix_size];
    if (digit < '3' || digit > '9' || err[prefix_size + 1] != ']') return {};
    return std::string(err + 1, prefix_size);  // "R-ADM-n"
}

}  // namespace

DriverRefusal driver_refusal(kvblob_status status, const char *err)
{
    if (status == KVBLOB_E_CLOSED) return {true, "R-ADM-2", "R-ADM-2"};
    if (status == KVBLOB_E_REJECTED) {
        std::string rule = leading_admission_rule(err);
        if (rule.empty()) return {true, "R-ADM-1", "driver"};
        return {true, rule, rule};
    }
    return {false, "R-ADM-1", "driver"};
}

}  // namespace kvblob
