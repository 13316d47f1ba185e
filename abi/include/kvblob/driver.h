/*
 * kvblob/driver.h: the plugin table. One static table per plugin describes
 * the plugin (identity, options) and holds the slots of its drivers.
 *
 * Ownership: every string and array in the table is owned by the plugin,
 * static, and valid until the plugin is unloaded. Every handle a slot
 * returns is owned by the driver until the slot that ends it succeeds.
 *
 * Append-only (abi-guide rule 5): new slots go at the end under a
 * "since ABI 1.N" marker; the host calls a slot only when struct_size covers
 * it and the pointer is non-NULL.
 */
#ifndef KVBLOB_DRIVER_H
#define KVBLOB_DRIVER_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"
#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Since ABI 1.1: what a notify call announces. */
typedef uint32_t kvblob_notify_event;
/* The operation's results are final (poll answers 1). */
#define KVBLOB_NOTIFY_FINAL 1u
/* The operation's access ended or became unprovable. */
#define KVBLOB_NOTIFY_ACCESS 2u

/* What the host lends a driver at open. Owned by the host, valid until close
 * returns KVBLOB_OK. */
typedef struct kvblob_host_services {
    uint32_t struct_size;
    uint32_t reserved;
    /* Passed back as the first argument of every callback. */
    void *context;
    /* Detail for the engine's log. message is a NUL-terminated string owned
     * by the driver, valid for the duration of the call; the host copies it.
     * Never NULL. [any-thread] */
    void (*log)(void *context, kvblob_log_level level, const char *message);
    /* Members above are valid for ABI 1.0. */

    /* Since ABI 1.1; may be NULL (then the driver does not declare
     * KVBLOB_CAP_NOTIFY). A driver that declares KVBLOB_CAP_NOTIFY calls it
     * for every operation it admitted:
     * - with KVBLOB_NOTIFY_FINAL once, after poll would answer final;
     * - with KVBLOB_NOTIFY_ACCESS once, after access would answer ENDED or
     *   UNPROVABLE.
     * Never before the state it announces is visible, never twice for one
     * event, never after release of op returned KVBLOB_OK (release waits
     * for a notify of its op that is in progress). It may come from inside
     * the put/get/probe/remove call that admits op, before *out is
     * returned. The host only wakes its waiters: it never blocks, never
     * calls back into the driver, and confirms through poll and access.
     * [any-thread] */
    void (*notify)(void *context, kvblob_op_t *op, kvblob_notify_event event);
} kvblob_host_services_t;

/* The size of the ABI 1.0 services record: a driver reads notify only when
 * the negotiated version is 1.1 or later and struct_size covers it. */
#define KVBLOB_HOST_SERVICES_SIZE_1_0 ((uint32_t)offsetof(kvblob_host_services_t, notify))

/* The argument of open. Owned by the host, valid for the duration of open:
 * a driver copies what it keeps. */
typedef struct kvblob_open_args {
    uint32_t struct_size;
    /* The ABI version negotiated for this plugin. */
    uint32_t abi_version;
    const kvblob_option_t *options;
    uint64_t option_count;
    const kvblob_host_services_t *host;
} kvblob_open_args_t;

