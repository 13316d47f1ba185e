/*
 * kvblob/types.h: the values that cross the boundary: memory kinds,
 * regions, spans, rows, batches, hints, row results, capabilities and the
 * description of a driver's options.
 *
 * Layout rules (abi-guide rules 4 and 7):
 * - Every struct starts with uint32_t struct_size, set to sizeof(the struct)
 *   by whoever allocates it. A reader accepts any size at least as large as
 *   the first version it knows and never reads past the size it was given.
 * - Only fixed-width integers, pointers and char strings; no enum, bool,
 *   long or size_t. "Reserved" members must be zero.
 *
 * Rationale for element arrays (spans, rows, row results, options): arrays
 * are indexed by sizeof, so these element structs are frozen for ABI major
 * version 1; their struct_size lets a reader refuse a mismatched element.
 * Growth happens in the structs that point to the arrays.
 */
#ifndef KVBLOB_TYPES_H
#define KVBLOB_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Opaque handles. Each is owned by the driver that returned it and stays
 * valid until the slot that ends it (unregister_region, release, close)
 * returns KVBLOB_OK. */
typedef struct kvblob_driver kvblob_driver_t;
typedef struct kvblob_region kvblob_region_t;
typedef struct kvblob_op kvblob_op_t;

/* ---- Memory ---------------------------------------------------------- */

typedef uint32_t kvblob_memory_kind;
#define KVBLOB_MEMORY_HOST 1u
/* GPU memory on the device named by device_ordinal. Only a driver that
 * declares KVBLOB_CAP_DEVICE_MEMORY accepts it (R-ADM-8). */
#define KVBLOB_MEMORY_DEVICE 2u

/* Caller memory to register with a driver. The memory is owned by the
 * caller, who keeps it alive and unmoved until unregister_region returns
 * KVBLOB_OK (or for the life of the process when access became unprovable,
 * R-REG-2). size is positive. */
typedef struct kvblob_region_desc {
    uint32_t struct_size;
    kvblob_memory_kind kind;
    void *base;
    uint64_t size;
    /* The CUDA device ordinal for KVBLOB_MEMORY_DEVICE; 0 for host memory. */
    int32_t device_ordinal;
    uint32_t reserved;
} kvblob_region_desc_t;

/* (region, offset, length) inside one registered region; length > 0 and
 * offset + length <= the region's size (R-ADM-6). */
typedef struct kvblob_span {
    uint32_t struct_size;
    uint32_t reserved;
    kvblob_region_t *region;
    uint64_t offset;
    uint64_t length;
} kvblob_span_t;

/* ---- Rows and batches --------------------------------------------------- */

/* One object: a key and its spans. A put stores the concatenation of the
 * spans; a get fills them in order. Probe and remove rows have
 * span_count == 0 and spans == NULL. key is non-empty bytes, not a string:
 * it need not be NUL-terminated. */
typedef struct kvblob_row {
    uint32_t struct_size;
    uint32_t span_count;
    const uint8_t *key;
    uint64_t key_len;
    const kvblob_span_t *spans;
} kvblob_row_t;

/* An opaque, immutable byte snapshot the engine attaches to an operation
 * (placement, priority, TTL...). Only drivers that declare KVBLOB_CAP_HINTS
 * ever see one (R-ADM-7); they get the bytes exactly as given, valid for the
 * duration of the call, and copy what they keep (R-HNT-1). */
typedef struct kvblob_hint {
    uint32_t struct_size;
    uint32_t reserved;
    const void *bytes;
    uint64_t size;
} kvblob_hint_t;

/* The argument of put, get, probe and remove. Owned by the caller and valid
 * for the duration of the call only: a driver that completes the operation
 * later copies the rows and spans it needs. The memory the spans name stays
 * the caller's and may be touched until the operation's access ends. */
