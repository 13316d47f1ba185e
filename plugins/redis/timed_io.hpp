// I/O on a hiredis connection bounded by command_timeout_ms of silence.
//
// hiredis' own timeouts are per system call (SO_SNDTIMEO, SO_RCVTIMEO): a
// write that moves a few bytes and then blocks starts the clock again, so
// a hung server held a large batch for a multiple of the timeout. Here the
// socket is non-blocking and every wait is a poll() for the time left on a
// StallClock, which only a byte moved re-arms: a server that stops
// answering is found out within the timeout, whatever the size of what was
// being sent or read. Commands are sent from the caller's buffer (no copy
// into hiredis' output buffer); replies are parsed by hiredis' reader.
#pragma once

#include <hiredis/hiredis.h>
#include <sys/uio.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
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

class StallClock {
public:
    using Clock = std::chrono::steady_clock;
    explicit StallClock(std::chrono::milliseconds timeout) : timeout_(timeout), last_(Clock::now()) {}
    void moved() { last_ = Clock::now(); }
    // Milliseconds left before the other side counts as hung (0 at least).
    int left_ms() const;
    std::chrono::milliseconds timeout() const { return timeout_; }

private:
    std::chrono::milliseconds timeout_;
    Clock::time_point last_;
};

// Connects to node within timeout (a non-blocking connect and a poll);
// null with error set on failure, stalled_out telling a timeout from a
// refusal. Only the functions below may be used on the context.
ContextPtr connect_to(const Endpoint &node, std::chrono::milliseconds timeout, std::string &error, bool &stalled_out,
                      const std::atomic<bool> *stop = nullptr);

// Whether c failed because the other side went silent past its StallClock
// (as opposed to refusing or closing the connection).
bool stalled(const redisContext *c);

// Appends one command, RESP-formatted, to out.
void append_argv(std::string &out, const std::vector<std::string_view> &argv);

// Sends bytes on c. False when the connection failed or stalled: c->err and
// c->errstr say which. stop, when given, ends a wait early (as a failure)
// once set.
bool send_all(redisContext *c, std::string_view bytes, StallClock &clock, const std::atomic<bool> *stop = nullptr);
// The same for bytes in several places, sent in their order, without
// gathering them first.
bool send_all(redisContext *c, std::vector<iovec> bytes, StallClock &clock, const std::atomic<bool> *stop = nullptr);

// The next reply on c, or null when the connection failed or stalled (c->err
// set).
ReplyPtr receive(redisContext *c, StallClock &clock, const std::atomic<bool> *stop = nullptr);

// A reply taken where it lies in hiredis' reader buffer: a bulk string's
// bytes (valid until the next call on the connection), or nil.
struct Bulk {
    std::string_view bytes;
    bool nil = false;
};

// The next reply on c as receive() gives it, except that a bulk string
// hiredis' reader holds whole, or nil, is not made a reply object: bulk
// says what it is, its bytes where they lie in the reader's buffer. Through
// hiredis, each small value of a pipelined batch was copied into a reply
// object, and every byte read after it (and after each nil) moved to the
// buffer's front (the reader compacts once it has consumed 1 KiB): a get
// of 32 rows of 4 KiB spent 18% of its time in that move. Neither is set
// when the connection failed or stalled (c->err set).
struct Received {
    ReplyPtr object;
    std::optional<Bulk> bulk;
    explicit operator bool() const { return object || bulk; }
};
Received receive_in_place(redisContext *c, StallClock &clock, const std::atomic<bool> *stop = nullptr);

// receive_in_place's steps on hiredis' reader (tests/fuzz holds them to
// hiredis' own parse). take_bulk: a bulk string the reader holds whole, or
// nil, between replies, the reader moved past it; anything else (another
// type, a reply not all here yet, a length that is not plain digits) is
// left to hiredis, which reports what is wrong. bulk_pending: the reader's
// unread bytes, between replies, are the beginning of what take_bulk will
// take once more bytes arrive (a bulk string of at most in_place_max
// bytes, or nil), so more are read before hiredis begins a reply: through
// hiredis, a value that straddled two reads was copied into a reply object
// and every byte read after it moved to the buffer's front.
// reader_room / reader_grew: a read straight into the reader's buffer (no
// copy through a buffer of the caller's and redisReaderFeed): room drops
// the consumed bytes first (moving only the unread ones, at most a reply
// begun) and keeps at least read_room bytes free; grew counts n bytes read
// into it. The buffer stays allocated with the connection (about 1 MiB).
constexpr size_t in_place_max = 512 << 10;
constexpr size_t read_room = 512 << 10;
std::optional<Bulk> take_bulk(redisReader *r);
bool bulk_pending(const redisReader *r);
// Where to read into, and how many bytes fit; null when out of memory.
char *reader_room(redisReader *r, size_t &room);
void reader_grew(redisReader *r, size_t n);

// The next reply on c read straight into the caller's memory, when it is a
// bulk string of exactly the sum of into's lengths: the bytes hiredis'
// reader holds already are copied, the rest is read from the socket into
// place, so a large value is copied once, by the kernel, instead of into
// the reader, into a reply object and then out of it. not_taken when the
// reply is anything else (nothing of it is taken and into is untouched:
// receive() reads it next); failed when the connection failed or stalled
// (c->err set; into may hold part of the value).
enum class BulkInto { taken, not_taken, failed };
BulkInto receive_bulk_into(redisContext *c, const std::vector<iovec> &into, StallClock &clock,
                           const std::atomic<bool> *stop = nullptr);

// One command sent and answered under clock; null (error set, naming node)
// when the connection failed.
ReplyPtr round_trip(redisContext *c, const Endpoint &node, const std::vector<std::string> &argv, StallClock &clock,
                    std::string &error, const std::atomic<bool> *stop = nullptr);

}  // namespace kvblob::redis
