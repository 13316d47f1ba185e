// The Mooncake store driver: Mooncake's distributed KV-cache pool through
// its C API (store_c.h), loaded from libmooncake_store.so at open.
//
// Registered HOST regions are registered with the store too, so puts and
// gets move bytes straight between the engine's memory and the pool (zero
// copy; one span per row, since Mooncake moves one buffer per key). The
// batch calls are synchronous; worker threads make operations complete in
// the background. Every store answer becomes a row result in answers.cpp,
// and so does a call that failed as a whole: a results array the library
// did not write is never read as an answer (each slot starts as
// kUnwritten).
//
// Objects carry no kvblob trailer (that would cost the zero copy): R-ROW-6
// rests on the store's guarantees (README.md in this folder says which).
#pragma once

#include <kvblob/support/queued_driver.hpp>

#include <chrono>
#include <map>
#include <mutex>
#include <memory>
#include <string>
#include <vector>

#include "answers.hpp"
#include "own_leases.hpp"
#include "store_api.hpp"
#include "writing_keys.hpp"

namespace kvblob::mooncake {

using support::Op;
using support::OpKind;

class MooncakeDriver : public support::QueuedDriver {
public:
    static std::unique_ptr<MooncakeDriver> open(const kvblob_open_args_t &args, kvblob_caps_t &caps);
    ~MooncakeDriver() override;

    // kvblob.scenarios/1. Held gets are staged inside the driver
    // (QueuedDriver), on any library. The rest only where the library
    // offers mooncake_store_fake_stage: the fake in tests/fakes/mooncake,
    // and tests/mooncake/staging_shim.cpp, which stages them on the real
    // store with a second client and peer processes; Mooncake's own library
    // offers none. No corruption is staged: this Mooncake version keeps no
    // checksum, so a store that answered one would not be the store this
    // driver speaks to.
    const kvblob_scenarios_t *scenarios_offered() const;
    kvblob_status stage_foreign_writer(const std::string &key) { return stage("foreign_writer", key); }
    kvblob_status stage_full_pool() { return stage("full_pool", {}); }
    kvblob_status stage_failing_read(const std::string &key) { return stage("failing_read", key); }
    kvblob_status stage_unprovable(const std::string &key) { return stage("unprovable", key); }
    kvblob_status release_staged();

protected:
    void run(Op &op) override;
    kvblob_status store_register(support::Region &region, std::string &why) override;
    void store_unregister(support::Region &region) override;

private:
    MooncakeDriver(const kvblob_caps_t &caps, const kvblob_host_services_t *host,
                   std::unique_ptr<StoreLibrary> library, mooncake_store_t store, unsigned replicas,
                   std::string prefix, unsigned workers, std::chrono::milliseconds lease_wait,
                   std::chrono::milliseconds lease_ttl);

    // One batch call's arguments: keys as C strings, and the rows' single
    // spans (none for probe and remove).
    struct BatchArgs {
        std::vector<std::string> keys;
        std::vector<const char *> key_ptrs;
        std::vector<void *> buffers;
        std::vector<size_t> sizes;
    };
    BatchArgs batch_args(const Op &op, const std::vector<size_t> &rows) const;

    void put(Op &op, const std::vector<size_t> &rows);
    // The answers of a put's rows whose keys existed (indexes into rows).
    void answer_existing(Op &op, const std::vector<size_t> &rows, const BatchArgs &a,
                         const std::vector<size_t> &existed);
    void get(Op &op, const std::vector<size_t> &rows);
    void probe(Op &op, const std::vector<size_t> &rows);
    void remove(Op &op, const std::vector<size_t> &rows);
    // Sets row to answer (code: the store's, kept as the row's code when it
    // is one); an unprovable answer marks the operation so before
    // end_access.
    void set_answer(Op &op, size_t row, Answer answer, int64_t code);
    // The store's key for a kvblob key: Mooncake keys are C strings, so a
    // key with a byte outside printable ASCII is stored hex-encoded; the
    // two forms are told apart by their first two characters.
    std::string store_key(const std::string &key) const;
    kvblob_status stage(const char *what, const std::string &key);

    std::unique_ptr<StoreLibrary> library_;
    const StoreApi &api_;
    mooncake_store_t store_;
    const unsigned replicas_;
    const std::string prefix_;
    const std::chrono::milliseconds lease_wait_;
    // The leases this driver's own gets and probes took (remove waits them
    // out), and the keys its puts are writing.
    OwnLeases own_leases_;
    WritingKeys writing_;
    // The ranges registered with the store (base -> size).
    std::mutex registered_mu_;
    std::map<uintptr_t, size_t> registered_;
};

}  // namespace kvblob::mooncake
