// Generates a driver's kvblob.scenarios/1 table from a C++ driver class D:
// each slot is offered exactly when D has the member that stages it, so a
// driver names what its store can stage by what it implements, and the
// battery reports the rest as not supported.
//
// Members, each optional:
//   kvblob_status stage_foreign_writer(const std::string &key);
//   kvblob_status stage_full_pool();
//   kvblob_status stage_failing_read(const std::string &key);
//   kvblob_status stage_held_get(const std::string &key);
//   kvblob_status stage_corrupt(const std::string &key);
//   kvblob_status stage_unprovable(const std::string &key);
//   kvblob_status release_staged();
//   kvblob_status advance(kvblob_op_t *op, kvblob_stage stage);
//   uint64_t echo_hint(kvblob_op_t *op, void *buf, uint64_t capacity);
#pragma once

#include <kvblob/kvblob.h>

#include <string>

#include "kvblob/support/driver_base.hpp"

namespace kvblob::support {

template <class D>
struct ScenarioGlue {
    static D *self(kvblob_driver_t *d) { return static_cast<D *>(static_cast<DriverBase *>(d)); }
    static std::string key(const uint8_t *k, uint64_t n)
    {
        return k ? std::string(reinterpret_cast<const char *>(k), n) : std::string();
    }
    // No exception crosses the C boundary.
    template <class F>
    static kvblob_status guarded(F &&f) noexcept
    {
        try {
            return f();
        } catch (...) {
            return KVBLOB_E_INTERNAL;
        }
    }

    static kvblob_status foreign_writer(kvblob_driver_t *d, const uint8_t *k, uint64_t n) noexcept
    {
        return guarded([&] { return self(d)->stage_foreign_writer(key(k, n)); });
    }
    static kvblob_status full_pool(kvblob_driver_t *d) noexcept
    {
        return guarded([&] { return self(d)->stage_full_pool(); });
    }
    static kvblob_status failing_read(kvblob_driver_t *d, const uint8_t *k, uint64_t n) noexcept
    {
        return guarded([&] { return self(d)->stage_failing_read(key(k, n)); });
    }
    static kvblob_status held_get(kvblob_driver_t *d, const uint8_t *k, uint64_t n) noexcept
    {
        return guarded([&] { return self(d)->stage_held_get(key(k, n)); });
    }
    static kvblob_status corrupt(kvblob_driver_t *d, const uint8_t *k, uint64_t n) noexcept
    {
        return guarded([&] { return self(d)->stage_corrupt(key(k, n)); });
    }
    static kvblob_status unprovable(kvblob_driver_t *d, const uint8_t *k, uint64_t n) noexcept
    {
        return guarded([&] { return self(d)->stage_unprovable(key(k, n)); });
    }
    static kvblob_status release(kvblob_driver_t *d) noexcept
    {
        return guarded([&] { return self(d)->release_staged(); });
    }
    static kvblob_status advance(kvblob_driver_t *d, kvblob_op_t *op, kvblob_stage stage) noexcept
    {
        return guarded([&] { return self(d)->advance(op, stage); });
    }
    static uint64_t echo_hint(kvblob_driver_t *d, kvblob_op_t *op, void *buf, uint64_t capacity) noexcept
    {
        return self(d)->echo_hint(op, buf, capacity);
    }

    // Which hooks D implements.
    static constexpr bool has_foreign_writer = requires(D &d, const std::string &s) { d.stage_foreign_writer(s); };
    static constexpr bool has_full_pool = requires(D &d) { d.stage_full_pool(); };
    static constexpr bool has_failing_read = requires(D &d, const std::string &s) { d.stage_failing_read(s); };
    static constexpr bool has_held_get = requires(D &d, const std::string &s) { d.stage_held_get(s); };
    static constexpr bool has_corrupt = requires(D &d, const std::string &s) { d.stage_corrupt(s); };
    static constexpr bool has_unprovable = requires(D &d, const std::string &s) { d.stage_unprovable(s); };
    static constexpr bool has_release = requires(D &d) { d.release_staged(); };
    static constexpr bool has_advance = requires(D &d, kvblob_op_t *op) { d.advance(op, KVBLOB_STAGE_START); };
    static constexpr bool has_echo_hint = requires(D &d, kvblob_op_t *op, void *b) { d.echo_hint(op, b, uint64_t{}); };

    static constexpr kvblob_scenarios_t table()
    {
        kvblob_scenarios_t t{};
        t.struct_size = sizeof(kvblob_scenarios_t);
        if constexpr (has_foreign_writer) t.stage_foreign_writer = &foreign_writer;
        if constexpr (has_full_pool) t.stage_full_pool = &full_pool;
        if constexpr (has_failing_read) t.stage_failing_read = &failing_read;
        if constexpr (has_held_get) t.stage_held_get = &held_get;
        if constexpr (has_corrupt) t.stage_corrupt = &corrupt;
        if constexpr (has_unprovable) t.stage_unprovable = &unprovable;
        if constexpr (has_release) t.release_staged = &release;
        if constexpr (has_advance) t.advance = &advance;
        if constexpr (has_echo_hint) t.echo_hint = &echo_hint;
        return t;
    }
    // Whether D stages anything at all (else the extension is not offered).
    static constexpr bool offers_any()
    {
        return has_foreign_writer || has_full_pool || has_failing_read || has_held_get || has_corrupt ||
               has_unprovable || has_release || has_advance || has_echo_hint;
    }
    static constexpr kvblob_scenarios_t instance = table();
    // The table this driver, as opened, offers (nullptr: none). D may
    // narrow it to the hooks its store can stage with
    // const kvblob_scenarios_t *scenarios_offered(), returning a table with
    // static storage: the loader refuses one outside the plugin's image
    // (R-LOAD-12).
    static const kvblob_scenarios_t *offered(D &d)
    {
        if constexpr (requires { d.scenarios_offered(); }) return d.scenarios_offered();
        else return &instance;
    }
};

}  // namespace kvblob::support
