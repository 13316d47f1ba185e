// A TEST SHIM, not Mooncake: loaded by the Mooncake driver in place of
// libmooncake_store.so, it forwards every call to the real library named by
// KVBLOB_MOONCAKE_REAL_LIBRARY. After kvblob_shim_refuse_next_batch(), the
// next batch call (put, get moving bytes, or is_exist) reaches the real library with a
// results array of NULL, an argument the real library refuses: it returns
// -1 without writing any result, through its own code. The driver's own
// array is then left as it was, and the test sees what the driver makes of
// a batch call of the real library that failed as a whole.
#include <dlfcn.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "real_library.hpp"

namespace {

std::atomic<bool> refuse_next{false};
std::atomic<int> refused{0};

template <class F>
F fn(const char *name)
{
    return kvblob::test::mooncake::real_function<F>("refusing_shim", name);
}

// Whether this batch call is the one to refuse.
bool take() { return refuse_next.exchange(false) && (++refused, true); }

}  // namespace

extern "C" {

void kvblob_shim_refuse_next_batch() { refuse_next = true; }
int kvblob_shim_refused_count() { return refused.load(); }

const char *kvblob_mooncake_source_version()
{
    static auto f = fn<const char *(*)()>("kvblob_mooncake_source_version");
    return f ? f() : nullptr;
}

void *mooncake_store_create()
{
    static auto f = fn<void *(*)()>("mooncake_store_create");
    return f ? f() : nullptr;
}

void mooncake_store_destroy(void *s)
{
    static auto f = fn<void (*)(void *)>("mooncake_store_destroy");
    f(s);
}

int mooncake_store_setup(void *s, const char *host, const char *meta, uint64_t seg, uint64_t buf, const char *proto,
                         const char *dev, const char *master)
{
    static auto f = fn<int (*)(void *, const char *, const char *, uint64_t, uint64_t, const char *, const char *,
                               const char *)>("mooncake_store_setup");
    return f(s, host, meta, seg, buf, proto, dev, master);
}

int mooncake_store_health_check(void *s)
{
    static auto f = fn<int (*)(void *)>("mooncake_store_health_check");
    return f(s);
}

int mooncake_store_batch_put_from(void *s, const char **keys, void **buffers, const size_t *sizes, size_t count,
                                  const void *config, int *results_out)
{
    static auto f = fn<int (*)(void *, const char **, void **, const size_t *, size_t, const void *, int *)>(
        "mooncake_store_batch_put_from");
    return f(s, keys, buffers, sizes, count, config, take() ? nullptr : results_out);
}

int kvblob_mooncake_batch_put_from_reporting_existing(void *s, const char **keys, void **buffers, const size_t *sizes,
                                                      size_t count, const void *config, int *results_out)
{
    static auto f = fn<int (*)(void *, const char **, void **, const size_t *, size_t, const void *, int *)>(
        "kvblob_mooncake_batch_put_from_reporting_existing");
    return f(s, keys, buffers, sizes, count, config, take() ? nullptr : results_out);
}

int mooncake_store_batch_get_into(void *s, const char **keys, void **buffers, const size_t *sizes, size_t count,
                                  int64_t *results_out)
{
    static auto f = fn<int (*)(void *, const char **, void **, const size_t *, size_t, int64_t *)>(
        "mooncake_store_batch_get_into");
    // A call with only empty spans (the driver's question before a put)
    // moves nothing: the refusal waits for a get that moves bytes.
    bool moves = false;
    for (size_t i = 0; i < count; ++i) moves = moves || sizes[i] > 0;
    return f(s, keys, buffers, sizes, count, moves && take() ? nullptr : results_out);
}

int mooncake_store_batch_is_exist(void *s, const char **keys, size_t count, int *results_out)
{
    static auto f = fn<int (*)(void *, const char **, size_t, int *)>("mooncake_store_batch_is_exist");
    return f(s, keys, count, take() ? nullptr : results_out);
}

int64_t mooncake_store_get_size(void *s, const char *key)
{
    static auto f = fn<int64_t (*)(void *, const char *)>("mooncake_store_get_size");
    return f(s, key);
}

int mooncake_store_register_buffer(void *s, void *buffer, size_t size)
{
    static auto f = fn<int (*)(void *, void *, size_t)>("mooncake_store_register_buffer");
    return f(s, buffer, size);
}

int mooncake_store_unregister_buffer(void *s, void *buffer)
{
    static auto f = fn<int (*)(void *, void *)>("mooncake_store_unregister_buffer");
    return f(s, buffer);
}

int mooncake_store_remove(void *s, const char *key, int force)
{
    static auto f = fn<int (*)(void *, const char *, int)>("mooncake_store_remove");
    return f(s, key, force);
}

}  // extern "C"
