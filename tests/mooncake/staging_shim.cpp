// A TEST SHIM, not Mooncake: loaded by the Mooncake driver in place of
// libmooncake_store.so, it forwards every call, unchanged, to the real
// library named by KVBLOB_MOONCAKE_REAL_LIBRARY, and adds the one symbol the
// driver offers scenarios through, mooncake_store_fake_stage. Each scenario
// is staged on the real store, by the real store's own means, from a second
// client of the same master that this shim sets up (it lends no segment)
// and from peer processes (mooncake-segment-peer, KVBLOB_MOONCAKE_PEER_BIN)
// that lend a segment:
//
// - "foreign_writer" KEY: a peer lends a 32 MiB segment and is stopped
//   (SIGSTOP); the second client puts KEY, 32 MiB, preferring that segment.
//   The master has allocated it (PutStart) but the transfer cannot finish:
//   another writer holds KEY uncommitted, for as long as it is staged. The
//   stage returns once the store answers REPLICA_IS_NOT_READY for KEY.
//   Released: the peer is killed, the put fails and the client revokes it,
//   and the stage waits until the store answers OBJECT_NOT_FOUND for KEY.
// - "full_pool": the second client puts hard-pinned objects (which the
//   master never evicts), from 16 MiB down to 256 bytes, each size until the
//   store answers NO_AVAILABLE_HANDLE: every segment of the pool is full.
//   Released: they are removed.
// - "failing_read" KEY: KEY's object is moved (read, removed, put again by
//   the second client) into the segment of a peer, and the peer is killed
//   (SIGKILL), as a node dies: a get of KEY reaches a dead node. Released
//   (or when the store is destroyed): the stage waits until the master has
//   noticed the dead node and forgotten KEY (its client TTL, 10 s by
//   default), so no later put is placed in the dead segment. The
//   foreign writer's release waits so too.
// - "unprovable" KEY: the next put (batch_put_from, or the put that reports
//   existing keys) reaches the real library with a NULL results array,
//   which it refuses (-1, nothing written) through its own code: the
//   answer it gives for an exception caught mid-transfer.
// - "release": ends every stage of this client.
//
// Everything staged by a client is released when that client is destroyed.
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "real_library.hpp"

extern char **environ;

