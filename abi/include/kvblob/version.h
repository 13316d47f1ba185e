/*
 * kvblob/version.h: the three versions that a driver and a host keep apart.
 *
 * - The ABI version (major.minor) names the layout of every struct and the
 *   calling rules of every slot in these headers. A minor bump only appends
 *   (new struct members at the end, new slots at the end of a table); a
 *   major bump may break anything and is refused by older hosts.
 * - The contract version names the behaviour rules (the R-... ids) of
 *   share/doc/kvblob-dev/contract.md that a driver claims to honour.
 * - The driver's own release version is a string the plugin reports; the
 *   host never interprets it.
 *
 * Rationale: libfabric keeps fi_version() (the API) apart from a provider's
 * own version; mixing them is how a driver update gets mistaken for an ABI
 * change.
 */
#ifndef KVBLOB_VERSION_H
#define KVBLOB_VERSION_H

#include <stdint.h>

/* Packs a major/minor pair into one uint32_t: major in the high 16 bits. */
#define KVBLOB_MAKE_VERSION(major, minor) \
    ((uint32_t)(((uint32_t)(major) << 16) | ((uint32_t)(minor) & 0xFFFFu)))
#define KVBLOB_VERSION_MAJOR(v) ((uint32_t)(v) >> 16)
#define KVBLOB_VERSION_MINOR(v) ((uint32_t)(v) & 0xFFFFu)

#define KVBLOB_ABI_VERSION_MAJOR 1
#define KVBLOB_ABI_VERSION_MINOR 1
#define KVBLOB_ABI_VERSION \
    KVBLOB_MAKE_VERSION(KVBLOB_ABI_VERSION_MAJOR, KVBLOB_ABI_VERSION_MINOR)

/* ABI versions by name, for code that checks what was negotiated:
 * 1.0 the first; 1.1 appends completion notification (KVBLOB_CAP_NOTIFY,
 * kvblob_host_services_t.notify), a declared access-end bound
 * (KVBLOB_CAP_ACCESS_BOUND, kvblob_caps_t.access_end_bound_ns) and option
 * flags (kvblob_plugin_t.option_flags, KVBLOB_OPTION_FLAG_SECRET). */
#define KVBLOB_ABI_1_0 KVBLOB_MAKE_VERSION(1, 0)
#define KVBLOB_ABI_1_1 KVBLOB_MAKE_VERSION(1, 1)

/* The oldest ABI version this header can still describe. A host built
 * against this header offers [KVBLOB_ABI_VERSION_OLDEST, KVBLOB_ABI_VERSION]. */
#define KVBLOB_ABI_VERSION_OLDEST KVBLOB_MAKE_VERSION(1, 0)

/* The version of contract.md whose R-... rules these headers express. */
#define KVBLOB_CONTRACT_VERSION 1u

#endif /* KVBLOB_VERSION_H */