typedef struct kvblob_batch {
    uint32_t struct_size;
    uint32_t reserved;
    const kvblob_row_t *rows;
    uint64_t row_count;
    /* NULL when the operation carries no hint. */
    const kvblob_hint_t *hint;
} kvblob_batch_t;

/* ---- Results ------------------------------------------------------------ */

/* A row's result; the table in share/doc/kvblob-dev/contract.md says which are
 * valid for which operation kind (R-ROW-1). */
typedef int32_t kvblob_row_result;
/* Not final yet; never the result of a row of a final operation. */
#define KVBLOB_ROW_PENDING 0
#define KVBLOB_ROW_READY 1
#define KVBLOB_ROW_MISS 2
#define KVBLOB_ROW_NOT_READY 3
#define KVBLOB_ROW_DECLINED 4
#define KVBLOB_ROW_FAULT 5
#define KVBLOB_ROW_CANCELLED 6
#define KVBLOB_ROW_RESULT_LAST KVBLOB_ROW_CANCELLED

static inline const char *kvblob_row_result_name(kvblob_row_result r)
{
    switch (r) {
    case KVBLOB_ROW_PENDING: return "PENDING";
    case KVBLOB_ROW_READY: return "READY";
    case KVBLOB_ROW_MISS: return "MISS";
    case KVBLOB_ROW_NOT_READY: return "NOT_READY";
    case KVBLOB_ROW_DECLINED: return "DECLINED";
    case KVBLOB_ROW_FAULT: return "FAULT";
    case KVBLOB_ROW_CANCELLED: return "CANCELLED";
    default: break;
    }
    return "INVALID";
}

/* One row's answer, written by the driver into caller-owned memory. The
 * message of a failed row is fetched with the row_message slot. */
typedef struct kvblob_row_status {
    uint32_t struct_size;
    kvblob_row_result result;
    /* The driver's own error code for FAULT/DECLINED; 0 otherwise. */
    int32_t driver_code;
    uint32_t reserved;
} kvblob_row_status_t;

/* The second answer of every operation (R-ACC-1): may the driver still
 * touch the memory its spans name? */
typedef uint32_t kvblob_access;
#define KVBLOB_ACCESS_OPEN 0u
/* The driver never touches this operation's spans again (R-REG-3). */
#define KVBLOB_ACCESS_ENDED 1u
/* The driver lost the evidence: it never reports ENDED for this operation,
 * the memory stays alive and registered for the life of the process
 * (R-REG-2, R-OPS-1, R-DRN-2). Final: it never changes again. */
#define KVBLOB_ACCESS_UNPROVABLE 2u

/* ---- Capabilities ----------------------------------------------------- */

/* Fixed features, bits of kvblob_caps_t.flags. A bit not set is not
 * supported; bits not defined here are reserved and must be zero (the loader
 * refuses a driver that sets one). */
#define KVBLOB_CAP_HINTS (UINT64_C(1) << 0)
#define KVBLOB_CAP_ABSENT_IS_MISS (UINT64_C(1) << 1)
#define KVBLOB_CAP_DEVICE_MEMORY (UINT64_C(1) << 2)
#define KVBLOB_CAP_MULTI_SPAN (UINT64_C(1) << 3)
#define KVBLOB_CAP_PROBE (UINT64_C(1) << 4)
#define KVBLOB_CAP_REMOVE (UINT64_C(1) << 5)
/* The bits ABI 1.0 defines; a driver negotiated at 1.0 sets no other,
 * whatever the size of the services record it was lent (R-CAP-2, R-LOAD-8). */
#define KVBLOB_CAP_KNOWN_MASK_1_0 (UINT64_C(0x3F))

/* Since ABI 1.1. The driver calls kvblob_host_services_t.notify for every
 * operation it admits: once when its results are final, once when its
 * access ends or becomes unprovable. The host then waits without polling.
 * Declared only when negotiated at 1.1 or later and the host lent a non-NULL
 * notify; without it the host polls. */