namespace {

constexpr int OK = 0, NO_AVAILABLE_HANDLE = -200, REPLICA_IS_NOT_READY = -703, OBJECT_NOT_FOUND = -704;

template <class F>
F fn(const char *name)
{
    return kvblob::test::mooncake::real_function<F>("staging_shim", name);
}

struct ReplicateConfig {  // store_c.h's mooncake_replicate_config_t
    size_t replica_num;
    int with_soft_pin;
    int with_hard_pin;
    const char **preferred_segments;
    size_t preferred_segments_count;
};

struct Api {
    void *(*create)() = fn<void *(*)()>("mooncake_store_create");
    void (*destroy)(void *) = fn<void (*)(void *)>("mooncake_store_destroy");
    int (*setup)(void *, const char *, const char *, uint64_t, uint64_t, const char *, const char *,
                 const char *) = fn<int (*)(void *, const char *, const char *, uint64_t, uint64_t, const char *,
                                            const char *, const char *)>("mooncake_store_setup");
    int (*batch_put_from)(void *, const char **, void **, const size_t *, size_t, const void *, int *) =
        fn<int (*)(void *, const char **, void **, const size_t *, size_t, const void *, int *)>(
            "mooncake_store_batch_put_from");
    int64_t (*get_size)(void *, const char *) = fn<int64_t (*)(void *, const char *)>("mooncake_store_get_size");
    int (*register_buffer)(void *, void *, size_t) =
        fn<int (*)(void *, void *, size_t)>("mooncake_store_register_buffer");
    int (*unregister_buffer)(void *, void *) = fn<int (*)(void *, void *)>("mooncake_store_unregister_buffer");
    int (*remove)(void *, const char *, int) = fn<int (*)(void *, const char *, int)>("mooncake_store_remove");
};

const Api &api()
{
    static const Api a;
    return a;
}

// Says why a stage failed (the driver answers only KVBLOB_E_INVALID), and
// gives stage()'s failure.
int failed(const char *what, const std::string &why, long long code = 0)
{
    std::fprintf(stderr, "staging_shim: %s: %s (%lld)\n", what, why.c_str(), code);
    return -1;
}

// Polls until done() or the bound passes: the store's answers are the
// signal; the pause only spaces the questions.
template <class Done>
bool wait_for(Done done, std::chrono::seconds bound)
{
    const auto deadline = std::chrono::steady_clock::now() + bound;
    while (!done()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
}

// A mooncake-segment-peer process lending a segment; killed when it goes.
class Peer {
public:
    Peer(const std::string &master, const std::string &metadata, size_t segment)
    {
        const char *bin = std::getenv("KVBLOB_MOONCAKE_PEER_BIN");
        const char *library = std::getenv("KVBLOB_MOONCAKE_REAL_LIBRARY");
        if (!bin || !library) return;
        int in[2], out[2];
        if (::pipe2(in, O_CLOEXEC) != 0) return;
        if (::pipe2(out, O_CLOEXEC) != 0) {
            ::close(in[0]);
            ::close(in[1]);
            return;
        }
        const std::string size = std::to_string(segment);
        std::vector<char *> argv = {const_cast<char *>(bin), const_cast<char *>(library),
                                    const_cast<char *>(master.c_str()), const_cast<char *>(metadata.c_str()),
                                    const_cast<char *>(size.c_str()), nullptr};
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_adddup2(&actions, in[0], 0);
        posix_spawn_file_actions_adddup2(&actions, out[1], 1);
        if (posix_spawn(&pid_, bin, &actions, nullptr, argv.data(), environ) != 0) pid_ = -1;
        posix_spawn_file_actions_destroy(&actions);
        ::close(in[0]);
        ::close(out[1]);
        input_ = in[1];
        // "ready NAME" once its segment is mounted.
        FILE *f = ::fdopen(out[0], "r");
        char line[512] = "";
        if (f && std::fgets(line, sizeof line, f) && std::strncmp(line, "ready ", 6) == 0) {
            name_ = line + 6;
            while (!name_.empty() && (name_.back() == '\n' || name_.back() == '\r')) name_.pop_back();
        }
        if (f) std::fclose(f);
    }
    ~Peer() { kill(); }
    Peer(const Peer &) = delete;
    Peer &operator=(const Peer &) = delete;

    bool ready() const { return pid_ > 0 && !name_.empty(); }
    const std::string &name() const { return name_; }
    void stop() const
    {
        if (pid_ > 0) ::kill(pid_, SIGSTOP);
    }
    void kill()
    {
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
            pid_ = -1;
        }
        if (input_ >= 0) ::close(input_);
        input_ = -1;
    }

private:
    pid_t pid_ = -1;
    int input_ = -1;
    std::string name_;
};

// A page-aligned buffer registered with a client.
struct Registered {
    void *store = nullptr;
    void *bytes = nullptr;
    size_t size = 0;
    Registered(void *s, size_t n) : store(s), size(n)
    {
        if (::posix_memalign(&bytes, 4096, n) != 0) bytes = nullptr;
        if (bytes) std::memset(bytes, 0x5a, n);
        if (bytes && api().register_buffer(store, bytes, n) != OK) {
            std::free(bytes);
            bytes = nullptr;
        }
    }
    ~Registered()
    {
        if (!bytes) return;
        api().unregister_buffer(store, bytes);
        std::free(bytes);
    }
};

constexpr size_t kForeignBytes = 32u << 20;  // beyond what loopback sockets buffer: the transfer stalls
constexpr size_t kFillerBytes = 16u << 20;

// What one client of the driver's has staged, and the second client that
// stages it.
struct Stages {
    std::string hostname, metadata, protocol, device, master;
    void *helper = nullptr;  // the second client, set up on first use
    std::unique_ptr<Registered> buffer;
    unsigned serial = 0;

    struct Foreign {
        std::string key;
        std::unique_ptr<Peer> peer;
        std::thread writer;
    };
    std::vector<std::unique_ptr<Foreign>> foreign;
    std::vector<std::string> fillers;
    std::vector<std::string> dead_keys;  // on a killed peer's segment
    bool refuse_next_put = false;

    bool ready_helper()
    {
        if (helper) return true;
        void *c = api().create();
        if (!c) return false;
        if (api().setup(c, hostname.c_str(), metadata.c_str(), 0, 16u << 20, protocol.c_str(), device.c_str(),
                        master.c_str()) != OK) {
            api().destroy(c);
            return false;
        }
        helper = c;
        buffer = std::make_unique<Registered>(helper, std::max(kForeignBytes, kFillerBytes));
        return buffer->bytes != nullptr;
    }
    int put(const std::string &key, size_t size, const std::string &segment, bool pinned)
    {
        const char *k = key.c_str(), *seg = segment.c_str();
        void *b = buffer->bytes;
        ReplicateConfig config{1, 0, pinned ? 1 : 0, segment.empty() ? nullptr : &seg, segment.empty() ? 0u : 1u};
        int result = INT32_MIN;
        const int rc = api().batch_put_from(helper, &k, &b, &size, 1, &config, &result);
        return rc != OK ? rc : result;
    }
    std::string filler_key() { return "kvblob-staging/" + std::to_string(::getpid()) + "/" + std::to_string(serial++); }

