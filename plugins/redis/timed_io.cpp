// First, and in C linkage: hiredis 0.14's sds.h declares none of its own,
// and hiredis.h (through timed_io.hpp) includes it too.
extern "C" {
#include <hiredis/sds.h>
}

#include "timed_io.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>

namespace kvblob::redis {

namespace {

// What a stalled connection says in c->errstr; stalled() looks for it.
constexpr char stall_text[] = "no byte moved within command_timeout_ms";
// A wait is cut in slices this long so that a stop request is seen soon.
constexpr int stop_slice_ms = 50;

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

// After a read that moved no byte (n <= 0): true to read again (EINTR,
// or the socket became readable), false with c->err set (closed, failed,
// or silent past the clock).
bool read_again(redisContext *c, ssize_t n, const StallClock &clock, const std::atomic<bool> *stop)
{
    if (n == 0) {
        fail(c, REDIS_ERR_EOF, "Server closed the connection");
        return false;
    }
    if (errno == EINTR) return true;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
        fail(c, REDIS_ERR_IO, std::strerror(errno));
        return false;
    }
    return wait_for(c, POLLIN, clock, stop);
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
    return send_all(c, std::vector<iovec>{{const_cast<char *>(bytes.data()), bytes.size()}}, clock, stop);
}

bool send_all(redisContext *c, std::vector<iovec> bytes, StallClock &clock, const std::atomic<bool> *stop)
{
    if (c->err) return false;
    size_t at = 0;  // the first iovec not yet sent whole
    const auto skip_empty = [&] {
        while (at < bytes.size() && bytes[at].iov_len == 0) ++at;
    };
    skip_empty();
    while (at < bytes.size()) {
        msghdr m{};
        m.msg_iov = bytes.data() + at;
        m.msg_iovlen = std::min<size_t>(bytes.size() - at, IOV_MAX);
        const ssize_t n = ::sendmsg(c->fd, &m, MSG_NOSIGNAL);
        if (n > 0) {
            clock.moved();
            for (size_t left = static_cast<size_t>(n); left > 0;) {
                const size_t k = std::min(left, bytes[at].iov_len);
                bytes[at].iov_base = static_cast<char *>(bytes[at].iov_base) + k;
                bytes[at].iov_len -= k;
                left -= k;
                if (bytes[at].iov_len == 0) ++at;
            }
            skip_empty();
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

namespace {

// What begins at the reader's position, between replies: nil, a bulk
// string held whole (its length and where its value lies), the beginning
// of either not all read yet (a bulk string's only while its length is at
// most max_cut), or anything else. One parse for take_bulk and
// bulk_pending, so that the two agree on every byte.
struct BulkHead {
    enum { nil, whole, cut_short, other } at = other;
    size_t length = 0;
    const char *value = nullptr;
};

BulkHead read_bulk_head(const redisReader *r, size_t max_cut)
{
    if (r->err || r->ridx != -1 || r->pos >= r->len || r->buf[r->pos] != '$') return {};
    const char *at = r->buf + r->pos + 1, *end = r->buf + r->len;
    const auto here = static_cast<size_t>(end - at);
    if (here > 0 && *at == '-') {  // nil: a get's MISS
        if (std::memcmp(at, "-1\r\n", std::min<size_t>(here, 4)) != 0) return {};
        return {here >= 4 ? BulkHead::nil : BulkHead::cut_short};
    }
    size_t length = 0;
    int digits = 0;
    for (; at < end && *at >= '0' && *at <= '9' && digits < 18; ++at, ++digits) length = length * 10 + (*at - '0');
    // Only a length as hiredis reads one: no sign, no leading zero.
    if (digits > 1 && r->buf[r->pos + 1] == '0') return {};
    const BulkHead cut{length <= max_cut ? BulkHead::cut_short : BulkHead::other};
    if (at == end) return cut;  // the length, cut short
    if (digits == 0 || *at != '\r') return {};
    if (end - at == 1) return cut;  // the CR of the length's CRLF
    if (at[1] != '\n') return {};
    const char *value = at + 2;
    // The value and its CRLF not all here yet: hiredis would wait for them too.
    if (static_cast<size_t>(end - value) < length + 2) return cut;
    if (value[length] != '\r' || value[length + 1] != '\n') return {};
    return {BulkHead::whole, length, value};
}

}  // namespace

std::optional<Bulk> take_bulk(redisReader *r)
{
    const BulkHead head = read_bulk_head(r, 0);
    if (head.at == BulkHead::nil) {
        r->pos += 5;
        return Bulk{{}, true};
    }
    if (head.at != BulkHead::whole) return std::nullopt;
    r->pos = static_cast<size_t>(head.value + head.length + 2 - r->buf);
    return Bulk{std::string_view(head.value, head.length)};
}

bool bulk_pending(const redisReader *r) { return read_bulk_head(r, in_place_max).at == BulkHead::cut_short; }

char *reader_room(redisReader *r, size_t &room)
{
    if (r->pos > 0) {  // hiredis compacts so too, even within a reply
        sdsrange(r->buf, static_cast<int>(r->pos), -1);
        r->pos = 0;
        r->len = sdslen(r->buf);
    }
    const sds grown = sdsMakeRoomFor(r->buf, read_room);
    if (!grown) return nullptr;
    r->buf = grown;
    room = sdsavail(r->buf);
    return r->buf + r->len;
}

void reader_grew(redisReader *r, size_t n)
{
    sdsIncrLen(r->buf, static_cast<int>(n));
    r->len = sdslen(r->buf);
}

namespace {

// Reads what the socket has (up to the reader's free room) into the reader.
// False (c->err set) when the connection failed, stalled or was stopped.
bool read_more(redisContext *c, StallClock &clock, const std::atomic<bool> *stop)
{
    for (;;) {
        size_t room = 0;
        char *into = reader_room(c->reader, room);
        if (!into) {
            fail(c, REDIS_ERR_OOM, "out of memory");
            return false;
        }
        const ssize_t n = ::read(c->fd, into, room);
        if (n > 0) {
            clock.moved();
            reader_grew(c->reader, static_cast<size_t>(n));
            return true;
        }
        if (!read_again(c, n, clock, stop)) return false;
    }
}

Received next_reply(redisContext *c, StallClock &clock, const std::atomic<bool> *stop, bool in_place)
{
    redisReader *r = c->reader;
    for (;;) {
        if (c->err) return {};
        if (in_place) {
            if (auto bulk = take_bulk(r)) return {nullptr, bulk};
        }
        const bool unread = r->pos < r->len || r->ridx != -1;
        if (unread && !(in_place && bulk_pending(r))) {
            void *raw = nullptr;
            if (redisGetReplyFromReader(c, &raw) != REDIS_OK) return {};
            if (raw) return {ReplyPtr(static_cast<redisReply *>(raw)), std::nullopt};
        }
        if (!read_more(c, clock, stop)) return {};
    }
}

}  // namespace

ReplyPtr receive(redisContext *c, StallClock &clock, const std::atomic<bool> *stop)
{
    return std::move(next_reply(c, clock, stop, false).object);
}

Received receive_in_place(redisContext *c, StallClock &clock, const std::atomic<bool> *stop)
{
    return next_reply(c, clock, stop, true);
}

namespace {

// Bytes read into iov in place: every byte the reader holds first, then
// the socket's, under clock. False (c->err set) on failure.
bool read_into(redisContext *c, std::vector<iovec> iov, StallClock &clock, const std::atomic<bool> *stop)
{
    redisReader *r = c->reader;
    size_t at = 0;  // the first iovec not yet full
    auto advance = [&](size_t n) {
        while (n > 0) {
            const size_t k = std::min(n, iov[at].iov_len);
            iov[at].iov_base = static_cast<char *>(iov[at].iov_base) + k;
            iov[at].iov_len -= k;
            n -= k;
            if (iov[at].iov_len == 0) ++at;
        }
        while (at < iov.size() && iov[at].iov_len == 0) ++at;
    };
    advance(0);
    while (at < iov.size() && r->pos < r->len) {
        const size_t k = std::min(iov[at].iov_len, r->len - r->pos);
        std::memcpy(iov[at].iov_base, r->buf + r->pos, k);
        r->pos += k;
        advance(k);
    }
    while (at < iov.size()) {
        if (c->err) return false;
        const int count = static_cast<int>(std::min<size_t>(iov.size() - at, IOV_MAX));
        const ssize_t n = ::readv(c->fd, iov.data() + at, count);
        if (n > 0) {
            clock.moved();
            advance(static_cast<size_t>(n));
            continue;
        }
        if (!read_again(c, n, clock, stop)) return false;
    }
    return true;
}

}  // namespace

BulkInto receive_bulk_into(redisContext *c, const std::vector<iovec> &into, StallClock &clock,
                           const std::atomic<bool> *stop)
{
    redisReader *r = c->reader;
    if (c->err) return BulkInto::failed;
    // Only between replies: a reply hiredis has begun to parse is its own.
    if (r->err || r->ridx != -1) return BulkInto::not_taken;
    size_t length = 0;
    for (const auto &v : into) length += v.iov_len;
    const std::string header = "$" + std::to_string(length) + "\r\n";
    // The header: the reader's bytes first, then exactly as many as are
    // missing from the socket, never into the reader (so a run of direct
    // replies does not grow its buffer). A reply that is not this header
    // is left whole to the reader, the socket's bytes fed after its own.
    char head[32];
    const size_t buffered = std::min(header.size(), r->len - r->pos);
    std::memcpy(head, r->buf + r->pos, buffered);
    if (std::memcmp(head, header.data(), buffered) != 0) return BulkInto::not_taken;
    size_t have = buffered;
    while (have < header.size()) {
        const ssize_t n = ::read(c->fd, head + have, header.size() - have);
        if (n > 0) {
            clock.moved();
            have += static_cast<size_t>(n);
            if (std::memcmp(head + have - n, header.data() + have - n, static_cast<size_t>(n)) != 0) {
                size_t room = 0;
                char *to = reader_room(r, room);
                if (!to) {
                    fail(c, REDIS_ERR_OOM, "out of memory");
                    return BulkInto::failed;
                }
                std::memcpy(to, head + buffered, have - buffered);  // room >= read_room, above 32
                reader_grew(r, have - buffered);
                return BulkInto::not_taken;
            }
            continue;
        }
        if (!read_again(c, n, clock, stop)) return BulkInto::failed;
    }
    r->pos += buffered;
    // The value, then the bulk string's closing CRLF, which must be there.
    char crlf[2];
    std::vector<iovec> iov = into;
    iov.push_back({crlf, sizeof crlf});
    if (!read_into(c, std::move(iov), clock, stop)) return BulkInto::failed;
    if (crlf[0] != '\r' || crlf[1] != '\n') {
        fail(c, REDIS_ERR_PROTOCOL, "a bulk reply did not end where its length said");
        return BulkInto::failed;
    }
    return BulkInto::taken;
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
