// Generates a plugin's C table from a C++ driver class D derived from
// DriverBase. D provides:
//   static std::unique_ptr<D> open(const kvblob_open_args_t &, kvblob_caps_t &);
// which throws OptionError (-> KVBLOB_E_BAD_OPTION, R-OPN-1) or OpenError.
// No exception ever crosses the C boundary: each slot catches and answers
// KVBLOB_E_INTERNAL (or a FAULT-free refusal).
#pragma once

#include <kvblob/kvblob.h>

#include <array>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <initializer_list>

#include "kvblob/support/driver_base.hpp"
#include "kvblob/support/options.hpp"
#include "kvblob/support/scenario_glue.hpp"

namespace kvblob::support {

class OpenError : public std::runtime_error {
public:
    OpenError(kvblob_status status, const std::string &message) : std::runtime_error(message), status(status) {}
    kvblob_status status;
};

inline void write_message(char *buf, uint32_t capacity, const std::string &text)
{
    if (buf && capacity) std::snprintf(buf, capacity, "%s", text.c_str());
}

template <class D>
struct CTableOf {
    static DriverBase *self(kvblob_driver_t *d) { return static_cast<DriverBase *>(d); }

    static kvblob_status open(const kvblob_open_args_t *args, kvblob_caps_t *caps, kvblob_driver_t **out, char *err,
                              uint32_t cap) noexcept
    {
        if (out) *out = nullptr;
        if (!args || !caps || !out || args->struct_size < sizeof(kvblob_open_args_t)) {
            write_message(err, cap, "open: NULL or undersized arguments");
            return KVBLOB_E_INVALID;
        }
        try {
            auto driver = D::open(*args, *caps);
            driver->offer_notify(*args, *caps);  // KVBLOB_CAP_NOTIFY, from ABI 1.1 on
            *out = driver.release();
            return KVBLOB_OK;
        } catch (const OptionError &e) {
            write_message(err, cap, e.what());
            return KVBLOB_E_BAD_OPTION;
        } catch (const OpenError &e) {
            write_message(err, cap, e.what());
            return e.status;
        } catch (const std::exception &e) {
            write_message(err, cap, e.what());
            return KVBLOB_E_INTERNAL;
        } catch (...) {
            write_message(err, cap, "open failed");
            return KVBLOB_E_INTERNAL;
        }
    }
    static kvblob_status close(kvblob_driver_t *d) noexcept
    {
        if (!d) return KVBLOB_E_INVALID;
        kvblob_status st = self(d)->can_close();
        if (st == KVBLOB_OK) delete static_cast<D *>(self(d));
        return st;
    }
    // kvblob.scenarios/1 is answered here, from the hooks D implements
    // (scenario_glue.hpp); any other extension by D itself.
    static const void *get_extension(kvblob_driver_t *d, const char *id) noexcept
    {
        if (!d || !id) return nullptr;
        if constexpr (ScenarioGlue<D>::offers_any())
            if (std::strcmp(id, KVBLOB_EXT_SCENARIOS) == 0)
                if (const kvblob_scenarios_t *t = ScenarioGlue<D>::offered(*static_cast<D *>(self(d)))) return t;
        return self(d)->extension(id);
    }
    static kvblob_status register_region(kvblob_driver_t *d, const kvblob_region_desc_t *desc, kvblob_region_t **out,
                                         char *err, uint32_t cap) noexcept
    {
        try {
            std::string why;
            kvblob_status st = self(d)->register_region(desc, out, why);
            if (st != KVBLOB_OK) write_message(err, cap, why);
            return st;
        } catch (...) {
            write_message(err, cap, "out of memory");
            return KVBLOB_E_NO_MEMORY;
        }
    }
    static kvblob_status unregister_region(kvblob_driver_t *d, kvblob_region_t *r) noexcept
    {
        return self(d)->unregister_region(r);
    }
    template <OpKind K>
    static kvblob_status submit(kvblob_driver_t *d, const kvblob_batch_t *b, kvblob_op_t **out, char *err,
                                uint32_t cap) noexcept
    {
        try {
            std::string why;
            kvblob_status st = self(d)->submit(K, b, out, why);
            if (st != KVBLOB_OK) write_message(err, cap, why);
            return st;
        } catch (...) {
            // Nothing was recorded before admission (R-ADM-9).
            write_message(err, cap, "out of memory while admitting");
            if (out) *out = nullptr;
            return KVBLOB_E_REJECTED;
        }
    }
    static kvblob_status poll(kvblob_driver_t *d, kvblob_op_t *op, uint32_t *fin) noexcept
    {
        return self(d)->poll(op, fin);
    }
    static kvblob_status results(kvblob_driver_t *d, kvblob_op_t *op, uint64_t first, uint64_t count,
                                 kvblob_row_status_t *out) noexcept
    {
        return self(d)->results(op, first, count, out);
    }
    static uint32_t row_message(kvblob_driver_t *d, kvblob_op_t *op, uint64_t row, char *buf, uint32_t cap) noexcept
    {
        return self(d)->row_message(op, row, buf, cap);
    }
    static kvblob_access access(kvblob_driver_t *d, kvblob_op_t *op) noexcept { return self(d)->access(op); }
    static kvblob_status cancel(kvblob_driver_t *d, kvblob_op_t *op) noexcept { return self(d)->cancel(op); }
    static kvblob_status release(kvblob_driver_t *d, kvblob_op_t *op) noexcept { return self(d)->release(op); }
    static kvblob_status drain(kvblob_driver_t *d, uint64_t timeout_ns) noexcept
    {
        try {
            return self(d)->drain(timeout_ns);
        } catch (...) {
            return KVBLOB_E_INTERNAL;
        }
    }

