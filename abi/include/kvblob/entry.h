/*
 * kvblob/entry.h: the one exported function of a plugin, and the load rules
 * the host's loader enforces.
 *
 * A plugin exports kvblob_plugin_negotiate and nothing else (build with
 * -fvisibility=hidden, -Wl,-z,defs and the version script kvblob_plugin.map
 * that ships with these headers). The host offers a range of ABI versions;
 * the plugin answers the one it speaks and its table; the host re-checks
 * the answer before trusting it (OpenXR's xrNegotiateLoaderRuntimeInterface).
 *
 * Load rules (defined in share/doc/kvblob-dev/contract.md, "Loading a plugin";
 * repeated here): the loader's refusals name one of these ids, the stage
 * (open, entry, negotiate, validate, init), the file and the reason.
 *   R-LOAD-1  The file is a regular file holding all its loadable segments,
 *             a shared object the dynamic linker can load with RTLD_NOW
 *             (stage open; the dlerror() text is quoted).
 *   R-LOAD-2  It exports KVBLOB_ENTRY_SYMBOL (stage entry).
 *   R-LOAD-3  The entry returns KVBLOB_OK, a non-NULL table, and an ABI
 *             version inside the offered range (stage negotiate).
 *   R-LOAD-4  The table's struct_size covers ABI 1.0 and its abi_version is
 *             the negotiated one; its reserved member is zero (validate).
 *   R-LOAD-5  Every mandatory slot is non-NULL (validate).
 *   R-LOAD-6  name is 1..64 bytes of [a-z0-9_-]; version is 1..64 printable
 *             bytes (validate).
 *   R-LOAD-7  Each option description has a struct_size, a known type and a
 *             non-empty name, and no name appears twice (validate).
 *   R-LOAD-8  At open, the capability record has no reserved bit or member
 *             set (a bit the negotiated version does not define, such as a
 *             1.1 bit at 1.0, is reserved), every limit is positive,
 *             max_spans_per_row is 1 without KVBLOB_CAP_MULTI_SPAN, and the
 *             probe/remove slots are non-NULL when their capability is
 *             declared (stage init; R-CAP-1).
 *   R-LOAD-9  An open that fails returns a status other than KVBLOB_OK, a
 *             NULL driver and a message (stage init; R-OPN-1 when the
 *             status is KVBLOB_E_BAD_OPTION).
 *   R-LOAD-10 The file, and its folder unless sticky, is not world-writable,
 *             and the file is owned by root or by the loading process's
 *             user, unless the engine allows it (stage open, before any of
 *             its code runs).
 *   R-LOAD-11 When the engine pins the file's SHA-256, the file has it
 *             (stage open).
 *   R-LOAD-12 An extension the host reads (kvblob.scenarios/1) lies, all its
 *             struct_size bytes, in a loaded segment of the plugin's own
 *             image: a static object (stage init).
 */
#ifndef KVBLOB_ENTRY_H
#define KVBLOB_ENTRY_H

#include <stdint.h>

#include "driver.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KVBLOB_ENTRY_SYMBOL "kvblob_plugin_negotiate"

/* Filled in by both sides: the host sets struct_size and the offered range
 * and zeroes the rest; the plugin sets chosen_abi_version and plugin. */
typedef struct kvblob_negotiation {
    uint32_t struct_size;
    /* Offered by the host: the oldest and newest ABI versions it speaks. */
    uint32_t host_min_abi_version;
    uint32_t host_max_abi_version;
    /* Answered by the plugin: the version it speaks, inside the range. */
    uint32_t chosen_abi_version;
    /* Answered by the plugin: its static table, laid out for
     * chosen_abi_version, valid until the plugin is unloaded. */
    const kvblob_plugin_t *plugin;
    /* The kvblob release the host was built from, major and minor packed by
     * KVBLOB_MAKE_VERSION (release 0.1.0 -> 0.1); informative, and not the
     * ABI version (that is the offered range above). */
    uint32_t host_kvblob_version;
    uint32_t reserved;
} kvblob_negotiation_t;

#if defined(_WIN32)
#define KVBLOB_EXPORT __declspec(dllexport)
#else
#define KVBLOB_EXPORT __attribute__((visibility("default")))
#endif

/* The entry every plugin exports. Returns KVBLOB_OK with the answer filled
 * in, or KVBLOB_E_UNSUPPORTED when no version in the range is spoken.
 * Owns nothing it is given; must not allocate what the host would free.
 * [load-thread] */
typedef kvblob_status (*kvblob_negotiate_fn)(kvblob_negotiation_t *negotiation);

KVBLOB_EXPORT kvblob_status kvblob_plugin_negotiate(kvblob_negotiation_t *negotiation);

#ifdef __cplusplus
}
#endif

#endif /* KVBLOB_ENTRY_H */
