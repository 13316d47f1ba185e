// Connections to the Redis nodes: at most `per_node` per node, connected
// (with AUTH and SELECT) on first use, and dropped after any I/O or
// protocol error so that the next lease reconnects.
#pragma once

#include <hiredis/hiredis.h>

#include <csignal>

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "slot_map.hpp"

namespace kvblob::redis {

struct ContextFree {
    void operator()(redisContext *c) const { redisFree(c); }
};
using ContextPtr = std::unique_ptr<redisContext, ContextFree>;
struct ReplyFree {
    void operator()(redisReply *r) const { freeReplyObject(r); }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyFree>;

// hiredis writes with write(): a write to a connection the server closed
// raises SIGPIPE, whose default action would kill the engine. While one of
// these lives, SIGPIPE is blocked in this thread (the write fails with EPIPE
// instead); a SIGPIPE left pending is consumed before the mask is restored.
class SigpipeGuard {
public:
    SigpipeGuard();
    ~SigpipeGuard();
    SigpipeGuard(const SigpipeGuard &) = delete;
    SigpipeGuard &operator=(const SigpipeGuard &) = delete;

private:
    sigset_t old_;
};

struct ConnectSettings {
    std::string username, password;
    int database = 0;
    std::chrono::milliseconds connect_timeout{2000}, command_timeout{5000};
    unsigned per_node = 2;
};

class ConnectionPool;

// A connection held exclusively until destroyed; given back to the pool
// then, unless it failed.
class Lease {
public:
    Lease() = default;
    Lease(Lease &&o) noexcept : pool_(o.pool_), node_(std::move(o.node_)), ctx_(std::move(o.ctx_)) { o.pool_ = nullptr; }
    Lease &operator=(Lease &&) = delete;
    ~Lease();
    redisContext *get() const { return ctx_.get(); }
    explicit operator bool() const { return static_cast<bool>(ctx_); }
    const Endpoint &node() const { return node_; }

private:
    friend class ConnectionPool;
    Lease(ConnectionPool *pool, Endpoint node, ContextPtr ctx) : pool_(pool), node_(std::move(node)), ctx_(std::move(ctx)) {}
    ConnectionPool *pool_ = nullptr;
    Endpoint node_;
    ContextPtr ctx_;
};

class ConnectionPool {
public:
    explicit ConnectionPool(ConnectSettings settings) : settings_(std::move(settings)) {}
    // A connection to node, or an empty lease with error set.
    Lease lease(const Endpoint &node, std::string &error);
    // One command on node, outside any batch (scenario hooks, the slot map).
    ReplyPtr command(const Endpoint &node, const std::vector<std::string> &argv, std::string &error);

private:
    friend class Lease;
    void give_back(const Endpoint &node, ContextPtr ctx);
    ContextPtr connect(const Endpoint &node, std::string &error) const;

    const ConnectSettings settings_;
    std::mutex mu_;
    std::condition_variable freed_;
    struct Node {
        std::vector<ContextPtr> idle;
        unsigned open = 0;  // leased or idle
    };
    std::map<Endpoint, Node> nodes_;
};

}  // namespace kvblob::redis
