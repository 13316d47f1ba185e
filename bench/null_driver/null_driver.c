/*
 * The null driver: a measuring instrument for kvblob-bench, not a store.
 * It admits every batch within its limits and completes it inside the call
 * without touching a byte: puts and removes are READY, gets and probes are
 * MISS (so no destination is written, R-ROW-3). An operation costs one small
 * allocation and nothing per row, so what kvblob-bench measures through it
 * is what the ABI and the host cost per row.
 *
 * It speaks ABI 1.1 and announces each operation (final, then access ended)
 * from inside the admitting call when the host lends notify, so the cost of
 * an announcement is part of what it measures; at 1.0 it is polled.
 *
 * Never use it where data matters: it keeps nothing, and so it fails the
 * conformance battery's round trips by design.
 */
#include <kvblob/kvblob.h>

#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

struct kvblob_driver {
    atomic_int draining;
    atomic_uint calls;
    /* ABI 1.1: the host's notify, or NULL (a 1.0 host, or none lent). */
    void (*notify)(void *context, kvblob_op_t *op, kvblob_notify_event event);
    void *context;
};
struct kvblob_region {
    int unused;
};
struct kvblob_op {
    uint64_t rows;
    kvblob_row_result result;
};

static kvblob_status nd_open(const kvblob_open_args_t *args, kvblob_caps_t *caps, kvblob_driver_t **out, char *err,
                             uint32_t capacity)
{
    if (args->option_count) {
        if (err && capacity) snprintf(err, capacity, "unknown option '%s'", args->options[0].key);
        return KVBLOB_E_BAD_OPTION;
    }
    *out = (kvblob_driver_t *)calloc(1, sizeof **out);
    if (!*out) return KVBLOB_E_NO_MEMORY;
    caps->flags = KVBLOB_CAP_PROBE | KVBLOB_CAP_REMOVE | KVBLOB_CAP_MULTI_SPAN;
    /* notify is read only where the negotiated version lays it out. */
    if (args->abi_version >= KVBLOB_ABI_1_1 && args->host &&
        args->host->struct_size >= offsetof(kvblob_host_services_t, notify) + sizeof args->host->notify &&
        args->host->notify) {
        (*out)->notify = args->host->notify;
        (*out)->context = args->host->context;
        caps->flags |= KVBLOB_CAP_NOTIFY;
    }
    caps->max_rows_per_op = 1u << 20;
    caps->max_spans_per_row = 1024;
    caps->max_key_bytes = 4096;
    caps->max_object_bytes = KVBLOB_NO_LIMIT;
    caps->max_ops_in_flight = KVBLOB_NO_LIMIT;
    return KVBLOB_OK;
}

static kvblob_status nd_close(kvblob_driver_t *d)
{
    free(d);
    return KVBLOB_OK;
}

static const void *nd_get_extension(kvblob_driver_t *d, const char *id)
{
    (void)d;
    (void)id;
    return NULL;
}

static kvblob_status nd_register(kvblob_driver_t *d, const kvblob_region_desc_t *desc, kvblob_region_t **out,
                                 char *err, uint32_t capacity)
{
    (void)d;
    (void)err;
    (void)capacity;
    if (desc->kind != KVBLOB_MEMORY_HOST) return KVBLOB_E_UNSUPPORTED;
    *out = (kvblob_region_t *)calloc(1, sizeof **out);
    return *out ? KVBLOB_OK : KVBLOB_E_NO_MEMORY;
}

static kvblob_status nd_unregister(kvblob_driver_t *d, kvblob_region_t *r)
{
    (void)d;
    free(r);
    return KVBLOB_OK;
}

static kvblob_status submit(kvblob_driver_t *d, const kvblob_batch_t *b, kvblob_row_result result, kvblob_op_t **out)
{
    *out = NULL;
    atomic_fetch_add(&d->calls, 1);
    if (atomic_load(&d->draining)) {
        atomic_fetch_sub(&d->calls, 1);
        return KVBLOB_E_CLOSED;
    }
    kvblob_op_t *op = (kvblob_op_t *)malloc(sizeof *op);
    if (op) {
        op->rows = b->row_count;
        op->result = result;
        /* Final and access ended already: announced before the call is
         * counted out, so a drain (and so close) waits for the announcements. */
        if (d->notify) {
            d->notify(d->context, op, KVBLOB_NOTIFY_FINAL);
            d->notify(d->context, op, KVBLOB_NOTIFY_ACCESS);
        }
    }
    atomic_fetch_sub(&d->calls, 1);
    if (!op) return KVBLOB_E_REJECTED;
    *out = op;
    return KVBLOB_OK;
}

