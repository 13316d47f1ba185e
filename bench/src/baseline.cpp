#include "baseline.hpp"

namespace kvblob::bench {

namespace {

std::string option_value(const Options &options, const std::string &key, const std::string &fallback = {})
{
    std::string v = fallback;
    for (const auto &[k, value] : options)
        if (k == key) v = value;
    return v;
}

}  // namespace

std::optional<Baseline> baseline_for(const std::string &driver, const Options &options, WaitStyle wait,
                                     std::string &why_none)
{
    if (driver == "memory" || driver == "minimal") return memcpy_baseline();
    if (driver == "file") return posix_baseline(option_value(options, "root"), option_value(options, "fsync", "none"));
    if (driver == "redis") return hiredis_baseline(options, why_none);
    if (driver == "mooncake") return mooncake_baseline(options, wait);
    why_none = "no baseline is known for driver '" + driver + "'";
    return std::nullopt;
}

}  // namespace kvblob::bench
