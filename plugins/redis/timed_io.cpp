#include "timed_io.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace kvblob::redis {

namespace {

// What a stalled connection says in c->errstr; stalled() looks for it.
constexpr char stall_text[] = "no byte moved within command_timeout_ms";
// A wait is cut in slices this long so that a stop request is seen soon.
constexpr int stop_slice_ms = 50;
// Bytes taken from the socket per read.
constexpr size_t read_chunk = 1 << 20;

void fail(redisContext *c, int err, const char *text)
{
    c->err = err;
    std::snprintf(c->errstr, sizeof c->errstr, "%s", text);
}

// Waits until c's socket is ready for events or the clock runs out; false
// (c->err set) when it ran out or stop was set.
bool wait_for(redisContext *c, short events, const StallClock &clock, const std::atomic<bool> *stop)
{
    for (;;) {
        if (stop && stop->load()) {
            fail(c, REDIS_ERR_OTHER, "stopped");
            return false;
        }
        const int left = clock.left_ms();
        const int slice = stop ? std::min(left, stop_slice_ms) : left;
        pollfd p{c->fd, events, 0};
        const int n = ::poll(&p, 1, slice);
        if (n > 0) return true;  // ready, or an error the next call reports
        if (n < 0 && errno != EINTR) {
            fail(c, REDIS_ERR_IO, std::strerror(errno));
            return false;
        }
        if (n == 0 && left <= slice) {
            char text[128];
            std::snprintf(text, sizeof text, "%s=%lld", stall_text, static_cast<long long>(clock.timeout().count()));
            fail(c, REDIS_ERR_OTHER, text);
            return false;
        }
    }
}

}  // namespace

int StallClock::left_ms() const
{
    const auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - last_);
    return static_cast<int>(std::max<std::chrono::milliseconds::rep>(0, (timeout_ - spent).count()));
}

ContextPtr connect_to(const Endpoint &node, std::chrono::milliseconds timeout, std::string &error, bool &stalled_out,
                      const std::atomic<bool> *stop)
{
    stalled_out = false;
    ContextPtr c(redisConnectNonBlock(node.host.c_str(), node.port));
    if (!c || c->err) {
        error = "connect " + node.text() + ": " + (c ? c->errstr : "out of memory");
        return nullptr;
    }
    StallClock clock(timeout);
    if (!wait_for(c.get(), POLLOUT, clock, stop)) {
        stalled_out = stalled(c.get());
        error = "connect " + node.text() + ": " +
                (stalled_out ? "no answer within connect_timeout_ms=" + std::to_string(timeout.count())
                             : std::string(c->errstr));
        return nullptr;
    }
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    if (err != 0) {
        error = "connect " + node.text() + ": " + std::strerror(err);
        return nullptr;
    }
    c->flags |= REDIS_CONNECTED;
    return c;
}

bool stalled(const redisContext *c)
{
    return c->err == REDIS_ERR_OTHER && std::strncmp(c->errstr, stall_text, sizeof stall_text - 1) == 0;
}

void append_argv(std::string &out, const std::vector<std::string_view> &argv)
{
    out += "*" + std::to_string(argv.size()) + "\r\n";
    for (const auto &a : argv) {
        out += "$" + std::to_string(a.size()) + "\r\n";
        out.append(a.data(), a.size());
        out += "\r\n";
    }
}

bool send_all(redisContext *c, std::string_view bytes, StallClock &clock, const std::atomic<bool> *stop)
{
    if (c->err) return false;
    size_t sent = 0;
    while (sent < bytes.size()) {
        const ssize_t n = ::send(c->fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
        if (n > 0) {
            sent += static_cast<size_t>(n);
            clock.moved();
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
            fail(c, REDIS_ERR_IO, std::strerror(errno));
            return false;
        }
        if (!wait_for(c, POLLOUT, clock, stop)) return false;
    }
    return true;
}

ReplyPtr receive(redisContext *c, StallClock &clock, const std::atomic<bool> *stop)
{
    thread_local std::unique_ptr<char[]> chunk(new char[read_chunk]);
    for (;;) {
        if (c->err) return nullptr;
        void *raw = nullptr;
        if (redisGetReplyFromReader(c, &raw) != REDIS_OK) return nullptr;
        if (raw) return ReplyPtr(static_cast<redisReply *>(raw));
        const ssize_t n = ::read(c->fd, chunk.get(), read_chunk);
        if (n > 0) {
            clock.moved();
            if (redisReaderFeed(c->reader, chunk.get(), static_cast<size_t>(n)) != REDIS_OK) {
                fail(c, REDIS_ERR_PROTOCOL, "reply could not be parsed");
                return nullptr;
            }
            continue;
        }
        if (n == 0) {
            fail(c, REDIS_ERR_EOF, "Server closed the connection");
            return nullptr;
        }
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            fail(c, REDIS_ERR_IO, std::strerror(errno));
            return nullptr;
        }
        if (!wait_for(c, POLLIN, clock, stop)) return nullptr;
    }
}

ReplyPtr round_trip(redisContext *c, const Endpoint &node, const std::vector<std::string> &argv, StallClock &clock,
                    std::string &error, const std::atomic<bool> *stop)
{
    std::string out;
    append_argv(out, std::vector<std::string_view>(argv.begin(), argv.end()));
    ReplyPtr r;
    if (send_all(c, out, clock, stop)) r = receive(c, clock, stop);
    if (!r) error = node.text() + ": " + c->errstr;
    return r;
}

}  // namespace kvblob::redis
