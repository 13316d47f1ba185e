/*
 * A vendor's minimal kvblob driver, in plain C99 against the ABI headers
 * alone: an in-process store that every driver opened in the process shares.
 * Copy this folder to start a driver of your own (see docs/vendor-guide.md).
 *
 * Deliberately simple:
 * - every operation completes inside put/get/probe/remove: when the call
 *   returns, its results are final and its access ended (R-ACC-2's bound is
 *   zero);
 * - one lock guards the store, so a reader never sees a partial object
 *   (R-CON-2); a real store would not hold a lock across a copy;
 * - one span per row, no hints, no device memory, no scenario hooks (the
 *   battery reports the checks that need them as not supported);
 * - it speaks ABI 1.1 and 1.0. At 1.1 it announces each operation through
 *   the host's notify (KVBLOB_CAP_NOTIFY), so an engine waits on it without
 *   polling; a 1.0 host lends no notify and polls. A driver that completes
 *   in the background announces from the thread that completes, after its
 *   poll and access would answer final and ENDED.
 * The store is process memory, so what it stores cannot rot (R-ROW-6 by
 * store guarantee).
 *
 * The driver's name is given once, to kvblob_driver() in CMakeLists.txt,
 * which names the file libkvblob_<name>.so and defines KVBLOB_DRIVER_NAME
 * for the table below: the two always agree (R-LOAD-6).
 * Rules cited R-... are defined in share/doc/kvblob-dev/contract.md.
 */
#include <kvblob/kvblob.h>

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef KVBLOB_DRIVER_NAME
#error "build with kvblob_driver(TARGET NAME name) from find_package(kvblob): it defines KVBLOB_DRIVER_NAME"
#endif

#define MAX_ROWS 16384u
#define MAX_KEY_BYTES 256u
#define DEFAULT_MAX_OBJECT_BYTES (64u << 20)

/* ---- the store: a chained hash table shared by every driver ------------- */

typedef struct object {
    struct object *next;
    uint8_t *key;
    uint64_t key_len;
    uint8_t *bytes;
    uint64_t size;
} object_t;

