// The part of Mooncake store's C API (mooncake-store/include/store_c.h)
// this driver uses, declared here from the header of Mooncake v0.3.12.post1
// and resolved from libmooncake_store.so with dlopen at open time: the
// driver builds, and loads, on machines without Mooncake.
//
// The driver passes structs across that API (mooncake_replicate_config_t)
// and reads results whose conventions change between versions, so it loads
// only a library that says it was built from the sources it was written
// for: upstream's library carries no version, so scripts/build-mooncake
// links one in, as the symbol kvblob_mooncake_source_version, beside a put
// that reports keys that exist (plugins/mooncake/library/).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kvblob::mooncake {

using mooncake_store_t = void *;

// store_c.h's mooncake_replicate_config_t.
struct ReplicateConfig {
    size_t replica_num;
    int with_soft_pin;
    int with_hard_pin;
    const char **preferred_segments;
    size_t preferred_segments_count;
};

// The Mooncake version whose C API this driver speaks.
inline constexpr const char *kSupportedVersion = "0.3.12.post1";

struct StoreApi {
    // const char *kvblob_mooncake_source_version(void): the Mooncake
    // release the library was built from (scripts/build-mooncake adds it).
    const char *(*source_version)();
    mooncake_store_t (*create)();
    void (*destroy)(mooncake_store_t);
    int (*setup)(mooncake_store_t, const char *local_hostname, const char *metadata_server,
                 uint64_t global_segment_size, uint64_t local_buffer_size, const char *protocol,
                 const char *device_name, const char *master_server_addr);
    int (*health_check)(mooncake_store_t);
    int (*batch_put_from)(mooncake_store_t, const char **keys, void **buffers, const size_t *sizes, size_t count,
                          const ReplicateConfig *config, int *results_out);
    // int kvblob_mooncake_batch_put_from_reporting_existing(...): batch_put_from,
    // except that a key that exists (complete, or being written by another
    // client) answers OBJECT_ALREADY_EXISTS, not 0 (scripts/build-mooncake
    // adds it, plugins/mooncake/library/).
    int (*batch_put_reporting_existing)(mooncake_store_t, const char **keys, void **buffers, const size_t *sizes,
                                        size_t count, const ReplicateConfig *config, int *results_out);
    int (*batch_get_into)(mooncake_store_t, const char **keys, void **buffers, const size_t *sizes, size_t count,
                          int64_t *results_out);
    int (*batch_is_exist)(mooncake_store_t, const char **keys, size_t count, int *results_out);
    int64_t (*get_size)(mooncake_store_t, const char *key);
    int (*register_buffer)(mooncake_store_t, void *buffer, size_t size);
    int (*unregister_buffer)(mooncake_store_t, void *buffer);
    // Optional: remove (when present, the driver declares remove).
    int (*remove)(mooncake_store_t, const char *key, int force);
    // Optional: the client's name in the pool, which names its segment
    // (kvblob-bench's baseline places its objects there).
    int (*get_hostname)(mooncake_store_t, char *buf_out, size_t buf_len);
    // Optional, and only in test libraries (the fake, tests/fakes/mooncake,
    // and the real store's staging shim, tests/mooncake/staging_shim.cpp):
    // stages a scenario (what: "foreign_writer", "full_pool",
    // "failing_read", "corrupt", "unprovable", "release"); 0 on success.
    int (*fake_stage)(mooncake_store_t, const char *what, const char *key);
};

// The library, loaded and resolved; closed when destroyed.
class StoreLibrary {
public:
    // Loads path (a file, or a name searched by the dynamic linker). Throws
    // std::runtime_error naming the library and what is missing.
    explicit StoreLibrary(const std::string &path);
    ~StoreLibrary();
    StoreLibrary(const StoreLibrary &) = delete;
    StoreLibrary &operator=(const StoreLibrary &) = delete;

    const StoreApi &api() const { return api_; }

private:
    void *handle_ = nullptr;
    StoreApi api_{};
};

}  // namespace kvblob::mooncake
