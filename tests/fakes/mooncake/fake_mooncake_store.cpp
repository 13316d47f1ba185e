// A FAKE libmooncake_store.so: it is not Mooncake. It implements the C API
// functions of mooncake-store/include/store_c.h that kvblob's Mooncake
// driver uses, over real bytes in this process, so the driver can be built
// and tested where Mooncake is not installed (it is not in Debian).
//
// What it models of the store's documented behaviour:
// - one pool per master address, shared by every client set up with it,
//   holding at most the first client's global_segment_size bytes: beyond,
//   a put answers NO_AVAILABLE_HANDLE (-200);
// - zero copy: put and get buffers must lie inside a buffer registered with
//   mooncake_store_register_buffer, or the row answers INVALID_PARAMS (-600);
// - an object is complete only after its put finished: while it is written
//   a get answers REPLICA_IS_NOT_READY (-703) and is_exist answers the same;
// - a put of an existing key answers OBJECT_ALREADY_EXISTS (-705) and
//   changes nothing; an absent key is OBJECT_NOT_FOUND (-704) and nothing is
//   written; a buffer smaller than the object is BUFFER_OVERFLOW (-10);
// - the store checks each replica's checksum on read: a corrupted one is
//   CHECKSUM_MISMATCH (-801), never returned as bytes.
// What it stages for tests, through the extra symbol
// mooncake_store_fake_stage (absent from Mooncake): a key held by another
// writer, a full pool, a failing read (RPC_FAIL), a corrupted object, a
// transfer that fails (TRANSFER_FAIL), and "release" to undo them.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace {

constexpr int OK = 0, BUFFER_OVERFLOW = -10, NO_AVAILABLE_HANDLE = -200, INVALID_PARAMS = -600,
              REPLICA_IS_NOT_READY = -703, OBJECT_NOT_FOUND = -704, OBJECT_ALREADY_EXISTS = -705,
              TRANSFER_FAIL = -800, CHECKSUM_MISMATCH = -801, RPC_FAIL = -900;

uint64_t checksum(const uint8_t *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

struct Object {
    std::vector<uint8_t> bytes;
    uint64_t sum = 0;
    bool complete = false;
    bool foreign = false;  // a staged writer that never finishes
};

struct Pool {
    std::mutex mu;
    std::map<std::string, Object> objects;
    uint64_t capacity = 0, used = 0;
    bool full = false;
    std::set<std::string> failing, failing_transfer;
};

std::mutex pools_mu;
std::map<std::string, std::shared_ptr<Pool>> pools;

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
    const uint64_t sum = checksum(bytes.data(), size);
    std::lock_guard lock(pool.mu);
    Object &o = pool.objects[key];
    o.bytes = std::move(bytes);
    o.sum = sum;
    o.complete = true;
    return OK;
}

int64_t get_one(Client &c, const char *key, void *buffer, size_t size)
{
    if (!c.registered(buffer, size)) return INVALID_PARAMS;
    Pool &pool = *c.pool;
    std::lock_guard lock(pool.mu);
    if (pool.failing.count(key)) return RPC_FAIL;
    if (pool.failing_transfer.erase(key)) return TRANSFER_FAIL;
    auto it = pool.objects.find(key);
    if (it == pool.objects.end()) return OBJECT_NOT_FOUND;
    const Object &o = it->second;
    if (!o.complete) return REPLICA_IS_NOT_READY;
    if (checksum(o.bytes.data(), o.bytes.size()) != o.sum) return CHECKSUM_MISMATCH;
    if (o.bytes.size() > size) return BUFFER_OVERFLOW;
    std::memcpy(buffer, o.bytes.data(), o.bytes.size());
    return static_cast<int64_t>(o.bytes.size());
}

}  // namespace

extern "C" {

struct mooncake_replicate_config;

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
    std::lock_guard lock(client(store)->mu);
    client(store)->buffers[reinterpret_cast<uintptr_t>(buffer)] = size;
    return OK;
}

int mooncake_store_unregister_buffer(void *store, void *buffer)
{
    std::lock_guard lock(client(store)->mu);
    return client(store)->buffers.erase(reinterpret_cast<uintptr_t>(buffer)) ? OK : INVALID_PARAMS;
}

int mooncake_store_batch_put_from(void *store, const char **keys, void **buffers, const size_t *sizes, size_t count,
                                  const mooncake_replicate_config *, int *results_out)
{
    for (size_t i = 0; i < count; ++i) results_out[i] = put_one(*client(store), keys[i], buffers[i], sizes[i]);
    return OK;
}

int mooncake_store_batch_get_into(void *store, const char **keys, void **buffers, const size_t *sizes, size_t count,
                                  int64_t *results_out)
{
    for (size_t i = 0; i < count; ++i) results_out[i] = get_one(*client(store), keys[i], buffers[i], sizes[i]);
    return OK;
}

int mooncake_store_batch_is_exist(void *store, const char **keys, size_t count, int *results_out)
{
    Pool &pool = *client(store)->pool;
    std::lock_guard lock(pool.mu);
    for (size_t i = 0; i < count; ++i) {
        auto it = pool.objects.find(keys[i]);
        results_out[i] = it == pool.objects.end() ? 0 : it->second.complete ? 1 : REPLICA_IS_NOT_READY;
    }
    return OK;
}

int mooncake_store_remove(void *store, const char *key, int)
{
    Pool &pool = *client(store)->pool;
    std::lock_guard lock(pool.mu);
    auto it = pool.objects.find(key);
    if (it == pool.objects.end()) return OBJECT_NOT_FOUND;
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
    } else if (w == "unprovable") {
        pool.failing_transfer.insert(k);
    } else if (w == "corrupt") {
        auto it = pool.objects.find(k);
        if (it == pool.objects.end() || it->second.bytes.empty()) return OBJECT_NOT_FOUND;
        it->second.bytes[0] ^= 0x5a;  // at rest: the checksum no longer matches
    } else if (w == "release") {
        std::erase_if(pool.objects, [](const auto &kv) { return kv.second.foreign; });
        pool.full = false;
        pool.failing.clear();
    } else {
        return INVALID_PARAMS;
    }
    return OK;
}

}  // extern "C"