static kvblob_status nd_put(kvblob_driver_t *d, const kvblob_batch_t *b, kvblob_op_t **o, char *e, uint32_t c)
{
    (void)e;
    (void)c;
    return submit(d, b, KVBLOB_ROW_READY, o);
}
static kvblob_status nd_get(kvblob_driver_t *d, const kvblob_batch_t *b, kvblob_op_t **o, char *e, uint32_t c)
{
    (void)e;
    (void)c;
    return submit(d, b, KVBLOB_ROW_MISS, o);
}

static kvblob_status nd_poll(kvblob_driver_t *d, kvblob_op_t *op, uint32_t *is_final)
{
    (void)d;
    (void)op;
    *is_final = 1;
    return KVBLOB_OK;
}

static kvblob_status nd_results(kvblob_driver_t *d, kvblob_op_t *op, uint64_t first, uint64_t count,
                                kvblob_row_status_t *out)
{
    (void)d;
    if (first > op->rows || count > op->rows - first) return KVBLOB_E_INVALID;
    for (uint64_t i = 0; i < count; ++i) {
        out[i].result = op->result;
        out[i].driver_code = 0;
        out[i].reserved = 0;
    }
    return KVBLOB_OK;
}

static uint32_t nd_row_message(kvblob_driver_t *d, kvblob_op_t *op, uint64_t row, char *buf, uint32_t capacity)
{
    (void)d;
    (void)op;
    (void)row;
    if (buf && capacity) buf[0] = '\0';
    return 0;
}

static kvblob_access nd_access(kvblob_driver_t *d, kvblob_op_t *op)
{
    (void)d;
    (void)op;
    return KVBLOB_ACCESS_ENDED;
}

static kvblob_status nd_cancel(kvblob_driver_t *d, kvblob_op_t *op)
{
    (void)d;
    (void)op;
    return KVBLOB_OK;
}

static kvblob_status nd_release(kvblob_driver_t *d, kvblob_op_t *op)
{
    (void)d;
    free(op);
    return KVBLOB_OK;
}

static kvblob_status nd_drain(kvblob_driver_t *d, uint64_t timeout_ns)
{
    (void)timeout_ns;
    atomic_store(&d->draining, 1);
    while (atomic_load(&d->calls) != 0) {
    }
    return KVBLOB_OK;
}

/* One table per ABI version spoken: the 1.0 table is 1.0's size and lays
 * out no later member. */
#define NULL_TABLE(size, abi)                                                                                     \
    {                                                                                                              \
        size, abi, KVBLOB_CONTRACT_VERSION, 0, "null", "0.1.0",                                                    \
            "Completes every operation at once and moves no bytes: measures the host's cost per row.", NULL, 0,    \
            nd_open, nd_close, nd_get_extension, nd_register, nd_unregister, nd_put, nd_get, nd_get /* probe: MISS */, \
            nd_put /* remove: READY */, nd_poll, nd_results, nd_row_message, nd_access, nd_cancel, nd_release,     \
            nd_drain, NULL /* option_flags: no options */                                                          \
    }
static const kvblob_plugin_t plugin_1_0 = NULL_TABLE(KVBLOB_PLUGIN_SIZE_1_0, KVBLOB_ABI_1_0);
static const kvblob_plugin_t plugin_1_1 = NULL_TABLE(sizeof(kvblob_plugin_t), KVBLOB_ABI_1_1);

/* Speaks 1.0 and 1.1: answers the newest of them the host's range holds
 * (R-LOAD-3). */
kvblob_status kvblob_plugin_negotiate(kvblob_negotiation_t *n)
{
    uint32_t high = n->host_max_abi_version < KVBLOB_ABI_1_1 ? n->host_max_abi_version : KVBLOB_ABI_1_1;
    uint32_t low = n->host_min_abi_version > KVBLOB_ABI_1_0 ? n->host_min_abi_version : KVBLOB_ABI_1_0;
    if (high < low) {
        n->chosen_abi_version = KVBLOB_ABI_1_1; /* say which one we speak */
        return KVBLOB_E_UNSUPPORTED;
    }
    n->chosen_abi_version = high;
    n->plugin = high >= KVBLOB_ABI_1_1 ? &plugin_1_1 : &plugin_1_0;
    return KVBLOB_OK;
}
