/*
 * kvblob/version.h: the three versions that a driver and a host keep apart.
 *
 * - The ABI version (major.minor) names the layout of every struct and the
 *   calling rules of every slot in these headers. A minor bump only appends
 *   (new struct members at the end, new slots at the end of a table); a
 *   major bump may break anything and is refused by older hosts.
 * - The contract version names the behaviour rules (the R-... ids) of
 *   share/doc/kvblob/contract.md that a driver claims to honour.
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
#define KVBLOB_ABI_VERSION_MINOR 0
#define KVBLOB_ABI_VERSION \
    KVBLOB_MAKE_VERSION(KVBLOB_ABI_VERSION_MAJOR, KVBLOB_ABI_VERSION_MINOR)

/* The oldest ABI version this header can still describe. A host built
 * against this header offers [KVBLOB_ABI_VERSION_OLDEST, KVBLOB_ABI_VERSION]. */
#define KVBLOB_ABI_VERSION_OLDEST KVBLOB_MAKE_VERSION(1, 0)

/* The version of contract.md whose R-... rules these headers express. */
#define KVBLOB_CONTRACT_VERSION 1u

#endif /* KVBLOB_VERSION_H */