    // The table laid out for one ABI version: identical slots, the version
    // the negotiation chose, and the 1.1 members only from 1.1 on.
    static constexpr kvblob_plugin_t table(uint32_t abi_version, const char *name, const char *version,
                                           const char *description, const kvblob_option_desc_t *options,
                                           uint64_t option_count, bool probe, bool remove,
                                           const kvblob_option_flags *option_flags = nullptr)
    {
        const bool v1_1 = abi_version >= KVBLOB_ABI_1_1;
        return kvblob_plugin_t{
            .struct_size = v1_1 ? static_cast<uint32_t>(sizeof(kvblob_plugin_t)) : KVBLOB_PLUGIN_SIZE_1_0,
            .abi_version = abi_version,
            .contract_version = KVBLOB_CONTRACT_VERSION,
            .reserved = 0,
            .name = name,
            .version = version,
            .description = description,
            .options = options,
            .option_count = option_count,
            .open = &open,
            .close = &close,
            .get_extension = &get_extension,
            .register_region = &register_region,
            .unregister_region = &unregister_region,
            .put = &submit<OpKind::put>,
            .get = &submit<OpKind::get>,
            .probe = probe ? &submit<OpKind::probe> : nullptr,
            .remove = remove ? &submit<OpKind::remove> : nullptr,
            .poll = &poll,
            .results = &results,
            .row_message = &row_message,
            .access = &access,
            .cancel = &cancel,
            .release = &release,
            .drain = &drain,
            .option_flags = v1_1 ? option_flags : nullptr,
        };
    }
};

// The ABI 1.1 flag words for an option table: KVBLOB_OPTION_FLAG_SECRET on
// the options named in secrets, 0 on the rest.
template <std::size_t N>
constexpr std::array<kvblob_option_flags, N> option_flags(const std::array<kvblob_option_desc_t, N> &options,
                                                          std::initializer_list<std::string_view> secrets = {})
{
    std::array<kvblob_option_flags, N> flags{};
    for (std::size_t i = 0; i < N; ++i)
        for (std::string_view secret : secrets)
            if (secret == options[i].name) flags[i] |= KVBLOB_OPTION_FLAG_SECRET;
    return flags;
}

// One plugin's table for each ABI version it speaks (1.0 and 1.1).
struct PluginTables {
    kvblob_plugin_t v1_0;
    kvblob_plugin_t v1_1;
    const kvblob_plugin_t *for_version(uint32_t abi) const { return abi >= KVBLOB_ABI_1_1 ? &v1_1 : &v1_0; }
};

template <class D>
constexpr PluginTables tables(const char *name, const char *version, const char *description,
                              const kvblob_option_desc_t *options, uint64_t option_count, bool probe, bool remove,
                              const kvblob_option_flags *option_flags = nullptr)
{
    return {CTableOf<D>::table(KVBLOB_ABI_1_0, name, version, description, options, option_count, probe, remove),
            CTableOf<D>::table(KVBLOB_ABI_1_1, name, version, description, options, option_count, probe, remove,
                               option_flags)};
}

// The highest version inside both [host_min, host_max] and [own_oldest,
// own_newest], or 0 when the ranges do not meet. A host of a later major
// version that still offers 1.x gets the newest 1.x this plugin speaks.
constexpr uint32_t choose_abi_version(uint32_t host_min, uint32_t host_max, uint32_t own_oldest, uint32_t own_newest)
{
    const uint32_t high = host_max < own_newest ? host_max : own_newest;
    const uint32_t low = host_min > own_oldest ? host_min : own_oldest;
    return high >= low ? high : 0;
}

// The negotiation every bundled driver answers (R-LOAD-3).
inline kvblob_status negotiate(kvblob_negotiation_t *n, const PluginTables &tables)
{
    if (!n || n->struct_size < sizeof(kvblob_negotiation_t)) return KVBLOB_E_INVALID;
    const uint32_t chosen = choose_abi_version(n->host_min_abi_version, n->host_max_abi_version,
                                               KVBLOB_ABI_VERSION_OLDEST, KVBLOB_ABI_VERSION);
    if (chosen == 0) {
        // Say what this plugin speaks, so the host can tell which side is old.
        n->chosen_abi_version = KVBLOB_ABI_VERSION;
        return KVBLOB_E_UNSUPPORTED;
    }
    n->chosen_abi_version = chosen;
    n->plugin = tables.for_version(chosen);
    return KVBLOB_OK;
}

}  // namespace kvblob::support
