// Connections to the Redis nodes: at most `per_node` per node, made on
// first use and checked before use (AUTH, SELECT, PING: a server that
// refuses the login is never taken for a healthy one), and dropped after
// any I/O or protocol error so that the next lease reconnects.
//
// A node that went silent past the timeout (timed_io.hpp) is marked down:
// leases on it fail at once, so later operations do not wait on the same
// hung server again. A prober thread PINGs down nodes in the background
// and puts each back in service as soon as it answers.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "slot_map.hpp"
#include "timed_io.hpp"

namespace kvblob::redis {

struct ConnectSettings {
    std::string username, password;
    // Where the login came from, for messages: the options, or the URL's
    // userinfo (whose password no message repeats either).
    std::string login_source = "options 'username' and 'password'";
    int database = 0;
    std::chrono::milliseconds connect_timeout{2000}, command_timeout{5000};
    unsigned per_node = 2;
};

// Why a connection could not be had.
enum class Failure {
    none,
    unreachable,  // refused or closed: fails fast by itself
    stalled,      // no answer within the timeout: the node is marked down
    refused,      // the server answered the login with an error
    down,         // the node is marked down: not tried
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
    ~ConnectionPool();  // stops the prober
    ConnectionPool(const ConnectionPool &) = delete;
    ConnectionPool &operator=(const ConnectionPool &) = delete;

    // A connection to node, or an empty lease with error (and why) set; at
    // once while node is down.
    Lease lease(const Endpoint &node, std::string &error, Failure *why = nullptr);
    // One command on node, outside any batch (open, scenario hooks, the
    // slot map).
    ReplyPtr command(const Endpoint &node, const std::vector<std::string> &argv, std::string &error,
                     Failure *why = nullptr);
    // Takes node out of service after it went silent: see the file comment.
    void mark_down(const Endpoint &node, const std::string &why);
    std::chrono::milliseconds command_timeout() const { return settings_.command_timeout; }

private:
    friend class Lease;
    void give_back(const Endpoint &node, ContextPtr ctx);
    // A connection that passed the login, or null with error and why set.
    ContextPtr connect(const Endpoint &node, std::string &error, Failure &why) const;
    void probe_down_nodes();

    const ConnectSettings settings_;
    std::mutex mu_;
    std::condition_variable freed_;
    struct Node {
        std::vector<ContextPtr> idle;
        unsigned open = 0;  // leased or idle
        bool down = false;
        std::string why_down;
    };
    std::map<Endpoint, Node> nodes_;

    std::thread prober_;  // started by the first mark_down
    std::condition_variable probe_wake_;
    std::atomic<bool> stopping_{false};
};

}  // namespace kvblob::redis