typedef struct kvblob_plugin {
    uint32_t struct_size;
    /* The ABI version this table is laid out for: the one the plugin
     * answered in negotiation. */
    uint32_t abi_version;
    /* The contract.md version whose rules the driver honours. */
    uint32_t contract_version;
    uint32_t reserved;
    /* Short lowercase identity, [a-z0-9_-], 1 to 64 bytes ("memory"). */
    const char *name;
    /* The driver's own release version, 1 to 64 printable bytes. */
    const char *version;
    /* One line for humans; may be NULL. */
    const char *description;
    /* The options open accepts; option_count may be 0 (options NULL). */
    const kvblob_option_desc_t *options;
    uint64_t option_count;

    /* Opens a driver bound to one store. Fills *caps (which the host zeroed
     * and sized) with the capabilities fixed for its life (R-CAP-1) and
     * *out with the driver handle. Refuses an unknown option or a value it
     * cannot parse with KVBLOB_E_BAD_OPTION and a message naming the option
     * (R-OPN-1). On failure writes a NUL-terminated reason into err (owned
     * by the host, err_capacity bytes, may be 0) and leaves *out NULL.
     * [any-thread] */
    kvblob_status (*open)(const kvblob_open_args_t *args, kvblob_caps_t *caps,
                          kvblob_driver_t **out, char *err, uint32_t err_capacity);

    /* Closes the driver. Refused with KVBLOB_E_BUSY until a drain returned
     * KVBLOB_OK and every region is unregistered (R-CLS-1); after KVBLOB_OK
     * the handle is dead. [serialized] */
    kvblob_status (*close)(kvblob_driver_t *self);

    /* Looks up an extension by versioned string id ("kvblob.scenarios/1").
     * Returns a pointer to a struct that starts with struct_size, owned by
     * the driver and valid until close, or NULL when absent. [any-thread] */
    const void *(*get_extension)(kvblob_driver_t *self, const char *id);

    /* Registers caller memory. The driver verifies the memory kind and
     * refuses KVBLOB_MEMORY_DEVICE without KVBLOB_CAP_DEVICE_MEMORY (R-ADM-8)
     * and a zero size. On success *out is the region handle (R-REG-1).
     * [any-thread] */
    kvblob_status (*register_region)(kvblob_driver_t *self, const kvblob_region_desc_t *desc,
                                     kvblob_region_t **out, char *err, uint32_t err_capacity);

    /* Ends a registration. KVBLOB_E_BUSY while an admitted operation naming
     * the region has not ended its access (R-REG-1); KVBLOB_E_UNPROVABLE for
     * the life of the driver once such an operation's access is unprovable
     * (R-REG-2). [any-thread] */
    kvblob_status (*unregister_region)(kvblob_driver_t *self, kvblob_region_t *region);

    /* Admit or refuse a batch (R-ADM-1 .. R-ADM-10). On admission returns
     * KVBLOB_OK and *out, an operation handle owned by the driver until
     * release; on refusal returns KVBLOB_E_REJECTED (or KVBLOB_E_CLOSED while
     * draining or closed), sets *out to NULL, writes the reason into err, and
     * has changed nothing (R-ADM-9). After admission, every failure is a row
     * result (R-ADM-1). The batch is valid for the duration of the call.
     * [any-thread] */
    kvblob_status (*put)(kvblob_driver_t *self, const kvblob_batch_t *batch, kvblob_op_t **out,
                         char *err, uint32_t err_capacity);
    kvblob_status (*get)(kvblob_driver_t *self, const kvblob_batch_t *batch, kvblob_op_t **out,
                         char *err, uint32_t err_capacity);
    /* Optional: NULL means unsupported. Must be non-NULL when the driver
     * declares KVBLOB_CAP_PROBE; may be non-NULL without it, since one
     * static table serves drivers whose capabilities differ per open (the
     * host never calls it then). */
    kvblob_status (*probe)(kvblob_driver_t *self, const kvblob_batch_t *batch, kvblob_op_t **out,
                           char *err, uint32_t err_capacity);
    /* Optional, as probe, with KVBLOB_CAP_REMOVE (R-RMV-1). */
    kvblob_status (*remove)(kvblob_driver_t *self, const kvblob_batch_t *batch, kvblob_op_t **out,
                            char *err, uint32_t err_capacity);

    /* Is the operation final? Writes 1 to *is_final once every row has its
     * result; results never change after that. Never blocks. [any-thread] */
    kvblob_status (*poll)(kvblob_driver_t *self, kvblob_op_t *op, uint32_t *is_final);

    /* Copies the results of rows [first, first + count) into out (caller-
     * owned, count elements, each with struct_size set). A row not final yet
     * reads KVBLOB_ROW_PENDING. [any-thread] */
    kvblob_status (*results)(kvblob_driver_t *self, kvblob_op_t *op, uint64_t first,
                             uint64_t count, kvblob_row_status_t *out);

    /* Writes the NUL-terminated message of one row (empty when none) into
     * buf (caller-owned, capacity bytes), truncating; returns the full
     * length. [any-thread] */
    uint32_t (*row_message)(kvblob_driver_t *self, kvblob_op_t *op, uint64_t row, char *buf,
                            uint32_t capacity);

    /* The second answer (R-ACC-1): KVBLOB_ACCESS_OPEN, _ENDED or
     * _UNPROVABLE. ENDED comes within the driver's documented bound after
     * the results are final (R-ACC-2). [any-thread] */
    kvblob_access (*access)(kvblob_driver_t *self, kvblob_op_t *op);

    /* Best effort (R-CAN-1): rows that never started become CANCELLED, the
     * rest finish with their real result. Never blocks. [any-thread] */
    kvblob_status (*cancel)(kvblob_driver_t *self, kvblob_op_t *op);

    /* Releases the handle once results are final and access ended;
     * KVBLOB_E_BUSY before that, KVBLOB_E_UNPROVABLE for good when access is
     * unprovable (R-OPS-1). After KVBLOB_OK the handle is dead.
     * [any-thread, never concurrently with another call on the same op] */
    kvblob_status (*release)(kvblob_driver_t *self, kvblob_op_t *op);

    /* Stops admission, then waits up to timeout_ns for every operation to be
     * final and to end its access (R-DRN-1). KVBLOB_OK only if all did;
     * KVBLOB_E_TIMEOUT otherwise; KVBLOB_E_UNPROVABLE at once when any
     * operation's access is unprovable (R-DRN-2). May run while put/get
     * calls are in progress on other threads, and waits for them to return
     * (R-DRN-3). [any-thread] */
    kvblob_status (*drain)(kvblob_driver_t *self, uint64_t timeout_ns);

    /* Slots above are valid for ABI 1.0. Later members go below this line. */

    /* Since ABI 1.1: NULL, or option_count flag words, one per entry of
     * options (KVBLOB_OPTION_FLAG_*). Read only when the negotiated version
     * is 1.1 or later and struct_size covers it. */
    const kvblob_option_flags *option_flags;
} kvblob_plugin_t;

/* The size of an ABI 1.0 plugin table: the loader accepts any table at
 * least this large and reads no member its struct_size does not cover. */
#define KVBLOB_PLUGIN_SIZE_1_0 ((uint32_t)offsetof(kvblob_plugin_t, option_flags))

#ifdef __cplusplus
}
#endif

#endif /* KVBLOB_DRIVER_H */
