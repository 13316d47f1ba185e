#include "kvblob/host/capabilities.hpp"

#include <kvblob/types.h>

namespace kvblob {

std::vector<std::string> capability_names(uint64_t flags)
{
    static const struct {
        uint64_t bit;
        const char *name;
    } names[] = {
        {KVBLOB_CAP_HINTS, "hints"},           {KVBLOB_CAP_ABSENT_IS_MISS, "absent_is_miss"},
        {KVBLOB_CAP_DEVICE_MEMORY, "device_memory"}, {KVBLOB_CAP_MULTI_SPAN, "multi_span"},
        {KVBLOB_CAP_PROBE, "probe"},           {KVBLOB_CAP_REMOVE, "remove"},
        {KVBLOB_CAP_NOTIFY, "notify"},
        {KVBLOB_CAP_ACCESS_BOUND, "access_bound"},
    };
    std::vector<std::string> out;
    for (const auto &n : names)
        if (flags & n.bit) out.emplace_back(n.name);
    return out;
}

}  // namespace kvblob
