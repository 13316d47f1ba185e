/*
 * kvblob/status.h: status codes, log severities and the thread tags used in
 * every function comment of these headers.
 *
 * Thread tags (defined once, used in every slot's comment):
 *   [any-thread]   may be called from any thread, concurrently with any other
 *                  [any-thread] call on the same driver (R-CON-1).
 *   [serialized]   the caller never runs two such calls on one driver at the
 *                  same time, nor one together with close.
 *   [load-thread]  called once, by the loading thread, before anything else.
 */
#ifndef KVBLOB_STATUS_H
#define KVBLOB_STATUS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A call's status. Values below KVBLOB_STATUS_VENDOR_BASE are defined here;
 * a driver may use [KVBLOB_STATUS_VENDOR_BASE, INT32_MAX] for its own codes.
 * Rationale: an int32_t typedef and #defines, not a C enum, so the width
 * never depends on the compiler (abi-guide rule 7; CLAP does the same). */
typedef int32_t kvblob_status;

#define KVBLOB_OK 0
/* Admission refused: nothing was recorded, no memory was touched, the store
 * did not change (R-ADM-1, R-ADM-9). */
#define KVBLOB_E_REJECTED 1
/* Not now: an unregister or release while access is open (R-REG-1,
 * R-OPS-1), a close before a successful drain (R-CLS-1). */
#define KVBLOB_E_BUSY 2
/* A drain whose timeout passed before every operation ended (R-DRN-1). */
#define KVBLOB_E_TIMEOUT 3
/* Refused for good because an operation's access is unprovable (R-REG-2,
 * R-DRN-2, R-OPS-1). */
#define KVBLOB_E_UNPROVABLE 4
/* A malformed argument: NULL where a pointer is required, a struct_size
 * smaller than the first version, a handle that is not live. */
#define KVBLOB_E_INVALID 5
/* The slot or feature is not offered by this driver. */
#define KVBLOB_E_UNSUPPORTED 6
/* open: an option the driver does not know, or a value it cannot parse
 * (R-OPN-1). */
#define KVBLOB_E_BAD_OPTION 7
#define KVBLOB_E_NO_MEMORY 8
/* The driver is draining or closed (R-ADM-2). */
#define KVBLOB_E_CLOSED 9
/* The store could not be reached or failed as a whole at open. */
#define KVBLOB_E_STORE 10
#define KVBLOB_E_INTERNAL 11
#define KVBLOB_STATUS_VENDOR_BASE 0x40000000

/* The name of a status, for messages ("KVBLOB_E_BUSY"); never NULL.
 * Static inline so that no plugin has to export it (abi-guide rule 1). */
static inline const char *kvblob_status_name(kvblob_status s)
{
    switch (s) {
    case KVBLOB_OK: return "KVBLOB_OK";
    case KVBLOB_E_REJECTED: return "KVBLOB_E_REJECTED";
    case KVBLOB_E_BUSY: return "KVBLOB_E_BUSY";
    case KVBLOB_E_TIMEOUT: return "KVBLOB_E_TIMEOUT";
    case KVBLOB_E_UNPROVABLE: return "KVBLOB_E_UNPROVABLE";
    case KVBLOB_E_INVALID: return "KVBLOB_E_INVALID";
    case KVBLOB_E_UNSUPPORTED: return "KVBLOB_E_UNSUPPORTED";
    case KVBLOB_E_BAD_OPTION: return "KVBLOB_E_BAD_OPTION";
    case KVBLOB_E_NO_MEMORY: return "KVBLOB_E_NO_MEMORY";
    case KVBLOB_E_CLOSED: return "KVBLOB_E_CLOSED";
    case KVBLOB_E_STORE: return "KVBLOB_E_STORE";
    case KVBLOB_E_INTERNAL: return "KVBLOB_E_INTERNAL";
    default: break;
    }
    return s >= KVBLOB_STATUS_VENDOR_BASE ? "KVBLOB_E_VENDOR" : "KVBLOB_E_UNKNOWN";
}

/* Severity of a message sent to the host's log callback. */
typedef int32_t kvblob_log_level;
#define KVBLOB_LOG_DEBUG 0
#define KVBLOB_LOG_INFO 1
#define KVBLOB_LOG_WARN 2
#define KVBLOB_LOG_ERROR 3
/* The driver reports that it, or its store, broke a rule: the host surfaces
 * these whatever its log level (CLAP's CLAP_LOG_PLUGIN_MISBEHAVING). */
#define KVBLOB_LOG_MISBEHAVING 4

#ifdef __cplusplus
}
#endif

#endif /* KVBLOB_STATUS_H */
