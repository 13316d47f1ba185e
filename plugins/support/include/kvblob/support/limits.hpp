// The admission limits every bundled driver declares (R-CAP-*), as options
// with the same names and meaning in each driver, so that an engine or a
// test can shrink them the same way everywhere.
#pragma once

#include <kvblob/kvblob.h>

#include <array>
#include <cstddef>

#include "kvblob/support/options.hpp"

namespace kvblob::support {

// The entries of an option table, one maker per option type
// (KVBLOB_OPTION_*): name, default, help, and for a choice its choices
// between default and help. Only a choice has choices, so a choice without
// them (refused at load, R-LOAD-7) cannot be written. A plugin.cpp says
// `using namespace support::option_types;` and writes integer("workers",
// "2", "...").
namespace option_types {

constexpr kvblob_option_desc_t text(const char *name, const char *def, const char *help)
{
    return {sizeof(kvblob_option_desc_t), KVBLOB_OPTION_STRING, name, def, nullptr, help};
}
constexpr kvblob_option_desc_t integer(const char *name, const char *def, const char *help)
{
    return {sizeof(kvblob_option_desc_t), KVBLOB_OPTION_INT, name, def, nullptr, help};
}
constexpr kvblob_option_desc_t flag(const char *name, const char *def, const char *help)
{
    return {sizeof(kvblob_option_desc_t), KVBLOB_OPTION_BOOL, name, def, nullptr, help};
}
constexpr kvblob_option_desc_t bytes(const char *name, const char *def, const char *help)
{
    return {sizeof(kvblob_option_desc_t), KVBLOB_OPTION_BYTES, name, def, nullptr, help};
}
constexpr kvblob_option_desc_t milliseconds(const char *name, const char *def, const char *help)
{
    return {sizeof(kvblob_option_desc_t), KVBLOB_OPTION_MILLISECONDS, name, def, nullptr, help};
}
// choices: "a|b|c".
constexpr kvblob_option_desc_t choice(const char *name, const char *def, const char *choices, const char *help)
{
    return {sizeof(kvblob_option_desc_t), KVBLOB_OPTION_CHOICE, name, def, choices, help};
}

}  // namespace option_types

struct LimitDefaults {
    const char *max_rows = "65536";
    const char *max_spans = "64";
    const char *max_key_bytes = "1024";
    const char *max_object_bytes = "4G";
    const char *max_ops_in_flight = "4096";
};

constexpr std::array<kvblob_option_desc_t, 5> limit_options(LimitDefaults d = {})
{
    using namespace option_types;
    return {
        integer("max_rows", d.max_rows, "Most rows per operation."),
        integer("max_spans", d.max_spans, "Most spans per row (1 turns multi_span off)."),
        integer("max_key_bytes", d.max_key_bytes, "Longest key, in bytes."),
        bytes("max_object_bytes", d.max_object_bytes, "Largest object."),
        integer("max_ops_in_flight", d.max_ops_in_flight, "Most operations admitted and not settled."),
    };
}

// A driver's option table: its own options, then the limits.
template <size_t A, size_t B>
constexpr std::array<kvblob_option_desc_t, A + B> join(const std::array<kvblob_option_desc_t, A> &a,
                                                       const std::array<kvblob_option_desc_t, B> &b)
{
    std::array<kvblob_option_desc_t, A + B> out{};
    for (size_t i = 0; i < A; ++i) out[i] = a[i];
    for (size_t i = 0; i < B; ++i) out[A + i] = b[i];
    return out;
}

// A positive integer option; OptionError naming it otherwise.
uint64_t positive(const ParsedOptions &o, const char *name);

// The "workers" option: worker threads, 1 to 256.
unsigned worker_count(const ParsedOptions &o);

// Reads the limit options into caps (and multi_span when more than one span
// is allowed). Throws OptionError naming a bad one.
void apply_limits(const ParsedOptions &o, kvblob_caps_t &caps);

}  // namespace kvblob::support
