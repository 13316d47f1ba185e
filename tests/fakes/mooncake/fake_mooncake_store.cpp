// A FAKE libmooncake_store.so: it is not Mooncake. It implements the C API
// functions of mooncake-store/include/store_c.h (Mooncake v0.3.12.post1)
// that kvblob's Mooncake driver uses, over real bytes in this process, so
// the driver can be tested where Mooncake is not built, and so tests can
// stage failures the real store cannot be made to show on demand.
//
// It answers what the real library answers (read from its code, and checked
// against it by tests/mooncake/compare_fake_real.sh, which runs one scenario
// list against both):
// - one pool per master address, shared by every client set up with it,
//   holding at most the first client's global_segment_size bytes: beyond,
//   a put answers NO_AVAILABLE_HANDLE (-200);
// - zero copy: put and get buffers must lie inside a buffer registered with
//   mooncake_store_register_buffer, or the row answers INVALID_PARAMS (-600);
//   a registration overlapping another is INVALID_PARAMS;
// - a put of a key that exists, complete or still being written by another
//   client, stores nothing and answers 0 (the real client turns the
//   master's OBJECT_ALREADY_EXISTS into success), or OBJECT_ALREADY_EXISTS
//   (-705) through kvblob_mooncake_batch_put_from_reporting_existing, the
//   put scripts/build-mooncake adds (plugins/mooncake/library/);
// - is_exist answers 1 only for a complete object: a key still being
//   written is 0, like an absent one; get_size tells them apart
//   (REPLICA_IS_NOT_READY (-703) against OBJECT_NOT_FOUND (-704)); a get of
//   an incomplete object is REPLICA_IS_NOT_READY;
// - a get into a buffer smaller than the object is INVALID_PARAMS, before
//   any byte is written; an absent key is OBJECT_NOT_FOUND; so a get with
//   an empty span (no buffer, 0 bytes: the driver's question before a put)
//   answers OBJECT_NOT_FOUND, REPLICA_IS_NOT_READY or INVALID_PARAMS and
//   moves nothing (a staged transfer failure or whole-batch failure waits
//   for a call that moves bytes);
// - is_exist, get and get_size of a complete object grant it a lease
//   (KVBLOB_FAKE_MOONCAKE_LEASE_MS, default 10000, the master's
//   default_kv_lease_ttl); remove answers OBJECT_HAS_LEASE (-706) while one
//   runs, unless forced, and REPLICA_IS_NOT_READY for an incomplete object;
// - this version has no checksum: bytes corrupted at rest would be returned
//   as they are, so the fake stages no corruption;
// - the batch calls return -1, without writing their results array, for a
//   bad argument or an exception caught inside.
// It exports kvblob_mooncake_source_version like a library built by
// scripts/build-mooncake, answering KVBLOB_FAKE_MOONCAKE_VERSION when set
// (to test the driver's refusal of another version), else 0.3.12.post1.
// Built with KVBLOB_FAKE_MOONCAKE_OLD_RECIPE, it does not export the put that
// reports existing keys (to test the driver's refusal of such a library).
// What it stages for tests, through the extra symbol
// mooncake_store_fake_stage (absent from Mooncake): a key held by another
// writer, a full pool, a failing read (RPC_FAIL), a failed transfer
// (TRANSFER_FAIL, answered after it ended, as the real store does within
// its completion timeout), the next batch call failing as a whole after
// moving its first row's bytes, as an exception mid-batch would
// ("fail_next_batch", also staged as "unprovable"), and "release".
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int OK = 0, NO_AVAILABLE_HANDLE = -200, INVALID_PARAMS = -600, REPLICA_IS_NOT_READY = -703,
              OBJECT_NOT_FOUND = -704, OBJECT_ALREADY_EXISTS = -705, OBJECT_HAS_LEASE = -706, TRANSFER_FAIL = -800,
              RPC_FAIL = -900;

using Clock = std::chrono::steady_clock;

struct Object {
    std::vector<uint8_t> bytes;
    bool complete = false;
    bool foreign = false;  // a staged writer that never finishes
    Clock::time_point lease_until{};
};

struct Pool {
    std::mutex mu;
    std::map<std::string, Object> objects;
    uint64_t capacity = 0, used = 0;
    bool full = false;
    bool fail_next_batch = false;
    std::set<std::string> failing, failing_transfer;
};

std::mutex pools_mu;
std::map<std::string, std::shared_ptr<Pool>> pools;

std::chrono::milliseconds lease_ttl()
{
    const char *env = std::getenv("KVBLOB_FAKE_MOONCAKE_LEASE_MS");
    return std::chrono::milliseconds(env ? std::strtoll(env, nullptr, 10) : 10000);
}