#define KVBLOB_CAP_NOTIFY (UINT64_C(1) << 6)
/* Since ABI 1.1. kvblob_caps_t.access_end_bound_ns holds the driver's bound
 * on the time from an operation's results being final to its access
 * reporting ENDED (R-ACC-2); 0 means access ends no later than the results
 * are final. Without this bit the bound is undeclared and a caller uses its
 * own timeout. */
#define KVBLOB_CAP_ACCESS_BOUND (UINT64_C(1) << 7)
/* The bits this header defines; any other bit is reserved. */
#define KVBLOB_CAP_KNOWN_MASK (UINT64_C(0xFF))

/* The value of a limit that means "no limit of its own". Every limit is
 * positive: a zero limit is a malformed driver and the loader refuses it. */
#define KVBLOB_NO_LIMIT UINT64_MAX

/* What a driver declares when it is opened, fixed for the life of that
 * driver (R-CAP-1). The host zero-fills it and sets struct_size before
 * open, so a member a driver does not know stays zero, meaning "no". */
typedef struct kvblob_caps {
    uint32_t struct_size;
    uint32_t reserved;
    uint64_t flags;
    uint64_t max_rows_per_op;
    /* 1 unless KVBLOB_CAP_MULTI_SPAN is declared (R-ADM-5). */
    uint64_t max_spans_per_row;
    uint64_t max_key_bytes;
    uint64_t max_object_bytes;
    uint64_t max_ops_in_flight;
    /* Members above are valid for ABI 1.0. */

    /* Since ABI 1.1: meaningful only with KVBLOB_CAP_ACCESS_BOUND (R-ACC-2).
     * An operation whose access is not unprovable reports ENDED at most
     * this many nanoseconds after its results are final. */
    uint64_t access_end_bound_ns;
} kvblob_caps_t;

/* The size of the ABI 1.0 capability record. The host sets struct_size to
 * the size of the version it negotiated; a driver writes no member past it. */
#define KVBLOB_CAPS_SIZE_1_0 ((uint32_t)offsetof(kvblob_caps_t, access_end_bound_ns))

/* ---- Options ------------------------------------------------------------ */

/* One key=value option given to open. Both strings are owned by the caller
 * and valid for the duration of open. */
typedef struct kvblob_option {
    uint32_t struct_size;
    uint32_t reserved;
    const char *key;
    const char *value;
} kvblob_option_t;

typedef uint32_t kvblob_option_type;
#define KVBLOB_OPTION_STRING 1u
#define KVBLOB_OPTION_INT 2u
#define KVBLOB_OPTION_BOOL 3u
/* A byte count; suffixes K, M, G (powers of 1024) are accepted. */
#define KVBLOB_OPTION_BYTES 4u
/* A duration in milliseconds. */
#define KVBLOB_OPTION_MILLISECONDS 5u
/* One of the words listed in choices, separated by '|'. */
#define KVBLOB_OPTION_CHOICE 6u

/* The description of one option a driver accepts, so tools can list them.
 * Every string is owned by the plugin, static, valid until the plugin is
 * unloaded. */
typedef struct kvblob_option_desc {
    uint32_t struct_size;
    kvblob_option_type type;
    const char *name;
    /* The value used when the option is not given; NULL when required. */
    const char *default_value;
    /* For KVBLOB_OPTION_CHOICE: "a|b|c"; NULL otherwise. */
    const char *choices;
    const char *help;
} kvblob_option_desc_t;

/* Since ABI 1.1: per-option flags, in kvblob_plugin_t.option_flags. Bits
 * not defined here are reserved and must be zero (R-LOAD-7). */
typedef uint32_t kvblob_option_flags;
/* The value is a secret (a password, a token): tools and reports never
 * print it; they write a placeholder instead. */
#define KVBLOB_OPTION_FLAG_SECRET 1u
#define KVBLOB_OPTION_FLAG_KNOWN_MASK 1u

#ifdef __cplusplus
}
#endif

#endif /* KVBLOB_TYPES_H */
