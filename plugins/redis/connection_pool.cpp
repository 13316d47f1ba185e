#include "connection_pool.hpp"

#include <kvblob/support/thread_name.hpp>

#include <cstring>

namespace kvblob::redis {

namespace {

// How long the prober rests between two rounds over the down nodes.
constexpr std::chrono::milliseconds probe_interval{200};

std::string reply_text(const redisReply &r) { return std::string(r.str, r.len); }

}  // namespace

Lease::~Lease()
{
    if (pool_) pool_->give_back(node_, std::move(ctx_));
}

ConnectionPool::~ConnectionPool()
{
    {
        std::lock_guard lock(mu_);
        stopping_ = true;
    }
    probe_wake_.notify_all();
    if (prober_.joinable()) prober_.join();
}

ContextPtr ConnectionPool::connect(const Endpoint &node, std::string &error, Failure &why) const
{
    bool stalled_connect = false;
    ContextPtr ctx = connect_to(node, settings_.connect_timeout, error, stalled_connect, &stopping_);
    if (!ctx) {
        why = stalled_connect ? Failure::stalled : Failure::unreachable;
        return nullptr;
    }
    // The login: each step must succeed, and a PING proves the server
    // serves this client (NOAUTH, a wrong database, a disabled user all
    // show here, at open, not as FAULT rows later). Never a password in a
    // message: only the server's words and option names.
    StallClock clock(settings_.command_timeout);
    auto step = [&](const std::vector<std::string> &argv, const std::string &label) {
        ReplyPtr r = round_trip(ctx.get(), node, argv, clock, error, &stopping_);
        if (!r) {
            why = stalled(ctx.get()) ? Failure::stalled : Failure::unreachable;
            return false;
        }
        if (r->type == REDIS_REPLY_ERROR) {
            why = Failure::refused;
            error = node.text() + " refused the login at " + label + ": " + reply_text(*r);
            if (reply_text(*r).rfind("NOAUTH", 0) == 0 && settings_.password.empty())
                error += " (option 'password' is not set)";
            return false;
        }
        return true;
    };
    if (!settings_.password.empty()) {
        std::vector<std::string> auth{"AUTH"};
        if (!settings_.username.empty()) auth.push_back(settings_.username);
        auth.push_back(settings_.password);
        const std::string label = settings_.username.empty()
                                      ? "AUTH (" + settings_.login_source + ")"
                                      : "AUTH as user '" + settings_.username + "' (" + settings_.login_source + ")";
        if (!step(auth, label)) return nullptr;
    }
    if (settings_.database != 0 &&
        !step({"SELECT", std::to_string(settings_.database)}, "SELECT (option 'database')"))
        return nullptr;
    if (!step({"PING"}, "PING")) return nullptr;
    why = Failure::none;
    return ctx;
}

Lease ConnectionPool::lease(const Endpoint &node, std::string &error, Failure *why)
{
    Failure failure = Failure::none;
    ContextPtr ctx;
    {
        std::unique_lock lock(mu_);
        Node &n = nodes_[node];
        freed_.wait(lock, [&] { return n.down || !n.idle.empty() || n.open < settings_.per_node; });
        if (n.down) {
            error = node.text() + " is taken as down (" + n.why_down +
                    "); not tried again until it answers a PING";
            if (why) *why = Failure::down;
            return {};
        }
        if (!n.idle.empty()) {
            ctx = std::move(n.idle.back());
            n.idle.pop_back();
            return Lease(this, node, std::move(ctx));
        }
        ++n.open;  // connects outside the lock
    }
    ctx = connect(node, error, failure);
    if (why) *why = failure;
    if (!ctx) {
        give_back(node, nullptr);
        if (failure == Failure::stalled) mark_down(node, error);
        return {};
    }
    return Lease(this, node, std::move(ctx));
}

void ConnectionPool::give_back(const Endpoint &node, ContextPtr ctx)
{
    {
        std::lock_guard lock(mu_);
        Node &n = nodes_[node];
        if (ctx && !ctx->err && !n.down) n.idle.push_back(std::move(ctx));
        else --n.open;  // a failed connection is dropped; the next lease reconnects
    }
    freed_.notify_one();
}

ReplyPtr ConnectionPool::command(const Endpoint &node, const std::vector<std::string> &argv, std::string &error,
                                 Failure *why)
{
    Lease c = lease(node, error, why);
    if (!c) return nullptr;
    StallClock clock(settings_.command_timeout);
    ReplyPtr r = round_trip(c.get(), node, argv, clock, error);
    if (!r && stalled(c.get())) mark_down(node, error);
    return r;
}

void ConnectionPool::mark_down(const Endpoint &node, const std::string &why)
{
    {
        std::lock_guard lock(mu_);
        Node &n = nodes_[node];
        if (!n.down) {
            n.down = true;
            n.why_down = why;
            // Idle connections to it are as hung as it is.
            n.open -= static_cast<unsigned>(n.idle.size());
            n.idle.clear();
        }
        if (!prober_.joinable() && !stopping_) {
            prober_ = std::thread([this] { probe_down_nodes(); });
            support::name_thread(prober_, "kvblob-prober");
        }
    }
    freed_.notify_all();  // waiters for a connection to it fail at once
    probe_wake_.notify_all();
}

void ConnectionPool::probe_down_nodes()
{
    std::unique_lock lock(mu_);
    while (!stopping_) {
        std::vector<Endpoint> down;
        for (const auto &[node, n] : nodes_)
            if (n.down) down.push_back(node);
        if (down.empty()) {
            probe_wake_.wait(lock);
            continue;
        }
        lock.unlock();
        for (const auto &node : down) {
            std::string error;
            Failure failure = Failure::none;
            // A connection that passes the login, PING included, is an
            // answer; it is dropped, the next lease makes its own.
            if (!connect(node, error, failure)) continue;
            std::lock_guard relock(mu_);
            nodes_[node].down = false;
        }
        lock.lock();
        probe_wake_.wait_for(lock, probe_interval, [&] { return stopping_.load(); });
    }
}

}  // namespace kvblob::redis
