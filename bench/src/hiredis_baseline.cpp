// Raw hiredis to the Redis driver's server: a batch is one pipeline of SET
// (put), GET (get) or EXISTS (probe) commands with binary-safe arguments,
// its replies read in order. No checksum, no trailer, no atomic-publish
// logic: what the Redis driver adds to these is what its ratio shows. One
// node only: a cluster baseline would have to route keys itself.
#include <hiredis/hiredis.h>

#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "baseline.hpp"
#include "lane_memory.hpp"
#include "percent_decoded.hpp"
#include "kvblob/host/batch.hpp"
#include "kvblob/tools/fill_pattern.hpp"

namespace kvblob::bench {

namespace {

using Clock = std::chrono::steady_clock;

struct ContextDeleter {
    void operator()(redisContext *c) const { redisFree(c); }
};
struct ReplyDeleter {
    void operator()(redisReply *r) const { freeReplyObject(r); }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

// The driver's own login (options username, password and database, or the
// URL's userinfo), so the baseline reaches a server that requires one.
struct Login {
    std::string user, password;
    std::string database = "0";
};

// AUTH and SELECT as the driver sends them; the error never repeats the
// password.
void log_in(redisContext *ctx, const Login &login)
{
    const auto command = [&](std::vector<std::string> argv, const std::string &label) {
        std::vector<const char *> args;
        std::vector<size_t> lengths;
        for (const auto &a : argv) args.push_back(a.data()), lengths.push_back(a.size());
        ReplyPtr reply(static_cast<redisReply *>(
            redisCommandArgv(ctx, static_cast<int>(args.size()), args.data(), lengths.data())));
        if (!reply || reply->type == REDIS_REPLY_ERROR)
            throw std::runtime_error("hiredis baseline: " + label + " refused" +
                                     (reply ? std::string(": ") + std::string(reply->str, reply->len) : std::string()));
    };
    if (!login.password.empty()) {
        std::vector<std::string> auth{"AUTH"};
        if (!login.user.empty()) auth.push_back(login.user);
        auth.push_back(login.password);
        command(auth, "AUTH");
    }
    if (login.database != "0") command({"SELECT", login.database}, "SELECT " + login.database);
}

class HiredisLane : public Lane {
public:
    HiredisLane(const Point &p, const std::string &host, int port, const Login &login, unsigned lane)
        : p_(p), buf_(p.size * p.batch)
    {
        ctx_.reset(redisConnect(host.c_str(), port));
        if (!ctx_ || ctx_->err)
            throw std::runtime_error("hiredis baseline: cannot connect to " + host + ":" + std::to_string(port) +
                                     (ctx_ ? std::string(": ") + ctx_->errstr : std::string()));
        log_in(ctx_.get(), login);
        fill_pattern(buf_.data(), buf_.size(), lane + 1);
        for (uint64_t r = 0; r < p.batch; ++r)
            keys_.push_back("kvblob-bench-baseline/" + std::to_string(::getpid()) + "/" + std::to_string(lane) + "/" +
                            std::to_string(r));
    }
    void prepare() override
    {
        if (p_.op != BenchOp::put && pipeline(BenchOp::put).errors) throw std::runtime_error("cannot SET the rows to read");
    }
    Sample step() override { return pipeline(p_.op); }
    void between() override
    {
        if (p_.op == BenchOp::put) remove_keys();
    }
    ~HiredisLane() override { remove_keys(); }

private:
    void remove_keys()
    {
        for (const auto &k : keys_) redisAppendCommand(ctx_.get(), "DEL %b", k.data(), k.size());
        for (size_t i = 0; i < keys_.size(); ++i) {
            void *reply = nullptr;
            if (redisGetReply(ctx_.get(), &reply) == REDIS_OK) freeReplyObject(reply);
        }
    }
    Sample pipeline(BenchOp op)
    {
        Sample s;
        const auto t0 = Clock::now();
        for (uint64_t r = 0; r < p_.batch; ++r) {
            const auto &k = keys_[r];
            switch (op) {
            case BenchOp::put:
                redisAppendCommand(ctx_.get(), "SET %b %b", k.data(), k.size(), buf_.data() + r * p_.size, p_.size);
                break;
            case BenchOp::get: redisAppendCommand(ctx_.get(), "GET %b", k.data(), k.size()); break;
            case BenchOp::probe: redisAppendCommand(ctx_.get(), "EXISTS %b", k.data(), k.size()); break;
            }
        }
        for (uint64_t r = 0; r < p_.batch; ++r) {
            void *raw = nullptr;
            if (redisGetReply(ctx_.get(), &raw) != REDIS_OK) {
                s.errors += p_.batch - r;
                s.error = ctx_->errstr;
                break;
            }
            ReplyPtr reply(static_cast<redisReply *>(raw));
            bool ok = false;
            if (op == BenchOp::get && reply->type == REDIS_REPLY_STRING && reply->len == p_.size) {
                // The value lands in the caller's buffer, as a driver's must.
                std::memcpy(buf_.data() + r * p_.size, reply->str, p_.size);
                ok = true;
            }
            if (op == BenchOp::put) ok = reply->type == REDIS_REPLY_STATUS;
            if (op == BenchOp::probe) ok = reply->type == REDIS_REPLY_INTEGER && reply->integer == 1;
            if (ok) {
                ++s.rows;
                if (op != BenchOp::probe) s.bytes += p_.size;
            } else if (!s.errors++) {
                s.error = reply->type == REDIS_REPLY_ERROR ? reply->str : "unexpected reply";
            }
        }
        s.complete = Clock::now() - t0;
        return s;
    }