void grant_lease(Object &o) { o.lease_until = std::max(o.lease_until, Clock::now() + lease_ttl()); }

struct Client {
    std::shared_ptr<Pool> pool;
    std::mutex mu;
    std::map<uintptr_t, size_t> buffers;  // registered: start -> size

    bool registered(const void *p, size_t n)
    {
        std::lock_guard lock(mu);
        const auto at = reinterpret_cast<uintptr_t>(p);
        auto it = buffers.upper_bound(at);
        if (it == buffers.begin()) return false;
        --it;
        return at + n <= it->first + it->second;
    }
};

Client *client(void *store) { return static_cast<Client *>(store); }

// Takes the staged whole-batch failure, if any.
bool take_batch_failure(Pool &pool)
{
    std::lock_guard lock(pool.mu);
    const bool fail = pool.fail_next_batch;
    pool.fail_next_batch = false;
    return fail;
}

int put_one(Client &c, const char *key, void *buffer, size_t size)
{
    if (!c.registered(buffer, size)) return INVALID_PARAMS;
    Pool &pool = *c.pool;
    {
        std::lock_guard lock(pool.mu);
        if (pool.objects.count(key)) return OBJECT_ALREADY_EXISTS;
        if (pool.failing_transfer.erase(key)) return TRANSFER_FAIL;
        if (pool.full || pool.used + size > pool.capacity) return NO_AVAILABLE_HANDLE;
        pool.used += size;
        pool.objects[key];  // reserved: readers see REPLICA_IS_NOT_READY
    }
    // The transfer, outside the lock like the real one.
    std::vector<uint8_t> bytes(static_cast<uint8_t *>(buffer), static_cast<uint8_t *>(buffer) + size);
    std::lock_guard lock(pool.mu);
    Object &o = pool.objects[key];
    o.bytes = std::move(bytes);
    o.complete = true;
    return OK;
}

int64_t get_one(Client &c, const char *key, void *buffer, size_t size)
{
    Pool &pool = *c.pool;
    std::lock_guard lock(pool.mu);
    if (pool.failing.count(key)) return RPC_FAIL;
    // An empty span moves nothing: a staged transfer failure waits for a get that moves bytes.
    if (size > 0 && pool.failing_transfer.erase(key)) return TRANSFER_FAIL;
    auto it = pool.objects.find(key);
    if (it == pool.objects.end()) return OBJECT_NOT_FOUND;
    Object &o = it->second;
    if (!o.complete) return REPLICA_IS_NOT_READY;
    grant_lease(o);
    if (o.bytes.size() > size) return INVALID_PARAMS;  // before any transfer
    if (!c.registered(buffer, size)) return INVALID_PARAMS;
    std::memcpy(buffer, o.bytes.data(), o.bytes.size());
    return static_cast<int64_t>(o.bytes.size());
}

}  // namespace

