#include "kvblob/support/limits.hpp"

#include <string>

namespace kvblob::support {

uint64_t positive(const ParsedOptions &o, const char *name)
{
    int64_t v = o.integer(name);
    if (v <= 0) throw OptionError(std::string("option '") + name + "' must be positive");
    return static_cast<uint64_t>(v);
}

unsigned worker_count(const ParsedOptions &o)
{
    const uint64_t workers = positive(o, "workers");
    if (workers > 256) throw OptionError("option 'workers' must be at most 256");
    return static_cast<unsigned>(workers);
}

void apply_limits(const ParsedOptions &o, kvblob_caps_t &caps)
{
    caps.max_rows_per_op = positive(o, "max_rows");
    caps.max_spans_per_row = positive(o, "max_spans");
    caps.max_key_bytes = positive(o, "max_key_bytes");
    caps.max_object_bytes = o.bytes("max_object_bytes");
    if (caps.max_object_bytes == 0) throw OptionError("option 'max_object_bytes' must be positive");
    caps.max_ops_in_flight = positive(o, "max_ops_in_flight");
    if (caps.max_spans_per_row > 1) caps.flags |= KVBLOB_CAP_MULTI_SPAN;
}

}  // namespace kvblob::support
