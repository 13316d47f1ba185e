/*
 * kvblob/scenarios.h: the optional scenario-hook extension.
 *
 * Some rules can only be observed when the store misbehaves: a key another
 * client is writing, a full pool, a failing read, a get held inside the
 * store, an object corrupted at rest, an operation whose access cannot be
 * proven. A driver may offer hooks that stage these on its own store; the
 * conformance battery runs every check whose hooks are offered and reports
 * the rest as not supported, by name.
 *
 * Look it up with get_extension(self, KVBLOB_EXT_SCENARIOS). Every slot may
 * be NULL (that scenario is not offered). Keys are bytes owned by the
 * caller, valid for the duration of the call. Every slot is [any-thread].
 * Hooks are for tests: a production engine never calls them.
 */
#ifndef KVBLOB_SCENARIOS_H
#define KVBLOB_SCENARIOS_H

#include <stdint.h>

#include "status.h"
#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KVBLOB_EXT_SCENARIOS "kvblob.scenarios/1"

/* The stages an operation passes in a driver's controlled mode, released
 * one at a time with advance(). */
typedef uint32_t kvblob_stage;
/* Rows start moving bytes: from here on they cannot become CANCELLED. */
#define KVBLOB_STAGE_START 1u
/* Bytes have moved between the spans and the store's side. */
#define KVBLOB_STAGE_TRANSFER_END 2u
/* The store commits: results become final. */
#define KVBLOB_STAGE_COMMIT 3u
/* The driver stops touching the spans: access ends. */
#define KVBLOB_STAGE_ACCESS_END 4u

typedef struct kvblob_scenarios {
    uint32_t struct_size;
    uint32_t reserved;

    /* Another client holds key uncommitted: put, get and probe of it answer
     * NOT_READY until release_staged. */
    kvblob_status (*stage_foreign_writer)(kvblob_driver_t *self, const uint8_t *key,
                                          uint64_t key_len);
    /* The pool is full: later puts of new keys answer DECLINED until
     * release_staged. */
    kvblob_status (*stage_full_pool)(kvblob_driver_t *self);
    /* Reads of key fail inside the store: gets answer FAULT until
     * release_staged. */
    kvblob_status (*stage_failing_read)(kvblob_driver_t *self, const uint8_t *key,
                                        uint64_t key_len);
    /* Gets of key are held inside the store (not final, access open) until
     * release_staged; they must delay no other operation and no drain
     * (R-CON-3). */
    kvblob_status (*stage_held_get)(kvblob_driver_t *self, const uint8_t *key,
                                    uint64_t key_len);
    /* Corrupts the stored object of key at rest (flips payload bytes); a
     * later get must be FAULT, never READY (R-ROW-6). KVBLOB_E_INVALID when
     * the key is absent. Not undone by release_staged. */
    kvblob_status (*stage_corrupt)(kvblob_driver_t *self, const uint8_t *key, uint64_t key_len);
    /* The next operation admitted that names key loses its access evidence:
     * once final, its access is KVBLOB_ACCESS_UNPROVABLE for good. */
    kvblob_status (*stage_unprovable)(kvblob_driver_t *self, const uint8_t *key,
                                      uint64_t key_len);
    /* Undoes what the stage_ slots staged (except corruption and
     * unprovable access, which are permanent); held gets go on. */
    kvblob_status (*release_staged)(kvblob_driver_t *self);
    /* In a driver's controlled mode, lets op pass stage. START and
     * TRANSFER_END pass in order (asking for a later stage passes the earlier
     * ones); after TRANSFER_END, COMMIT and ACCESS_END pass independently, in
     * either order, so results and access can be seen apart (R-ACC-1).
     * KVBLOB_E_UNSUPPORTED outside controlled mode. */
    kvblob_status (*advance)(kvblob_driver_t *self, kvblob_op_t *op, kvblob_stage stage);
    /* Copies into buf (owned by the caller, capacity bytes) the hint bytes
     * the driver kept for op, and returns their full length (0 when op
     * carried none), so the battery can see that a hint arrives exactly as
     * the engine gave it (R-HNT-1). */
    uint64_t (*echo_hint)(kvblob_driver_t *self, kvblob_op_t *op, void *buf, uint64_t capacity);
} kvblob_scenarios_t;

#ifdef __cplusplus
}
#endif

#endif /* KVBLOB_SCENARIOS_H */
