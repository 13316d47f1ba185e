// The Redis driver's replies taken in place (plugins/redis/timed_io.hpp,
// take_bulk, bulk_pending, reader_room and reader_grew, as receive_in_place
// steps them) against hiredis' reader alone: for any bytes a server (or
// anything posing as one) sends, cut into reads anywhere, the driver sees
// the same replies in the same order, a bulk string's bytes exactly, and a
// stream hiredis refuses is refused at the same reply. The first input
// byte seeds where the reads are cut.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "timed_io.hpp"

using namespace kvblob::redis;

namespace {

// A reply, flattened: its type and everything it says, nested replies too.
void describe(const redisReply &r, std::string &out)
{
    out += std::to_string(r.type) + ":";
    switch (r.type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR: out += std::to_string(r.len) + ":" + std::string(r.str, r.len); break;
    case REDIS_REPLY_INTEGER: out += std::to_string(r.integer); break;
    case REDIS_REPLY_ARRAY:
        out += std::to_string(r.elements) + "[";
        for (size_t i = 0; i < r.elements; ++i) describe(*r.element[i], out);
        out += "]";
        break;
    default: break;
    }
    out += ";";
}

struct ReaderFree {
    void operator()(redisReader *r) const { redisReaderFree(r); }
};
using ReaderPtr = std::unique_ptr<redisReader, ReaderFree>;

// What hiredis alone makes of the stream, fed at once; "refused" ends it
// where hiredis stops with an error.
std::vector<std::string> hiredis_alone(const char *stream, size_t n)
{
    std::vector<std::string> replies;
    ReaderPtr r(redisReaderCreate());
    if (n) redisReaderFeed(r.get(), stream, n);
    for (;;) {
        void *raw = nullptr;
        if (redisReaderGetReply(r.get(), &raw) != REDIS_OK) {
            replies.push_back("refused");
            break;
        }
        if (!raw) break;
        std::string d;
        describe(*static_cast<redisReply *>(raw), d);
        freeReplyObject(raw);
        replies.push_back(std::move(d));
    }
    return replies;
}

// The same stream in reads of 1 to 96 bytes, and one in four up to 64 KiB
// (the driver reads up to the reader's free room, 512 KiB or more: many
// whole values at once), stepped as receive_in_place steps it: a bulk
// string held whole taken where it lies, one begun read on before hiredis
// sees it, anything else through hiredis, each read straight into the
// reader's buffer.
std::vector<std::string> in_place(const char *stream, size_t n, uint8_t seed)
{
    std::vector<std::string> replies;
    ReaderPtr r(redisReaderCreate());
    uint32_t state = 0x9E3779B9u ^ seed;
    size_t fed = 0;
    for (;;) {
        if (auto bulk = take_bulk(r.get())) {
            if (bulk->nil) {
                replies.push_back(std::to_string(REDIS_REPLY_NIL) + ":;");
                continue;
            }
            // The bytes lie inside the reader's.
            const std::string_view v = bulk->bytes;
            if (v.data() < r->buf || v.data() + v.size() > r->buf + r->len) __builtin_trap();
            replies.push_back(std::to_string(REDIS_REPLY_STRING) + ":" + std::to_string(v.size()) + ":" +
                              std::string(v) + ";");
            continue;
        }
        const bool unread = r->pos < r->len || r->ridx != -1;
        if (unread && !bulk_pending(r.get())) {
            void *raw = nullptr;
            if (redisReaderGetReply(r.get(), &raw) != REDIS_OK) {
                replies.push_back("refused");
                break;
            }
            if (raw) {
                std::string d;
                describe(*static_cast<redisReply *>(raw), d);
                freeReplyObject(raw);
                replies.push_back(std::move(d));
                continue;
            }
        }
        if (fed == n) break;
        state ^= state << 13, state ^= state >> 17, state ^= state << 5;
        size_t room = 0;
        char *into = reader_room(r.get(), room);
        if (!into || r->pos != 0) __builtin_trap();  // the consumed bytes dropped first
        const size_t cut = std::min<size_t>({n - fed, room, 1 + state % (state % 4 == 0 ? 65536 : 96)});
        std::memcpy(into, stream + fed, cut);
        reader_grew(r.get(), cut);
        fed += cut;
    }
    return replies;
}

// An array header of five digits or more: hiredis 0.14 (Debian 12's)
// allocates the element pointers its count names before it reads one
// element, and has no maxelements to refuse a count; what it does with
// one is hiredis' own, not what this target holds.
bool names_a_huge_array(const char *stream, size_t n)
{
    for (size_t i = 0; i < n; ++i) {
        if (stream[i] != '*') continue;
        size_t digits = 0;
        while (i + 1 + digits < n && stream[i + 1 + digits] >= '0' && stream[i + 1 + digits] <= '9') ++digits;
        if (digits >= 5) return true;
    }
    return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    const char *stream = reinterpret_cast<const char *>(data + 1);
    if (names_a_huge_array(stream, size - 1)) return 0;
    if (hiredis_alone(stream, size - 1) != in_place(stream, size - 1, data[0])) __builtin_trap();
    return 0;
}