    int stage_foreign_writer(const std::string &key)
    {
        if (!ready_helper()) return failed("foreign_writer", "cannot set up the second client");
        auto f = std::make_unique<Foreign>();
        f->key = key;
        f->peer = std::make_unique<Peer>(master, metadata, kForeignBytes);
        if (!f->peer->ready()) return failed("foreign_writer", "the peer did not start (KVBLOB_MOONCAKE_PEER_BIN)");
        f->peer->stop();
        f->writer = std::thread([this, key, segment = f->peer->name()] { put(key, kForeignBytes, segment, false); });
        foreign.push_back(std::move(f));
        // Held once the master has allocated it and it is not complete.
        const bool held = wait_for([&] { return api().get_size(helper, key.c_str()) == REPLICA_IS_NOT_READY; },
                                   std::chrono::seconds(20));
        return held ? OK : failed("foreign_writer", "the key never read REPLICA_IS_NOT_READY",
                                  api().get_size(helper, key.c_str()));
    }
    int stage_full_pool()
    {
        if (!ready_helper()) return failed("full_pool", "cannot set up the second client");
        for (size_t size = kFillerBytes; size >= 256; size /= 4) {
            for (int n = 0; n < 100000; ++n) {
                const std::string key = filler_key();
                const int rc = put(key, size, {}, true);
                if (rc == NO_AVAILABLE_HANDLE) break;
                if (rc != OK) return failed("full_pool", "a filler of " + std::to_string(size) + " bytes answered", rc);
                fillers.push_back(key);
            }
        }
        return OK;
    }
    int stage_failing_read(const std::string &key)
    {
        if (!ready_helper()) return failed("failing_read", "cannot set up the second client");
        const int64_t size = api().get_size(helper, key.c_str());
        if (size <= 0 || static_cast<size_t>(size) > kForeignBytes)
            return failed("failing_read", "get_size of the key answered", size);
        Peer peer(master, metadata, 16u << 20);  // the store's smallest segment
        if (!peer.ready()) return failed("failing_read", "the peer did not start (KVBLOB_MOONCAKE_PEER_BIN)");
        // The driver's object goes (forced: the lease is this shim's own
        // get_size), and the same number of bytes comes back on the peer.
        if (const int rc = api().remove(helper, key.c_str(), 1); rc != OK)
            return failed("failing_read", "the forced remove answered", rc);
        if (const int rc = put(key, static_cast<size_t>(size), peer.name(), false); rc != OK)
            return failed("failing_read", "the put to the peer's segment answered", rc);
        peer.kill();
        dead_keys.push_back(key);
        return OK;
    }
    // Waits until the master has dropped a dead peer's segment (its client
    // TTL, 10 s by default, after the peer died): until then it still places
    // objects there, and their transfers fail. A put preferring that segment
    // fails (TRANSFER_FAIL) while it is there, and lands elsewhere after.
    void wait_segment_gone(const std::string &segment)
    {
        wait_for(
            [&] {
                const std::string key = filler_key();
                if (put(key, 4096, segment, false) != OK) return false;
                api().remove(helper, key.c_str(), 1);
                return true;
            },
            std::chrono::seconds(60));
    }
    void release()
    {
        for (auto &f : foreign) {
            f->peer->kill();  // the put's transfer fails; the client revokes it
            if (f->writer.joinable()) f->writer.join();
            wait_for([&] { return api().get_size(helper, f->key.c_str()) == OBJECT_NOT_FOUND; },
                     std::chrono::seconds(20));
            wait_segment_gone(f->peer->name());
        }
        foreign.clear();
        for (const auto &k : fillers) api().remove(helper, k.c_str(), 1);
        fillers.clear();
        // The master forgets a dead node's objects, and stops placing new
        // ones in its segment, once its client TTL has passed.
        for (const auto &k : dead_keys)
            wait_for([&] { return api().get_size(helper, k.c_str()) == OBJECT_NOT_FOUND; }, std::chrono::seconds(60));
        dead_keys.clear();
        refuse_next_put = false;
    }
    ~Stages()
    {
        release();
        buffer.reset();
        if (helper) api().destroy(helper);
    }
};

std::mutex stages_mu;
std::map<void *, std::unique_ptr<Stages>> stages;

Stages *stages_of(void *store)
{
    std::lock_guard lock(stages_mu);
    auto it = stages.find(store);
    return it == stages.end() ? nullptr : it->second.get();
}

// Whether this put is the one "unprovable" staged.
bool take_refusal(void *s)
{
    bool refuse = false;
    if (Stages *st = stages_of(s)) {
        std::lock_guard lock(stages_mu);
        refuse = st->refuse_next_put;
        st->refuse_next_put = false;
    }
    return refuse;
}

}  // namespace