#define BUCKETS 4096u
static object_t *store[BUCKETS];
static pthread_mutex_t store_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t hash_key(const uint8_t *key, uint64_t len)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    uint64_t i;
    for (i = 0; i < len; ++i) {
        h ^= key[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* The store lives as long as the library is loaded: the host unloads it
 * only after closing every driver, so nothing can reach it afterwards. */
__attribute__((destructor)) static void free_store(void)
{
    unsigned b;
    for (b = 0; b < BUCKETS; ++b) {
        while (store[b]) {
            object_t *obj = store[b];
            store[b] = obj->next;
            free(obj->key);
            free(obj->bytes);
            free(obj);
        }
    }
}

/* Caller holds store_lock. */
static object_t **find_slot(const uint8_t *key, uint64_t len)
{
    object_t **slot = &store[hash_key(key, len) % BUCKETS];
    while (*slot && !((*slot)->key_len == len && memcmp((*slot)->key, key, len) == 0)) slot = &(*slot)->next;
    return slot;
}

/* ---- driver, regions, operations ----------------------------------------- */

struct kvblob_region {
    struct kvblob_region *next;
    uint8_t *base;
    uint64_t size;
};

struct kvblob_op {
    uint64_t row_count;
    kvblob_row_result *results;
};

struct kvblob_driver {
    pthread_mutex_t lock; /* guards everything below */
    pthread_cond_t idle;
    struct kvblob_region *regions;
    unsigned calls_in_progress;
    int draining, drained;
    uint64_t max_object_bytes;
    kvblob_host_services_t host;
    int notifies; /* declared KVBLOB_CAP_NOTIFY: announce every operation */
};

static void say(char *err, uint32_t capacity, const char *text)
{
    if (err && capacity) snprintf(err, capacity, "%s", text);
}

/* ---- options and open ---------------------------------------------------- */

static const kvblob_option_desc_t options[] = {
    {.struct_size = sizeof(kvblob_option_desc_t),
     .type = KVBLOB_OPTION_INT,
     .name = "max_object_bytes",
     .default_value = "67108864",
     .choices = NULL,
     .help = "Largest object, in bytes."},
};

static kvblob_status md_open(const kvblob_open_args_t *args, kvblob_caps_t *caps, kvblob_driver_t **out, char *err,
                             uint32_t capacity)
{
    uint64_t max_object = DEFAULT_MAX_OBJECT_BYTES;
    uint64_t i;
    kvblob_driver_t *d;
    pthread_condattr_t monotonic;
    *out = NULL;
    for (i = 0; i < args->option_count; ++i) {
        const kvblob_option_t *o = &args->options[i];
        char *end = NULL;
        if (strcmp(o->key, "max_object_bytes") != 0) {
            if (err && capacity) snprintf(err, capacity, "unknown option '%s'", o->key); /* R-OPN-1 */
            return KVBLOB_E_BAD_OPTION;
        }
        errno = 0;
        max_object = strtoull(o->value, &end, 10);
        if (errno || !end || *end || max_object == 0) {
            if (err && capacity) snprintf(err, capacity, "option 'max_object_bytes': '%s' is not a positive integer", o->value);
            return KVBLOB_E_BAD_OPTION;
        }
    }
    d = (kvblob_driver_t *)calloc(1, sizeof *d);
    if (!d) {
        say(err, capacity, "out of memory");
        return KVBLOB_E_NO_MEMORY;
    }
    pthread_mutex_init(&d->lock, NULL);
    /* drain's deadline is on the monotonic clock: a wall-clock step (NTP, an
     * operator) must neither cut a drain short nor stretch it. */
    pthread_condattr_init(&monotonic);
    pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC);
    pthread_cond_init(&d->idle, &monotonic);
    pthread_condattr_destroy(&monotonic);
    d->max_object_bytes = max_object;
    /* Copy only what the host's record holds: a 1.0 host lends a shorter
     * one, without notify. */
    if (args->host) {
        size_t size = args->host->struct_size < sizeof d->host ? args->host->struct_size : sizeof d->host;
        memcpy(&d->host, args->host, size);
    }
    caps->flags = KVBLOB_CAP_ABSENT_IS_MISS | KVBLOB_CAP_PROBE | KVBLOB_CAP_REMOVE;
    /* ABI 1.1: announce completions when the negotiated version lays notify
     * out and the host lent one; never declare a 1.1 bit at 1.0. */
    if (args->abi_version >= KVBLOB_ABI_1_1 && args->host &&
        args->host->struct_size >= offsetof(kvblob_host_services_t, notify) + sizeof d->host.notify &&
        d->host.notify) {
        d->notifies = 1;
        caps->flags |= KVBLOB_CAP_NOTIFY;
    }
    caps->max_rows_per_op = MAX_ROWS;
    caps->max_spans_per_row = 1;
    caps->max_key_bytes = MAX_KEY_BYTES;
    caps->max_object_bytes = max_object;
    caps->max_ops_in_flight = KVBLOB_NO_LIMIT;
    *out = d;
    return KVBLOB_OK;
}

static kvblob_status md_close(kvblob_driver_t *d)
{
    int busy;
    pthread_mutex_lock(&d->lock);
    busy = !d->drained || d->regions != NULL; /* R-CLS-1 */
    pthread_mutex_unlock(&d->lock);
    if (busy) return KVBLOB_E_BUSY;
    pthread_cond_destroy(&d->idle);
    pthread_mutex_destroy(&d->lock);
    free(d);
    return KVBLOB_OK;
}

static const void *md_get_extension(kvblob_driver_t *d, const char *id)
{
    (void)d;
    (void)id;
    return NULL;
}

/* ---- regions --------------------------------------------------------------- */

static kvblob_status md_register(kvblob_driver_t *d, const kvblob_region_desc_t *desc, kvblob_region_t **out,
                                 char *err, uint32_t capacity)
{
    kvblob_region_t *r;
    *out = NULL;
    if (desc->kind != KVBLOB_MEMORY_HOST) { /* R-ADM-8 */
        say(err, capacity, "only HOST memory: this driver does not declare device_memory");
        return KVBLOB_E_REJECTED;
    }
    if (!desc->base || desc->size == 0) {
        say(err, capacity, "a region needs a base and a positive size");
        return KVBLOB_E_REJECTED;
    }
    if ((uintptr_t)desc->base + desc->size < (uintptr_t)desc->base) { /* its end would wrap */
        say(err, capacity, "a region must not wrap around the address space");
        return KVBLOB_E_REJECTED;
    }
    r = (kvblob_region_t *)calloc(1, sizeof *r);
    if (!r) {
        say(err, capacity, "out of memory");
        return KVBLOB_E_NO_MEMORY;
    }
    r->base = (uint8_t *)desc->base;
    r->size = desc->size;
    pthread_mutex_lock(&d->lock);
    r->next = d->regions;
    d->regions = r;
    pthread_mutex_unlock(&d->lock);
    *out = r;
    return KVBLOB_OK;
}

/* Every operation ends its access before its call returns, so no admitted
 * operation ever holds a region when unregister runs (R-REG-1). */
static kvblob_status md_unregister(kvblob_driver_t *d, kvblob_region_t *r)
{
    kvblob_region_t **p;
    pthread_mutex_lock(&d->lock);
    for (p = &d->regions; *p && *p != r; p = &(*p)->next) {
    }
    if (!*p) {
        pthread_mutex_unlock(&d->lock);
        return KVBLOB_E_INVALID;
    }
    *p = r->next;
    pthread_mutex_unlock(&d->lock);
    free(r);
    return KVBLOB_OK;
}

/* Caller holds d->lock. */
static int region_live(kvblob_driver_t *d, const kvblob_region_t *r)
{
    const kvblob_region_t *it;
    for (it = d->regions; it; it = it->next)
        if (it == r) return 1;
    return 0;
}

/* ---- admission --------------------------------------------------------------- */

typedef enum { OP_PUT, OP_GET, OP_PROBE, OP_REMOVE } op_kind;

/* A row index and the hash of its key, sorted by hash to find repeats. */
typedef struct {
    uint64_t hash;
    uint64_t row;
} keyed_row;

static int by_hash(const void *a, const void *b)
{
    uint64_t x = ((const keyed_row *)a)->hash, y = ((const keyed_row *)b)->hash;
    return x < y ? -1 : x > y;
}

/* R-ADM-4: no key twice in one operation. Sorting the rows by key hash
 * (O(n log n)) puts equal keys next to each other; rows with equal hashes
 * are compared byte for byte. */
static const char *duplicate_key(const kvblob_batch_t *b)
{
    const char *problem = NULL;
    uint64_t i, j;
    keyed_row *sorted = (keyed_row *)malloc(b->row_count * sizeof *sorted);
    if (!sorted) return "out of memory while admitting";
    for (i = 0; i < b->row_count; ++i) {
        sorted[i].hash = hash_key(b->rows[i].key, b->rows[i].key_len);
        sorted[i].row = i;
    }
    qsort(sorted, b->row_count, sizeof *sorted, by_hash);
    for (i = 0; i < b->row_count && !problem; ++i)
        for (j = i + 1; j < b->row_count && sorted[j].hash == sorted[i].hash && !problem; ++j) {
            const kvblob_row_t *x = &b->rows[sorted[i].row], *y = &b->rows[sorted[j].row];
            if (x->key_len == y->key_len && memcmp(x->key, y->key, x->key_len) == 0)
                problem = "[R-ADM-4] a key appears twice in one operation";
        }
    free(sorted);
    return problem;
}

/* Checks R-ADM-2 .. R-ADM-7; caller holds d->lock (regions stay live). */
static const char *admission_problem(kvblob_driver_t *d, op_kind kind, const kvblob_batch_t *b)
{
    uint64_t i;
    if (d->draining) return "[R-ADM-2] the driver is draining";
    if (b->row_count == 0 || !b->rows) return "[R-ADM-3] an operation needs at least one row";
    if (b->row_count > MAX_ROWS) return "[R-ADM-3] more rows than max_rows_per_op";
    if (b->hint) return "[R-ADM-7] a hint, but this driver does not declare hints";
    for (i = 0; i < b->row_count; ++i) {
        const kvblob_row_t *row = &b->rows[i];
        if (row->key_len == 0 || !row->key) return "[R-ADM-4] an empty key";
        if (row->key_len > MAX_KEY_BYTES) return "[R-ADM-4] a key longer than max_key_bytes";
        if (kind == OP_PUT || kind == OP_GET) {
            const kvblob_span_t *s = row->spans;
            if (row->span_count != 1 || !s) return "[R-ADM-5] a row needs exactly one span";
            if (!region_live(d, s->region)) return "[R-ADM-6] a span in a region that is not registered";
            if (s->length == 0 || s->offset > s->region->size || s->length > s->region->size - s->offset)
                return "[R-ADM-6] a span outside its region";
            if (s->length > d->max_object_bytes) return "[R-ADM-5] a row over max_object_bytes";
        } else if (row->span_count != 0) {
            return "[R-ADM-5] probe and remove rows carry no spans";
        }
    }
    return duplicate_key(b);
}

/* ---- the data path ------------------------------------------------------------- */

static kvblob_row_result put_row(const kvblob_row_t *row)
{
    const kvblob_span_t *s = row->spans;
    object_t **slot, *obj;
    kvblob_row_result result = KVBLOB_ROW_READY;
    pthread_mutex_lock(&store_lock);
    slot = find_slot(row->key, row->key_len);
    if (!*slot) { /* an existing object stays as it was (R-ROW-7) */
        obj = (object_t *)calloc(1, sizeof *obj);
        if (obj) obj->key = (uint8_t *)malloc(row->key_len);
        if (obj) obj->bytes = (uint8_t *)malloc(s->length);
        if (!obj || !obj->key || !obj->bytes) {
            if (obj) {
                free(obj->key);
                free(obj->bytes);
                free(obj);
            }
            result = KVBLOB_ROW_DECLINED; /* nothing stored (R-ROW-8) */
        } else {
            memcpy(obj->key, row->key, row->key_len);
            obj->key_len = row->key_len;
            memcpy(obj->bytes, s->region->base + s->offset, s->length);
            obj->size = s->length;
            *slot = obj;
        }
    }
    pthread_mutex_unlock(&store_lock);
    return result;
}

static kvblob_row_result get_row(const kvblob_row_t *row)
{
    const kvblob_span_t *s = row->spans;
    object_t *obj;
    kvblob_row_result result = KVBLOB_ROW_MISS; /* destination untouched (R-ROW-3) */
    pthread_mutex_lock(&store_lock);
    obj = *find_slot(row->key, row->key_len);
    if (obj && obj->size != s->length) {
        result = KVBLOB_ROW_FAULT; /* wrong size: nothing written (R-ROW-5) */
    } else if (obj) {
        memcpy(s->region->base + s->offset, obj->bytes, obj->size);
        result = KVBLOB_ROW_READY;
    }
    pthread_mutex_unlock(&store_lock);
    return result;
}

static kvblob_row_result probe_row(const kvblob_row_t *row)
{
    int found;
    pthread_mutex_lock(&store_lock);
    found = *find_slot(row->key, row->key_len) != NULL;
    pthread_mutex_unlock(&store_lock);
    return found ? KVBLOB_ROW_READY : KVBLOB_ROW_MISS;
}

static kvblob_row_result remove_row(const kvblob_row_t *row)
{
    object_t **slot, *obj;
    pthread_mutex_lock(&store_lock);
    slot = find_slot(row->key, row->key_len);
    obj = *slot;
    if (obj) *slot = obj->next;
    pthread_mutex_unlock(&store_lock);
    if (!obj) return KVBLOB_ROW_MISS;
    free(obj->key);
    free(obj->bytes);
    free(obj);
    return KVBLOB_ROW_READY;
}

static kvblob_status submit(kvblob_driver_t *d, op_kind kind, const kvblob_batch_t *b, kvblob_op_t **out, char *err,
                            uint32_t capacity)
{
    const char *problem;
    int draining;
    kvblob_op_t *op;
    uint64_t i;
    *out = NULL;
    pthread_mutex_lock(&d->lock);
    draining = d->draining; /* read under the lock: drain sets it on another thread */
    problem = admission_problem(d, kind, b);
    if (!problem) ++d->calls_in_progress; /* drain waits for it (R-DRN-3) */
    pthread_mutex_unlock(&d->lock);
    if (problem) {
        say(err, capacity, problem);
        return draining ? KVBLOB_E_CLOSED : KVBLOB_E_REJECTED; /* R-ADM-2 */
    }
    op = (kvblob_op_t *)calloc(1, sizeof *op);
    if (op) op->results = (kvblob_row_result *)calloc(b->row_count, sizeof *op->results);
    if (op && op->results) {
        op->row_count = b->row_count;
        for (i = 0; i < b->row_count; ++i) {
            const kvblob_row_t *row = &b->rows[i];
            op->results[i] = kind == OP_PUT ? put_row(row)
                             : kind == OP_GET ? get_row(row)
                             : kind == OP_PROBE ? probe_row(row)
                                                : remove_row(row);
        }
        /* Final, and access ended: poll and access already say so, so the
         * announcements may go now, once each, from inside the call (the
         * host expects that). No lock is held: notify never calls back, but
         * a driver should not make the host wait on its locks. Before the
         * call is counted out, so drain (and so close) waits for them. */
        if (d->notifies) {
            d->host.notify(d->host.context, op, KVBLOB_NOTIFY_FINAL);
            d->host.notify(d->host.context, op, KVBLOB_NOTIFY_ACCESS);
        }
    }
    pthread_mutex_lock(&d->lock);
    if (--d->calls_in_progress == 0) pthread_cond_broadcast(&d->idle);
    pthread_mutex_unlock(&d->lock);
    if (!op || !op->results) { /* nothing was done: a refusal changes nothing (R-ADM-9) */
        if (op) free(op);
        say(err, capacity, "out of memory");
        return KVBLOB_E_REJECTED;
    }
    *out = op;
    return KVBLOB_OK;
}

static kvblob_status md_put(kvblob_driver_t *d, const kvblob_batch_t *b, kvblob_op_t **o, char *e, uint32_t c)
{
    return submit(d, OP_PUT, b, o, e, c);
}
static kvblob_status md_get(kvblob_driver_t *d, const kvblob_batch_t *b, kvblob_op_t **o, char *e, uint32_t c)
{
    return submit(d, OP_GET, b, o, e, c);
}
static kvblob_status md_probe(kvblob_driver_t *d, const kvblob_batch_t *b, kvblob_op_t **o, char *e, uint32_t c)
{
    return submit(d, OP_PROBE, b, o, e, c);
}
static kvblob_status md_remove(kvblob_driver_t *d, const kvblob_batch_t *b, kvblob_op_t **o, char *e, uint32_t c)
{
    return submit(d, OP_REMOVE, b, o, e, c);
}

/* ---- the two answers, release, drain ------------------------------------------ */

static kvblob_status md_poll(kvblob_driver_t *d, kvblob_op_t *op, uint32_t *is_final)
{
    (void)d;
    (void)op;
    *is_final = 1; /* final when the call returned */
    return KVBLOB_OK;
}

static kvblob_status md_results(kvblob_driver_t *d, kvblob_op_t *op, uint64_t first, uint64_t count,
                                kvblob_row_status_t *out)
{
    uint64_t i;
    (void)d;
    if (first > op->row_count || count > op->row_count - first) return KVBLOB_E_INVALID;
    for (i = 0; i < count; ++i) {
        out[i].result = op->results[first + i];
        out[i].driver_code = 0;
        out[i].reserved = 0;
    }
    return KVBLOB_OK;
}

static uint32_t md_row_message(kvblob_driver_t *d, kvblob_op_t *op, uint64_t row, char *buf, uint32_t capacity)
{
    const char *text = "";
    (void)d;
    if (row < op->row_count && op->results[row] == KVBLOB_ROW_FAULT) text = "stored object has another size";
    if (row < op->row_count && op->results[row] == KVBLOB_ROW_DECLINED) text = "out of memory";
    say(buf, capacity, text);
    return (uint32_t)strlen(text);
}

static kvblob_access md_access(kvblob_driver_t *d, kvblob_op_t *op)
{
    (void)d;
    (void)op;
    return KVBLOB_ACCESS_ENDED; /* ended when the call returned */
}

static kvblob_status md_cancel(kvblob_driver_t *d, kvblob_op_t *op)
{
    (void)d;
    (void)op;
    return KVBLOB_OK; /* nothing left to cancel: every row already ran (R-CAN-1) */
}

static kvblob_status md_release(kvblob_driver_t *d, kvblob_op_t *op)
{
    (void)d;
    free(op->results);
    free(op);
    return KVBLOB_OK;
}

static kvblob_status md_drain(kvblob_driver_t *d, uint64_t timeout_ns)
{
    struct timespec deadline;
    kvblob_status st = KVBLOB_OK;
    clock_gettime(CLOCK_MONOTONIC, &deadline); /* the clock d->idle waits on (md_open) */
    if (timeout_ns > 3600ull * 1000000000ull) timeout_ns = 3600ull * 1000000000ull;
    deadline.tv_sec += (time_t)(timeout_ns / 1000000000ull);
    deadline.tv_nsec += (long)(timeout_ns % 1000000000ull);
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec += 1;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&d->lock);
    d->draining = 1; /* R-DRN-1: no admission from here on */
    while (d->calls_in_progress > 0 && st == KVBLOB_OK)
        if (pthread_cond_timedwait(&d->idle, &d->lock, &deadline) == ETIMEDOUT) st = KVBLOB_E_TIMEOUT;
    if (d->calls_in_progress == 0) {
        st = KVBLOB_OK;
        d->drained = 1;
    }
    pthread_mutex_unlock(&d->lock);
    return st;
}