    const Point p_;
    std::unique_ptr<redisContext, ContextDeleter> ctx_;
    HostBuffer buf_;  // page-aligned, as the driver lane's (lane_memory.hpp)
    std::vector<std::string> keys_;
};

}  // namespace

std::optional<Baseline> hiredis_baseline(const Options &options, std::string &why_none)
{
    std::vector<std::string> urls;
    for (const auto &[k, v] : options)
        if (k == "url") urls.push_back(v);
    const std::string url = urls.empty() ? "redis://127.0.0.1:6379" : urls.front();
    const std::string prefix = "redis://";
    Login login;
    std::string authority = url.rfind(prefix, 0) == 0 ? url.substr(prefix.size()) : std::string();
    if (const auto at = authority.rfind('@'); at != std::string::npos) {
        const std::string userinfo = authority.substr(0, at);
        authority = authority.substr(at + 1);
        const auto colon = userinfo.find(':');
        login.user = kvblob::redis::percent_decoded(userinfo.substr(0, colon));
        if (colon != std::string::npos) login.password = kvblob::redis::percent_decoded(userinfo.substr(colon + 1));
    }
    while (!authority.empty() && authority.back() == '/') authority.pop_back();
    const auto colon = authority.rfind(':');
    if (url.rfind(prefix, 0) != 0 || colon == std::string::npos || colon == 0) {
        why_none = "the hiredis baseline cannot read option 'url' (not redis://[USER:PASSWORD@]HOST:PORT)";
        return std::nullopt;
    }
    const std::string host = authority.substr(0, colon);
    const int port = std::atoi(authority.c_str() + colon + 1);
    // The options win over the URL, as in the driver.
    for (const auto &[k, v] : options) {
        if (k == "username" && !v.empty()) login.user = v;
        if (k == "password" && !v.empty()) login.password = v;
        if (k == "database") login.database = v;
    }
    for (const auto &[k, v] : options)
        if (k == "cluster" && v == "on") {
            why_none = "the hiredis baseline speaks to one node, not a cluster";
            return std::nullopt;
        }
    return Baseline{"hiredis", [](BenchOp) { return true; },
                    [host, port, login](const Point &p, unsigned lane) {
                        return std::make_unique<HiredisLane>(p, host, port, login, lane);
                    }};
}

}  // namespace kvblob::bench
