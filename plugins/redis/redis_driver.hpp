// The Redis driver: objects as Redis strings (payload, then the TLBK
// trailer with its CRC32C), on one server or a Redis Cluster.
//
// A put is SET key value NX: atomic for readers (R-CON-2), and a key that
// exists is left as it is and READY (R-ROW-7); OOM under maxmemory with
// noeviction is DECLINED. A get is GET, verified against the trailer before
// READY (R-ROW-6). Rows are pipelined per node; in a cluster, keys are
// routed by hash slot, a batch is split per master and sent to all of them
// before any reply is read, and MOVED (refreshing the slot map) and ASK are
// followed.
//
// Copies: a put of 64 KiB or more sends its value from the spans
// themselves (checksummed in a read pass; the kernel's copy into the socket
// is the only one); a smaller one is built once, fused with its checksum
// pass, into the RESP bytes sent with its neighbours. A get of 64 KiB or more reads its
// value from the socket straight into the spans (timed_io.hpp's
// receive_bulk_into), then checksums it in place before READY; a smaller
// one is copied out of hiredis' reply, fused with the checksum.
//
// A hung server: every wait on a node is bounded by command_timeout_ms of
// silence (timed_io.hpp), and a node found silent is marked down so that
// later rows and operations fail at once until it answers again
// (connection_pool.hpp). Rows on a hung server are final within
// command_timeout_ms plus the time to fail the rest of the batch.
#pragma once

#include <kvblob/support/queued_driver.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "connection_pool.hpp"
#include "slot_map.hpp"

namespace kvblob::redis {

using support::Op;
using support::OpKind;

class RedisDriver : public support::QueuedDriver {
public:
    static std::unique_ptr<RedisDriver> open(const kvblob_open_args_t &args, kvblob_caps_t &caps);
    ~RedisDriver() override;

    // kvblob.scenarios/1: what a Redis server can stage.
    kvblob_status stage_full_pool();
    kvblob_status stage_failing_read(const std::string &key);
    kvblob_status stage_corrupt(const std::string &key);
    kvblob_status release_staged();

protected:
    void run(Op &op) override;

private:
    struct Settings {
        std::vector<Endpoint> seeds;
        bool cluster = false;
        std::string prefix;
    };
    RedisDriver(const kvblob_caps_t &caps, const kvblob_host_services_t *host, Settings settings,
                ConnectSettings connect, SlotMap slots, unsigned workers);

    using Outcome = support::RowOutcome;
    // Runs rows of op to their results, following redirections: each round
    // routes the rows to their nodes, sends every node's commands, then
    // reads every node's replies (redis_driver.cpp).
    void execute(Op &op, std::vector<size_t> rows);
    // One node's rows of a round, sent and waiting for their replies.
    struct Part {
        Lease conn;
        std::vector<size_t> rows;
        StallClock clock;
    };
    // What a round's replies send to the next round.
    struct Redirected {
        std::vector<size_t> rows;
        std::map<size_t, Endpoint> asking;  // rows an ASK sent to a node
        bool moved = false;                 // a MOVED: the slot map is stale
    };
    std::map<Endpoint, std::vector<size_t>> route(Op &op, const std::vector<size_t> &rows,
                                                  const std::map<size_t, Endpoint> &asking);
    std::optional<Part> send_part(Op &op, const Endpoint &node, std::vector<size_t> node_rows,
                                  const std::map<size_t, Endpoint> &asking);
    void read_part(Op &op, Part &part, const std::map<size_t, Endpoint> &asking, Redirected &next);
    static bool redirect(const redisReply &reply, size_t i, Redirected &next);
    void fail_rows(Op &op, const std::vector<size_t> &rows, size_t from, int32_t code, const std::string &why);
    // Appends row's command (after ASKING when asking) to out.
    void append_command(std::string &out, const Op &op, size_t row, bool asking) const;
    Outcome interpret(const Op &op, size_t row, const redisReply &reply) const;
    // A stored value (payload and trailer) checked against row and copied
    // into its spans.
    Outcome verify_get(const support::Row &row, std::string_view stored) const;
    // A get's reply read into row's spans and verified, when it is the
    // value of row's size; nullopt otherwise (read it with receive(), or,
    // with c->err set, the connection failed).
    std::optional<Outcome> receive_get_into(redisContext *c, StallClock &clock, const support::Row &row) const;

    std::string redis_key(const std::string &key) const { return settings_.prefix + key; }
    std::shared_ptr<const SlotMap> slots() const;
    void refresh_slots();
    // One command on the node serving key (scenario hooks).
    ReplyPtr command_for(const std::string &redis_key, const std::vector<std::string> &argv, std::string &error);

    // Undoes the staging on the servers (memory settings, blocked keys).
    kvblob_status restore_server();

    const Settings settings_;
    mutable ConnectionPool pool_;
    mutable std::mutex slots_mu_;
    std::shared_ptr<const SlotMap> slots_;

    // Staged scenarios, under hooks_mu_.
    std::mutex hooks_mu_;
    std::map<Endpoint, std::pair<std::string, std::string>> saved_memory_policy_;  // maxmemory, policy
    std::map<std::string, std::optional<std::string>> blocked_keys_;  // redis key -> DUMP of what was there
};

}  // namespace kvblob::redis