/* ---- the table and the entry --------------------------------------------------- */

/* Designated initializers: the table has many slots of similar types, and a
 * slot filled by position is one reordering away from a silent mix-up. A
 * slot not named here is NULL, which the loader refuses for a mandatory
 * slot (R-LOAD-5). One table per ABI version spoken: the same slots, each
 * laid out for its version (a 1.0 table's size and version are 1.0's, and
 * members after 1.0 are not laid out). */
#define MINIMAL_TABLE(size, abi)                                     \
    {                                                                \
        .struct_size = (size), .abi_version = (abi),                 \
        .contract_version = KVBLOB_CONTRACT_VERSION,                 \
        .name = KVBLOB_DRIVER_NAME, .version = "1.1.0",              \
        .description = "A vendor's minimal in-process driver in plain C.", \
        .options = options,                                          \
        .option_count = sizeof(options) / sizeof(options[0]),        \
        .open = md_open, .close = md_close,                          \
        .get_extension = md_get_extension,                           \
        .register_region = md_register,                              \
        .unregister_region = md_unregister,                          \
        .put = md_put, .get = md_get, .probe = md_probe,             \
        .remove = md_remove, .poll = md_poll,                        \
        .results = md_results, .row_message = md_row_message,        \
        .access = md_access, .cancel = md_cancel,                    \
        .release = md_release, .drain = md_drain,                    \
    }