extern "C" {

const char *kvblob_mooncake_source_version()
{
    static auto f = fn<const char *(*)()>("kvblob_mooncake_source_version");
    return f ? f() : nullptr;
}

void *mooncake_store_create() { return api().create ? api().create() : nullptr; }

void mooncake_store_destroy(void *s)
{
    std::unique_ptr<Stages> staged;
    {
        std::lock_guard lock(stages_mu);
        if (auto it = stages.find(s); it != stages.end()) {
            staged = std::move(it->second);
            stages.erase(it);
        }
    }
    staged.reset();  // releases what this client staged
    api().destroy(s);
}

int mooncake_store_setup(void *s, const char *host, const char *meta, uint64_t seg, uint64_t buf, const char *proto,
                         const char *dev, const char *master)
{
    const int rc = api().setup(s, host, meta, seg, buf, proto, dev, master);
    if (rc == OK) {
        auto st = std::make_unique<Stages>();
        st->hostname = host ? host : "";
        st->metadata = meta ? meta : "";
        st->protocol = proto ? proto : "";
        st->device = dev ? dev : "";
        st->master = master ? master : "";
        std::lock_guard lock(stages_mu);
        stages[s] = std::move(st);
    }
    return rc;
}

int mooncake_store_health_check(void *s)
{
    static auto f = fn<int (*)(void *)>("mooncake_store_health_check");
    return f(s);
}

int mooncake_store_batch_put_from(void *s, const char **keys, void **buffers, const size_t *sizes, size_t count,
                                  const void *config, int *results_out)
{
    return api().batch_put_from(s, keys, buffers, sizes, count, config, take_refusal(s) ? nullptr : results_out);
}

int kvblob_mooncake_batch_put_from_reporting_existing(void *s, const char **keys, void **buffers, const size_t *sizes,
                                                      size_t count, const void *config, int *results_out)
{
    static auto f = fn<int (*)(void *, const char **, void **, const size_t *, size_t, const void *, int *)>(
        "kvblob_mooncake_batch_put_from_reporting_existing");
    return f(s, keys, buffers, sizes, count, config, take_refusal(s) ? nullptr : results_out);
}

int mooncake_store_batch_get_into(void *s, const char **keys, void **buffers, const size_t *sizes, size_t count,
                                  int64_t *results_out)
{
    static auto f = fn<int (*)(void *, const char **, void **, const size_t *, size_t, int64_t *)>(
        "mooncake_store_batch_get_into");
    return f(s, keys, buffers, sizes, count, results_out);
}

int mooncake_store_batch_is_exist(void *s, const char **keys, size_t count, int *results_out)
{
    static auto f = fn<int (*)(void *, const char **, size_t, int *)>("mooncake_store_batch_is_exist");
    return f(s, keys, count, results_out);
}

int64_t mooncake_store_get_size(void *s, const char *key) { return api().get_size(s, key); }

int mooncake_store_register_buffer(void *s, void *buffer, size_t size) { return api().register_buffer(s, buffer, size); }

int mooncake_store_unregister_buffer(void *s, void *buffer) { return api().unregister_buffer(s, buffer); }

int mooncake_store_remove(void *s, const char *key, int force) { return api().remove(s, key, force); }

int mooncake_store_get_hostname(void *s, char *buf, size_t len)
{
    static auto f = fn<int (*)(void *, char *, size_t)>("mooncake_store_get_hostname");
    return f ? f(s, buf, len) : -1;
}

// The staging entry the driver looks for (the fake library's name for it).
int mooncake_store_fake_stage(void *s, const char *what, const char *key)
{
    Stages *st = stages_of(s);
    if (!st || !what) return -1;
    const std::string w = what, k = key ? key : "";
    if (w == "foreign_writer") return st->stage_foreign_writer(k);
    if (w == "full_pool") return st->stage_full_pool();
    if (w == "failing_read") return st->stage_failing_read(k);
    if (w == "unprovable") {
        std::lock_guard lock(stages_mu);
        st->refuse_next_put = true;
        return OK;
    }
    if (w == "release") {
        st->release();
        return OK;
    }
    return -1;  // "corrupt", "fail_next_batch": not staged on the real store
}

}  // extern "C"
