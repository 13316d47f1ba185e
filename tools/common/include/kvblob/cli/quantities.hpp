// The sizes, counts and durations kvblob's tools accept, parsed in one place
// and checked against what this machine can hold, so that no flag can ask a
// tool for more memory than there is (it would be killed, or die on
// std::bad_alloc), wrap a negative number into a huge one, or run for NaN
// seconds. Every refusal is one line naming the flag, the value and why; the
// tools exit 2 on it.
#pragma once

#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace kvblob::cli {

// The longest duration any tool accepts: a year. Longer is a typo, and
// keeps every deadline well inside std::chrono's range.
constexpr double max_seconds = 365.0 * 24 * 3600;

// "1.5 GiB", "64 KiB", "100 B": a byte count for people.
inline std::string bytes_text(double bytes)
{
    const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int u = 0;
    while (bytes >= 1024 && u < 6) bytes /= 1024, ++u;
    char buf[64];
    std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", bytes, units[u]);
    return buf;
}

// This machine's physical memory in bytes (sysconf), or the largest value
// when the system will not say.
inline uint64_t physical_memory()
{
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) return std::numeric_limits<uint64_t>::max();
    return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
}

// a * b and a + b, or the largest value when they overflow: a caller
// compares them with a limit, and the largest value is over every limit.
inline uint64_t saturating_mul(uint64_t a, uint64_t b)
{
    if (a && b > std::numeric_limits<uint64_t>::max() / a) return std::numeric_limits<uint64_t>::max();
    return a * b;
}
inline uint64_t saturating_add(uint64_t a, uint64_t b)
{
    return b > std::numeric_limits<uint64_t>::max() - a ? std::numeric_limits<uint64_t>::max() : a + b;
}

// Unsigned decimal digits alone: no sign, no space, no exponent. Throws
// std::invalid_argument(why) otherwise or on overflow.
inline uint64_t parse_digits(const std::string &text, const char *what)
{
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
        throw std::invalid_argument("'" + text + "' is not " + what);
    errno = 0;
    const unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
    if (errno == ERANGE) throw std::invalid_argument("'" + text + "' is too large");
    return v;
}

// A positive byte size: digits, then B, K/KiB, M/MiB, G/GiB or T/TiB
// (powers of 1024). Refused above limit (what the machine can hold, say).
inline uint64_t parse_size(const std::string &text, uint64_t limit = std::numeric_limits<uint64_t>::max())
{
    const size_t digits = text.find_first_not_of("0123456789");
    const std::string number = text.substr(0, digits), suffix = digits == std::string::npos ? "" : text.substr(digits);
    int shift = -1;
    if (suffix.empty() || suffix == "B") shift = 0;
    else if (suffix == "K" || suffix == "KiB") shift = 10;
    else if (suffix == "M" || suffix == "MiB") shift = 20;
    else if (suffix == "G" || suffix == "GiB") shift = 30;
    else if (suffix == "T" || suffix == "TiB") shift = 40;
    if (number.empty() || shift < 0)
        throw std::invalid_argument("'" + text + "' is not a size (digits, then B, K, M, G or T)");
    const uint64_t v = parse_digits(number, "a size");
    if (v == 0) throw std::invalid_argument("'" + text + "' is not a positive size");
    if (v > (std::numeric_limits<uint64_t>::max() >> shift)) throw std::invalid_argument("'" + text + "' is too large");
    const uint64_t bytes = v << shift;
    if (bytes > limit)
        throw std::invalid_argument("'" + text + "' (" + bytes_text(static_cast<double>(bytes)) + ") is more than " +
                                    bytes_text(static_cast<double>(limit)) +
                                    (limit == physical_memory() ? ", this machine's memory" : ""));
    return bytes;
}

// A positive count (or zero, where allowed) no larger than limit.
inline uint64_t parse_count(const std::string &text, uint64_t limit, bool zero_allowed = false)
{
    const uint64_t v = parse_digits(text, zero_allowed ? "a whole number" : "a positive whole number");
    if (v == 0 && !zero_allowed) throw std::invalid_argument("'" + text + "' is not a positive whole number");
    if (v > limit) throw std::invalid_argument("'" + text + "' is more than " + std::to_string(limit));
    return v;
}

// A positive, finite number of seconds, at most max_seconds.
inline double parse_seconds(const std::string &text)
{
    char *end = nullptr;
    errno = 0;
    const double v = text.empty() ? NAN : std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v) || v <= 0)
        throw std::invalid_argument("'" + text + "' is not a positive, finite number of seconds");
    if (v > max_seconds) throw std::invalid_argument("'" + text + "' seconds is more than a year");
    return v;
}

// CLI11 validators over the parsers above. Each rewrites the value to plain
// digits (or a plain number) for the option's own type to read, or refuses.
inline CLI::Validator Size(uint64_t limit)
{
    return CLI::Validator(
        [limit](std::string &v) {
            try {
                v = std::to_string(parse_size(v, limit));
                return std::string();
            } catch (const std::invalid_argument &e) {
                return std::string(e.what());
            }
        },
        "SIZE", "Size");
}
// At most this machine's physical memory.
inline CLI::Validator MemorySize() { return Size(physical_memory()); }

inline CLI::Validator Count(uint64_t limit, bool zero_allowed = false)
{
    return CLI::Validator(
        [limit, zero_allowed](std::string &v) {
            try {
                v = std::to_string(parse_count(v, limit, zero_allowed));
                return std::string();
            } catch (const std::invalid_argument &e) {
                return std::string(e.what());
            }
        },
        "COUNT", "Count");
}

inline CLI::Validator Seconds()
{
    return CLI::Validator(
        [](std::string &v) {
            try {
                parse_seconds(v);
                return std::string();
            } catch (const std::invalid_argument &e) {
                return std::string(e.what());
            }
        },
        "SECONDS", "Seconds");
}

// Refuses (std::invalid_argument) when a tool's buffers, bytes in all as
// the caller counts them, exceed this machine's memory. how says what they
// are made of ("4 threads x 2 buffers of --max-bytes 100T").
inline void require_memory(uint64_t bytes, const std::string &how)
{
    const uint64_t have = physical_memory();
    if (bytes > have)
        throw std::invalid_argument(how + " need " +
                                    (bytes == std::numeric_limits<uint64_t>::max()
                                         ? std::string("more than 16 EiB")
                                         : bytes_text(static_cast<double>(bytes))) +
                                    ", more than this machine's memory (" + bytes_text(static_cast<double>(have)) + ")");
}

}  // namespace kvblob::cli