static const kvblob_plugin_t plugin_1_0 = MINIMAL_TABLE(KVBLOB_PLUGIN_SIZE_1_0, KVBLOB_ABI_1_0);
/* option_flags (1.1) stays NULL: no option of this driver is secret. */
static const kvblob_plugin_t plugin_1_1 = MINIMAL_TABLE(sizeof(kvblob_plugin_t), KVBLOB_ABI_1_1);

/* This driver speaks ABI 1.0 and 1.1: it answers the newest of them that
 * the host's range holds (R-LOAD-3), and says which it speaks otherwise. */
kvblob_status kvblob_plugin_negotiate(kvblob_negotiation_t *n)
{
    uint32_t high = n->host_max_abi_version < KVBLOB_ABI_1_1 ? n->host_max_abi_version : KVBLOB_ABI_1_1;
    uint32_t low = n->host_min_abi_version > KVBLOB_ABI_1_0 ? n->host_min_abi_version : KVBLOB_ABI_1_0;
    if (high < low) {
        n->chosen_abi_version = KVBLOB_ABI_1_1;
        return KVBLOB_E_UNSUPPORTED;
    }
    n->chosen_abi_version = high;
    n->plugin = high >= KVBLOB_ABI_1_1 ? &plugin_1_1 : &plugin_1_0;
    return KVBLOB_OK;
}