extern "C" {

struct mooncake_replicate_config;

const char *kvblob_mooncake_source_version()
{
    const char *env = std::getenv("KVBLOB_FAKE_MOONCAKE_VERSION");
    return env ? env : "0.3.12.post1";
}

void *mooncake_store_create() { return new Client(); }

void mooncake_store_destroy(void *store) { delete client(store); }

int mooncake_store_setup(void *store, const char *, const char *, uint64_t global_segment_size, uint64_t,
                         const char *, const char *, const char *master_server_addr)
{
    const std::string master = master_server_addr ? master_server_addr : "";
    if (master.empty() || master == "unreachable") return RPC_FAIL;
    std::lock_guard lock(pools_mu);
    auto &pool = pools[master];
    if (!pool) {
        pool = std::make_shared<Pool>();
        pool->capacity = global_segment_size;
    }
    client(store)->pool = pool;
    return OK;
}

int mooncake_store_health_check(void *store) { return client(store)->pool ? OK : RPC_FAIL; }

int mooncake_store_register_buffer(void *store, void *buffer, size_t size)
{
    if (!buffer || size == 0) return -1;
    Client &c = *client(store);
    std::lock_guard lock(c.mu);
    const auto at = reinterpret_cast<uintptr_t>(buffer);
    for (const auto &[start, length] : c.buffers)
        if (at < start + length && start < at + size) return INVALID_PARAMS;  // overlap
    c.buffers[at] = size;
    return OK;
}

int mooncake_store_unregister_buffer(void *store, void *buffer)
{
    std::lock_guard lock(client(store)->mu);
    return client(store)->buffers.erase(reinterpret_cast<uintptr_t>(buffer)) ? OK : INVALID_PARAMS;
}

#ifdef KVBLOB_FAKE_MOONCAKE_OLD_RECIPE
static  // not exported: the library as build-mooncake's recipe 1 built it
#endif
int kvblob_mooncake_batch_put_from_reporting_existing(void *store, const char **keys, void **buffers,
                                                      const size_t *sizes, size_t count,
                                                      const mooncake_replicate_config *, int *results_out)
{
    if (!store || !keys || !buffers || !sizes || !results_out) return -1;
    if (take_batch_failure(*client(store)->pool)) {
        // As an exception mid-batch: the first row's transfer happened.
        if (count > 0) put_one(*client(store), keys[0], buffers[0], sizes[0]);
        return -1;
    }
    for (size_t i = 0; i < count; ++i) results_out[i] = put_one(*client(store), keys[i], buffers[i], sizes[i]);
    return OK;
}

int mooncake_store_batch_put_from(void *store, const char **keys, void **buffers, const size_t *sizes, size_t count,
                                  const mooncake_replicate_config *config, int *results_out)
{
    const int rc =
        kvblob_mooncake_batch_put_from_reporting_existing(store, keys, buffers, sizes, count, config, results_out);
    // The client takes the master's OBJECT_ALREADY_EXISTS as success.
    for (size_t i = 0; rc == OK && i < count; ++i)
        if (results_out[i] == OBJECT_ALREADY_EXISTS) results_out[i] = OK;
    return rc;
}

int mooncake_store_batch_get_into(void *store, const char **keys, void **buffers, const size_t *sizes, size_t count,
                                  int64_t *results_out)
{
    if (!store || !keys || !buffers || !sizes || !results_out) return -1;
    // The staged failure is an exception mid-transfer: a call with only
    // empty spans (the driver's question before a put) moves nothing.
    bool moves = false;
    for (size_t i = 0; i < count; ++i) moves = moves || sizes[i] > 0;
    if (moves && take_batch_failure(*client(store)->pool)) {
        if (count > 0) get_one(*client(store), keys[0], buffers[0], sizes[0]);
        return -1;
    }
    for (size_t i = 0; i < count; ++i) results_out[i] = get_one(*client(store), keys[i], buffers[i], sizes[i]);
    return OK;
}

int mooncake_store_batch_is_exist(void *store, const char **keys, size_t count, int *results_out)
{
    if (!store || !keys || !results_out) return -1;
    Pool &pool = *client(store)->pool;
    if (take_batch_failure(pool)) return -1;
    std::lock_guard lock(pool.mu);
    for (size_t i = 0; i < count; ++i) {
        auto it = pool.objects.find(keys[i]);
        const bool complete = it != pool.objects.end() && it->second.complete;
        if (complete) grant_lease(it->second);
        results_out[i] = complete ? 1 : 0;
    }
    return OK;
}

int64_t mooncake_store_get_size(void *store, const char *key)
{
    if (!store || !key) return -1;
    Pool &pool = *client(store)->pool;
    std::lock_guard lock(pool.mu);
    auto it = pool.objects.find(key);
    if (it == pool.objects.end()) return OBJECT_NOT_FOUND;
    if (!it->second.complete) return REPLICA_IS_NOT_READY;
    grant_lease(it->second);
    return static_cast<int64_t>(it->second.bytes.size());
}

int mooncake_store_remove(void *store, const char *key, int force)
{
    if (!store || !key) return -1;
    Pool &pool = *client(store)->pool;
    std::lock_guard lock(pool.mu);
    auto it = pool.objects.find(key);
    if (it == pool.objects.end()) return OBJECT_NOT_FOUND;
    if (!force && Clock::now() < it->second.lease_until) return OBJECT_HAS_LEASE;
    if (!it->second.complete) return REPLICA_IS_NOT_READY;
    pool.used -= it->second.bytes.size();
    pool.objects.erase(it);
    return OK;
}

int mooncake_store_fake_stage(void *store, const char *what, const char *key)
{
    Pool &pool = *client(store)->pool;
    const std::string w = what, k = key ? key : "";
    std::lock_guard lock(pool.mu);
    if (w == "foreign_writer") {
        if (pool.objects.count(k)) return INVALID_PARAMS;
        pool.objects[k].foreign = true;
    } else if (w == "full_pool") {
        pool.full = true;
    } else if (w == "failing_read") {
        pool.failing.insert(k);
    } else if (w == "transfer_fail") {
        pool.failing_transfer.insert(k);
    } else if (w == "fail_next_batch" || w == "unprovable") {
        // The real library's one way to leave a transfer under way behind
        // an answer: an exception caught inside a batch call.
        pool.fail_next_batch = true;
    } else if (w == "release") {
        std::erase_if(pool.objects, [](const auto &kv) { return kv.second.foreign; });
        pool.full = false;
        pool.failing.clear();
        pool.fail_next_batch = false;
    } else {
        return INVALID_PARAMS;
    }
    return OK;
}

}  // extern "C"
