// Generates a plugin's C table from a C++ driver class D derived from
// DriverBase. D provides:
//   static std::unique_ptr<D> open(const kvblob_open_args_t &, kvblob_caps_t &);
// which throws OptionError (-> KVBLOB_E_BAD_OPTION, R-OPN-1) or OpenError.
// No exception ever crosses the C boundary: each slot catches and answers
// KVBLOB_E_INTERNAL (or a FAULT-free refusal).
#pragma once

#include <kvblob/kvblob.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

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
struct Glue {
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
            if (std::strcmp(id, KVBLOB_EXT_SCENARIOS) == 0 && ScenarioGlue<D>::available(*static_cast<D *>(self(d))))
                return &ScenarioGlue<D>::instance;
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

    static constexpr kvblob_plugin_t table(const char *name, const char *version, const char *description,
                                           const kvblob_option_desc_t *options, uint64_t option_count,
                                           bool probe, bool remove)
    {
        return kvblob_plugin_t{
            sizeof(kvblob_plugin_t),
            KVBLOB_ABI_VERSION,
            KVBLOB_CONTRACT_VERSION,
            0,
            name,
            version,
            description,
            options,
            option_count,
            &open,
            &close,
            &get_extension,
            &register_region,
            &unregister_region,
            &submit<OpKind::put>,
            &submit<OpKind::get>,
            probe ? &submit<OpKind::probe> : nullptr,
            remove ? &submit<OpKind::remove> : nullptr,
            &poll,
            &results,
            &row_message,
            &access,
            &cancel,
            &release,
            &drain,
        };
    }
};

// The negotiation every bundled driver answers: ABI 1.0 inside the range.
inline kvblob_status negotiate(kvblob_negotiation_t *n, const kvblob_plugin_t *table)
{
    if (!n || n->struct_size < sizeof(kvblob_negotiation_t)) return KVBLOB_E_INVALID;
    if (n->host_min_abi_version > KVBLOB_ABI_VERSION || n->host_max_abi_version < KVBLOB_ABI_VERSION_OLDEST ||
        KVBLOB_VERSION_MAJOR(n->host_max_abi_version) != KVBLOB_ABI_VERSION_MAJOR) {
        n->chosen_abi_version = KVBLOB_ABI_VERSION;
        return KVBLOB_E_UNSUPPORTED;
    }
    n->chosen_abi_version = KVBLOB_ABI_VERSION;
    n->plugin = table;
    return KVBLOB_OK;
}

}  // namespace kvblob::support
