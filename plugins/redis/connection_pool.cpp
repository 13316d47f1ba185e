#include "connection_pool.hpp"

namespace kvblob::redis {

namespace {

timeval to_timeval(std::chrono::milliseconds ms)
{
    return {static_cast<time_t>(ms.count() / 1000), static_cast<suseconds_t>((ms.count() % 1000) * 1000)};
}

sigset_t sigpipe_set()
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGPIPE);
    return s;
}

// One command with binary-safe arguments; null (error set) when the
// connection failed.
ReplyPtr run_argv(redisContext *c, const Endpoint &node, const std::vector<std::string> &argv, std::string &error)
{
    std::vector<const char *> args;
    std::vector<size_t> lens;
    for (const auto &a : argv) args.push_back(a.data()), lens.push_back(a.size());
    ReplyPtr r(static_cast<redisReply *>(redisCommandArgv(c, static_cast<int>(args.size()), args.data(), lens.data())));
    if (!r) error = node.text() + ": " + c->errstr;
    return r;
}

}  // namespace

SigpipeGuard::SigpipeGuard()
{
    const sigset_t s = sigpipe_set();
    pthread_sigmask(SIG_BLOCK, &s, &old_);
}

SigpipeGuard::~SigpipeGuard()
{
    if (sigismember(&old_, SIGPIPE)) return;  // blocked already before us
    const sigset_t s = sigpipe_set();
    const timespec zero{0, 0};
    while (sigtimedwait(&s, nullptr, &zero) > 0) {}
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
}

Lease::~Lease()
{
    if (pool_) pool_->give_back(node_, std::move(ctx_));
}

ContextPtr ConnectionPool::connect(const Endpoint &node, std::string &error) const
{
    SigpipeGuard no_sigpipe;
    ContextPtr ctx(redisConnectWithTimeout(node.host.c_str(), node.port, to_timeval(settings_.connect_timeout)));
    if (!ctx || ctx->err) {
        error = "connect " + node.text() + ": " + (ctx ? ctx->errstr : "out of memory");
        return nullptr;
    }
    redisSetTimeout(ctx.get(), to_timeval(settings_.command_timeout));
    // AUTH and SELECT must succeed, or the connection is not used.
    auto run = [&](const std::vector<std::string> &argv) {
        ReplyPtr r = run_argv(ctx.get(), node, argv, error);
        if (r && r->type == REDIS_REPLY_ERROR) error = node.text() + " " + argv[0] + ": " + std::string(r->str, r->len);
        return r && r->type != REDIS_REPLY_ERROR;
    };
    if (!settings_.password.empty()) {
        std::vector<std::string> auth{"AUTH"};
        if (!settings_.username.empty()) auth.push_back(settings_.username);
        auth.push_back(settings_.password);
        if (!run(auth)) return nullptr;
    }
    if (settings_.database != 0 && !run({"SELECT", std::to_string(settings_.database)})) return nullptr;
    return ctx;
}

Lease ConnectionPool::lease(const Endpoint &node, std::string &error)
{
    ContextPtr ctx;
    {
        std::unique_lock lock(mu_);
        Node &n = nodes_[node];
        freed_.wait(lock, [&] { return !n.idle.empty() || n.open < settings_.per_node; });
        if (!n.idle.empty()) {
            ctx = std::move(n.idle.back());
            n.idle.pop_back();
            return Lease(this, node, std::move(ctx));
        }
        ++n.open;  // connects outside the lock
    }
    ctx = connect(node, error);
    if (!ctx) {
        give_back(node, nullptr);
        return {};
    }
    return Lease(this, node, std::move(ctx));
}

void ConnectionPool::give_back(const Endpoint &node, ContextPtr ctx)
{
    {
        std::lock_guard lock(mu_);
        Node &n = nodes_[node];
        if (ctx && !ctx->err) n.idle.push_back(std::move(ctx));
        else --n.open;  // a failed connection is dropped; the next lease reconnects
    }
    freed_.notify_one();
}

ReplyPtr ConnectionPool::command(const Endpoint &node, const std::vector<std::string> &argv, std::string &error)
{
    SigpipeGuard no_sigpipe;
    Lease c = lease(node, error);
    return c ? run_argv(c.get(), node, argv, error) : nullptr;
}

}  // namespace kvblob::redis
