#include "redis_driver.hpp"

#include <kvblob/support/access_bound.hpp>
#include <kvblob/support/crc32c.hpp>
#include <kvblob/support/limits.hpp>
#include <kvblob/support/options.hpp>
#include <kvblob/support/plugin_glue.hpp>
#include <kvblob/support/trailer.hpp>

#include <cctype>
#include <cstring>
#include <optional>
#include <sstream>

#include "percent_decoded.hpp"

namespace kvblob::redis {

using support::trailer_size;

extern const support::OptionTable redis_options;  // plugin.cpp

namespace {

// Rows of one operation go to the servers in rounds of at most this many
// value bytes, so a huge batch does not sit whole in hiredis' buffers.
constexpr uint64_t round_bytes = 64ull << 20;
// Bytes of commands formatted before they are sent.
constexpr size_t send_chunk = 1 << 20;
// Gets of rows at least this large read their value straight into the
// row's memory (receive_get_into): one copy instead of three, for two
// system calls a row. Smaller values are read through hiredis' reader,
// many rows a read.
constexpr uint64_t direct_get_min = 64 << 10;
// Puts of rows at least this large send their value from the row's memory
// (one copy, by the kernel, and a checksum pass) instead of building it
// into the command bytes. Each such row is a system call of its own, while
// built commands go out send_chunk at a time: below 1 MiB the extra copy
// costs less than the calls (32 rows of 64 KiB: 28-35 us a row built, 41-51
// sent from the row; 256 KiB: 89-112 against 114-128; 1 MiB and 4 MiB even).
constexpr uint64_t direct_put_min = 1 << 20;
constexpr int max_redirects = 5;
constexpr uint64_t max_value_bytes = 512ull << 20;

// The URL as it may be shown: a password in its userinfo replaced.
std::string shown_url(const std::string &item)
{
    const auto scheme = item.find("://");
    const size_t from = scheme == std::string::npos ? 0 : scheme + 3;
    const auto at = item.rfind('@');
    if (at == std::string::npos || at < from) return item;
    const auto colon = item.find(':', from);
    if (colon == std::string::npos || colon > at) return item;  // a user name alone
    return item.substr(0, colon + 1) + "<redacted>" + item.substr(at);
}

// The servers of option 'url', and the login its userinfo gives
// (redis://[USER[:PASSWORD]@]HOST:PORT, percent-encoded): the same for every
// seed, or given once. No message repeats a password (shown_url).
std::vector<Endpoint> parse_urls(const std::string &text, std::optional<std::string> &user,
                                 std::optional<std::string> &password)
{
    std::vector<Endpoint> out;
    std::stringstream in(text);
    std::string item;
    while (std::getline(in, item, ',')) {
        const std::string shown = shown_url(item);
        std::string rest = item;
        if (rest.rfind("redis://", 0) == 0) rest = rest.substr(8);
        while (!rest.empty() && rest.back() == '/') rest.pop_back();
        if (const auto at = rest.rfind('@'); at != std::string::npos) {
            const std::string userinfo = rest.substr(0, at);
            rest = rest.substr(at + 1);
            const auto colon = userinfo.find(':');
            std::optional<std::string> u = percent_decoded(userinfo.substr(0, colon)), p;
            if (u->empty()) u.reset();
            if (colon != std::string::npos) p = percent_decoded(userinfo.substr(colon + 1));
            if ((user && u != user) || (password && p != password) || (!out.empty() && (!user != !u || !password != !p)))
                throw support::OptionError("option 'url': '" + shown + "' gives another login than the seed before it");
            user = u, password = p;
        } else if (user || password) {
            throw support::OptionError("option 'url': '" + shown + "' gives no login where the seed before it did");
        }
        const auto colon = rest.rfind(':');
        Endpoint e{rest.substr(0, colon), 6379};
        if (colon != std::string::npos) {
            try {
                size_t used = 0;
                e.port = std::stoi(rest.substr(colon + 1), &used);
                if (used != rest.size() - colon - 1) throw std::invalid_argument(shown);
            } catch (const std::exception &) {
                throw support::OptionError("option 'url': '" + shown + "' is not redis://[USER:PASSWORD@]HOST:PORT");
            }
        }
        if (e.host.empty() || e.port <= 0 || e.port > 65535)
            throw support::OptionError("option 'url': '" + shown + "' is not redis://[USER:PASSWORD@]HOST:PORT");
        out.push_back(e);
    }
    if (out.empty()) throw support::OptionError("option 'url' names no server");
    return out;
}

std::string error_text(const redisReply &r) { return std::string(r.str, r.len); }
bool starts_with(const redisReply &r, const char *prefix)
{
    const size_t n = std::strlen(prefix);
    return r.len >= n && std::memcmp(r.str, prefix, n) == 0;
}

// SET key value NX in RESP: what comes before the value, and after it.
void append_put_head(std::string &out, const std::string &key, const support::Row &row)
{
    out += "*4\r\n$3\r\nSET\r\n$" + std::to_string(key.size()) + "\r\n" + key + "\r\n$" +
           std::to_string(row.total + trailer_size) + "\r\n";
}
constexpr char put_tail[] = "\r\n$2\r\nNX\r\n";

// Appends SET key value NX with the value built in place: the spans are
// copied once, their checksum computed in the same pass, straight into the
// bytes that go to the socket.
void append_put(std::string &out, const std::string &key, const support::Row &row)
{
    append_put_head(out, key, row);
    const size_t at = out.size();
    out.resize(at + row.total + trailer_size + sizeof put_tail - 1);
    auto *dst = reinterpret_cast<uint8_t *>(out.data() + at);
    uint32_t crc = 0;
    for (const auto &s : row.spans) {
        crc = support::crc32c_copy(crc, dst, s.data, s.length);
        dst += s.length;
    }
    support::write_trailer(dst, support::trailer_v1, row.key, row.total, crc);
    std::memcpy(dst + trailer_size, put_tail, sizeof put_tail - 1);
}

// A large put's value is sent from the row's own memory: its checksum is
// a read pass, and the kernel's copy into the socket is the only one.
// The trailer and the command's tail go in tail_bytes.
uint32_t put_checksum(const support::Row &row)
{
    uint32_t crc = 0;
    for (const auto &s : row.spans) crc = support::crc32c(crc, s.data, s.length);
    return crc;
}

bool contains(const redisReply &r, const char *text)
{
    return std::string_view(r.str, r.len).find(text) != std::string_view::npos;
}

}  // namespace

std::unique_ptr<RedisDriver> RedisDriver::open(const kvblob_open_args_t &args, kvblob_caps_t &caps)
{
    support::ParsedOptions o(redis_options, args);
    Settings s;
    std::optional<std::string> url_user, url_password;
    s.seeds = parse_urls(o.text("url"), url_user, url_password);
    s.prefix = o.text("prefix");
    ConnectSettings c;
    c.username = o.text("username");
    c.password = o.text("password");
    // A login in the URL's userinfo, unless the options give one: both at
    // once must agree (neither is repeated in the message).
    if (url_user && !c.username.empty() && *url_user != c.username)
        throw support::OptionError("option 'url' names another user than option 'username'");
    if (url_password && !c.password.empty() && *url_password != c.password)
        throw support::OptionError("option 'url' gives another password than option 'password'");
    if (url_user) c.username = *url_user;
    if (url_password) c.password = *url_password;
    if (url_user || url_password) c.login_source = "the userinfo of option 'url'";
    else if (c.username.empty()) c.login_source = "option 'password'";
    const int64_t db = o.integer("database");
    if (db < 0) throw support::OptionError("option 'database' must not be negative");
    c.database = static_cast<int>(db);
    c.connect_timeout = std::chrono::milliseconds(support::positive(o, "connect_timeout_ms"));
    c.command_timeout = std::chrono::milliseconds(support::positive(o, "command_timeout_ms"));
    c.per_node = static_cast<unsigned>(support::positive(o, "connections"));
    const unsigned workers = support::worker_count(o);
    caps.flags = KVBLOB_CAP_ABSENT_IS_MISS | KVBLOB_CAP_PROBE | KVBLOB_CAP_REMOVE;
    support::apply_limits(o, caps);
    // run() ends an operation's access before its results are final: R-ACC-2's bound is 0.
    support::declare_access_bound(args, caps, std::chrono::nanoseconds(0));
    // Redis strings hold at most 512 MiB (proto-max-bulk-len's default),
    // trailer included.
    if (caps.max_object_bytes > max_value_bytes - trailer_size)
        throw support::OptionError("option 'max_object_bytes' must be at most " +
                                   std::to_string(max_value_bytes - trailer_size) +
                                   " (a Redis string's 512 MiB, less the trailer)");

    // The first seed that answers says what the store is. A login it
    // refuses refuses the open, in the server's words; of the answers to
    // CLUSTER SLOTS, only "cluster support disabled" means one server.
    const std::string mode = o.text("cluster");
    ConnectionPool probe_pool(c);
    std::string error;
    std::optional<SlotMap> slots;
    for (const auto &seed : s.seeds) {
        Failure failure = Failure::none;
        const std::vector<std::string> ask =
            mode == "off" ? std::vector<std::string>{"PING"} : std::vector<std::string>{"CLUSTER", "SLOTS"};
        ReplyPtr r = probe_pool.command(seed, ask, error, &failure);
        if (failure == Failure::refused) throw support::OpenError(KVBLOB_E_STORE, error);
        if (!r) continue;  // unreachable: the next seed
        if (mode == "off") {
            slots = SlotMap::single(seed);
            break;
        }
        if (r->type == REDIS_REPLY_ERROR) {
            if (!contains(*r, "cluster support disabled"))
                throw support::OpenError(KVBLOB_E_STORE, seed.text() + " CLUSTER SLOTS: " + error_text(*r));
            error = seed.text() + " is not a Redis Cluster node";
            if (mode == "on") continue;
            slots = SlotMap::single(seed);
            break;
        }
        if ((slots = SlotMap::from_reply(*r))) {
            s.cluster = true;
            break;
        }
        error = seed.text() + ": CLUSTER SLOTS answered something that is not a slot map";
    }
    if (!slots)
        throw support::OpenError(KVBLOB_E_STORE, (mode == "on" ? "no seed answered as a Redis Cluster: "
                                                               : "no Redis server answered: ") + error);
    return std::unique_ptr<RedisDriver>(
        new RedisDriver(caps, args.host, std::move(s), c, std::move(*slots), workers));
}

RedisDriver::RedisDriver(const kvblob_caps_t &caps, const kvblob_host_services_t *host, Settings settings,
                         ConnectSettings connect, SlotMap slots, unsigned workers)
    : QueuedDriver(caps, host), settings_(std::move(settings)), pool_(std::move(connect)),
      slots_(std::make_shared<const SlotMap>(std::move(slots)))
{
    // Workers sleep as soon as they run out of operations. An operation
    // waits on the server for 100 us or more, so the wake that the next
    // one costs is small; a worker that watched the queue after finishing
    // an operation held a core that the caller waiting for that
    // operation's answer (and about to submit the next) needed: where
    // other work shares the cores, puts of 32 rows of 4 KiB took 3 to 4
    // times as long (docs/performance.md, Redis driver).
    start_workers("kvblob-redis", workers, false, std::chrono::microseconds(0));
}

RedisDriver::~RedisDriver()
{
    stop();
    restore_server();  // leaves the servers as they were
}

std::shared_ptr<const SlotMap> RedisDriver::slots() const
{
    std::lock_guard lock(slots_mu_);
    return slots_;
}

void RedisDriver::refresh_slots()
{
    if (!settings_.cluster) return;
    std::vector<Endpoint> ask = slots()->masters();
    ask.insert(ask.end(), settings_.seeds.begin(), settings_.seeds.end());
    for (const auto &node : ask) {
        std::string error;
        ReplyPtr r = pool_.command(node, {"CLUSTER", "SLOTS"}, error);
        if (!r || r->type == REDIS_REPLY_ERROR) continue;
        if (auto map = SlotMap::from_reply(*r)) {
            std::lock_guard lock(slots_mu_);
            slots_ = std::make_shared<const SlotMap>(std::move(*map));
            return;
        }
    }
    log(KVBLOB_LOG_WARN, "could not refresh the cluster's slot map from any node");
}

// ---- execution ------------------------------------------------------------

void RedisDriver::run(Op &op)
{
    std::vector<size_t> chunk;
    uint64_t bytes = 0;
    for (size_t i = 0; i < op.rows.size(); ++i) {
        if (!begin_row(op, i)) continue;  // cancelled before it started
        chunk.push_back(i);
        bytes += op.rows[i].total;
        if (bytes >= round_bytes) {
            execute(op, std::exchange(chunk, {}));
            bytes = 0;
        }
    }
    if (!chunk.empty()) execute(op, std::move(chunk));
    end_access(op);
    finish(op);  // the last touch: op may be released from here on
}

void RedisDriver::append_command(std::string &out, const Op &op, size_t i, bool asking) const
{
    const auto &row = op.rows[i];
    const std::string key = redis_key(row.key);
    if (asking) append_argv(out, {"ASKING"});
    switch (op.kind) {
    case OpKind::put: append_put(out, key, row); break;
    case OpKind::get: append_argv(out, {"GET", key}); break;
    case OpKind::probe: append_argv(out, {"EXISTS", key}); break;
    case OpKind::remove: append_argv(out, {"DEL", key}); break;
    }
}

// Faults rows[from..] with one reason: what a node that failed leaves.
void RedisDriver::fail_rows(Op &op, const std::vector<size_t> &rows, size_t from, int32_t code, const std::string &why)
{
    for (size_t k = from; k < rows.size(); ++k) set_row(op, rows[k], KVBLOB_ROW_FAULT, code, why);
}

// Route: each row to the node that serves it (the one an ASK named, else
// its hash slot's master); a row no master serves is a FAULT.
std::map<Endpoint, std::vector<size_t>> RedisDriver::route(Op &op, const std::vector<size_t> &rows,
                                                           const std::map<size_t, Endpoint> &asking)
{
    const auto map = slots();
    std::map<Endpoint, std::vector<size_t>> by_node;
    // One server: every row is its, no key's slot is computed.
    if (const Endpoint *only = map->sole_owner(); only && asking.empty()) {
        if (!rows.empty()) by_node.emplace(*only, rows);
        return by_node;
    }
    for (size_t i : rows) {
        if (auto ask = asking.find(i); ask != asking.end()) {
            by_node[ask->second].push_back(i);
            continue;
        }
        const uint16_t slot = hash_slot(redis_key(op.rows[i].key));
        if (const Endpoint *owner = map->owner(slot)) by_node[*owner].push_back(i);
        else set_row(op, i, KVBLOB_ROW_FAULT, 0, "no master serves hash slot " + std::to_string(slot));
    }
    return by_node;
}

// Send: one node's commands. The bytes go out whenever they pass
// send_chunk (and at least one row at a time): a round never sits whole in
// memory, and a hung node is found out after one chunk, not after
// formatting a whole round. Empty, its rows failed, when the node cannot
// be reached or stops taking bytes.
std::optional<RedisDriver::Part> RedisDriver::send_part(Op &op, const Endpoint &node, std::vector<size_t> node_rows,
                                                        const std::map<size_t, Endpoint> &asking)
{
    // Kept by the thread so that large values do not fault in fresh pages
    // on every operation.
    thread_local std::string out;
    std::string error;
    Lease conn = pool_.lease(node, error);
    if (!conn) {
        fail_rows(op, node_rows, 0, 0, error);
        return std::nullopt;
    }
    StallClock clock(pool_.command_timeout());
    // The clock counts the node's silence, not our formatting.
    auto flush = [&] {
        clock.moved();
        const bool sent = send_all(conn.get(), out, clock);
        out.clear();
        return sent;
    };
    // A large put goes out from the row's memory, after what is gathered
    // before it (direct_put_min).
    auto send_direct_put = [&](size_t i) {
        const auto &row = op.rows[i];
        if (asking.count(i)) append_argv(out, {"ASKING"});
        append_put_head(out, redis_key(row.key), row);
        uint8_t tail[trailer_size + sizeof put_tail - 1];
        support::write_trailer(tail, support::trailer_v1, row.key, row.total, put_checksum(row));
        std::memcpy(tail + trailer_size, put_tail, sizeof put_tail - 1);
        std::vector<iovec> iov{{out.data(), out.size()}};
        for (const auto &sp : row.spans) iov.push_back({sp.data, sp.length});
        iov.push_back({tail, sizeof tail});
        clock.moved();
        const bool sent = send_all(conn.get(), std::move(iov), clock);
        out.clear();
        return sent;
    };
    out.clear();
    bool sent = true;
    for (size_t k = 0; k < node_rows.size() && sent; ++k) {
        const size_t i = node_rows[k];
        if (op.kind == OpKind::put && op.rows[i].total >= direct_put_min) {
            sent = send_direct_put(i);
            continue;
        }
        append_command(out, op, i, asking.count(i) > 0);
        if (out.size() >= send_chunk || k + 1 == node_rows.size()) sent = flush();
    }
    if (sent && !out.empty()) sent = flush();
    if (!sent) {
        const std::string why = "redis " + node.text() + ": " + conn.get()->errstr;
        if (stalled(conn.get())) pool_.mark_down(node, why);
        fail_rows(op, node_rows, 0, conn.get()->err, why);
        return std::nullopt;
    }
    return Part{std::move(conn), std::move(node_rows), clock};
}

// Read: one node's replies, row by row. A redirection (MOVED, ASK,
// TRYAGAIN) puts the row into the next round; a connection gone or a node
// silent past its clock fails this row and the rest of the node's rows
// (never READY, R-ROW-6).
void RedisDriver::read_part(Op &op, Part &part, const std::map<size_t, Endpoint> &asking, Redirected &next)
{
    redisContext *c = part.conn.get();
    const auto fail_rest = [&](size_t k) {
        const std::string why = "redis " + part.conn.node().text() + ": " + c->errstr;
        if (stalled(c)) pool_.mark_down(part.conn.node(), why);
        fail_rows(op, part.rows, k, c->err, why);
    };
    for (size_t k = 0; k < part.rows.size(); ++k) {
        const size_t i = part.rows[k];
        if (asking.count(i)) receive(c, part.clock);  // +OK of ASKING
        if (op.kind == OpKind::get && op.rows[i].total >= direct_get_min) {
            if (auto out = receive_get_into(c, part.clock, op.rows[i])) {
                set_row(op, i, out->result, out->code, std::move(out->message));
                continue;
            }
            if (c->err) return fail_rest(k);
        }
        // A get's value is checked and copied out where it lies in the
        // reader's buffer.
        Received got = op.kind == OpKind::get ? receive_in_place(c, part.clock)
                                              : Received{receive(c, part.clock), std::nullopt};
        if (got.bulk) {
            Outcome out = got.bulk->nil ? Outcome{KVBLOB_ROW_MISS, 0, {}} : verify_get(op.rows[i], got.bulk->bytes);
            set_row(op, i, out.result, out.code, std::move(out.message));
            continue;
        }
        ReplyPtr reply = std::move(got.object);
        if (!reply) return fail_rest(k);
        if (redirect(*reply, i, next)) continue;
        Outcome out = interpret(op, i, *reply);
        set_row(op, i, out.result, out.code, std::move(out.message));
    }
}

// Redirect: whether reply sends row i to another round, noted in next.
bool RedisDriver::redirect(const redisReply &reply, size_t i, Redirected &next)
{
    if (reply.type != REDIS_REPLY_ERROR ||
        !(starts_with(reply, "MOVED ") || starts_with(reply, "ASK ") || starts_with(reply, "TRYAGAIN")))
        return false;
    if (starts_with(reply, "ASK ")) {
        if (auto target = redirect_target(error_text(reply))) next.asking[i] = *target;
    } else {
        next.moved = next.moved || starts_with(reply, "MOVED ");
    }
    next.rows.push_back(i);
    return true;
}

void RedisDriver::execute(Op &op, std::vector<size_t> rows)
{
    std::map<size_t, Endpoint> asking;  // rows redirected by ASK, to their node
    for (int round = 0; round <= max_redirects && !rows.empty(); ++round) {
        // Every node's commands go out before any reply is read, so the
        // nodes work on their parts of the batch at the same time. Each
        // part has its own clock: silence past command_timeout_ms on one
        // node fails that node's rows and marks it down (connection_pool.hpp),
        // and the other nodes' rows are read on.
        std::vector<Part> parts;
        for (auto &[node, node_rows] : route(op, rows, asking))
            if (auto part = send_part(op, node, std::move(node_rows), asking)) parts.push_back(std::move(*part));
        Redirected next;
        for (auto &part : parts) read_part(op, part, asking, next);
        if (next.moved) refresh_slots();
        rows = std::move(next.rows);
        asking = std::move(next.asking);
    }
    for (size_t i : rows)
        set_row(op, i, KVBLOB_ROW_FAULT, 0, "still redirected after " + std::to_string(max_redirects) + " rounds");
}

RedisDriver::Outcome RedisDriver::interpret(const Op &op, size_t i, const redisReply &reply) const
{
    if (reply.type == REDIS_REPLY_ERROR) {
        if (op.kind == OpKind::put && starts_with(reply, "OOM"))
            return {KVBLOB_ROW_DECLINED, 0, error_text(reply)};  // maxmemory reached under noeviction
        return {KVBLOB_ROW_FAULT, 0, error_text(reply)};
    }
    switch (op.kind) {
    case OpKind::put:
        if (reply.type == REDIS_REPLY_STATUS) return {KVBLOB_ROW_READY, 0, {}};
        if (reply.type == REDIS_REPLY_NIL) return {KVBLOB_ROW_READY, 0, "already stored; left as it was"};
        break;
    case OpKind::get:
        if (reply.type == REDIS_REPLY_NIL) return {KVBLOB_ROW_MISS, 0, {}};
        if (reply.type == REDIS_REPLY_STRING) return verify_get(op.rows[i], {reply.str, reply.len});
        break;
    case OpKind::probe:
    case OpKind::remove:
        if (reply.type == REDIS_REPLY_INTEGER) return {reply.integer > 0 ? KVBLOB_ROW_READY : KVBLOB_ROW_MISS, 0, {}};
        break;
    }
    return {KVBLOB_ROW_FAULT, 0, "unexpected reply type " + std::to_string(reply.type)};
}

std::optional<RedisDriver::Outcome> RedisDriver::receive_get_into(redisContext *c, StallClock &clock,
                                                                  const support::Row &row) const
{
    std::vector<iovec> into;
    into.reserve(row.spans.size() + 1);
    for (const auto &s : row.spans) into.push_back({s.data, s.length});
    uint8_t trailer[trailer_size];
    into.push_back({trailer, trailer_size});
    if (receive_bulk_into(c, into, clock) != BulkInto::taken) return std::nullopt;
    uint64_t payload = 0;
    uint32_t recorded = 0;
    const auto fault = support::check_trailer_bytes(trailer, row.total + trailer_size, row.key, payload, recorded);
    if (fault != support::TrailerFault::none)
        return Outcome{KVBLOB_ROW_FAULT, static_cast<int32_t>(fault), support::to_string(fault)};
    if (payload != row.total)
        return Outcome{KVBLOB_ROW_FAULT, 100,
                       "stored object is " + std::to_string(payload) + " bytes; the row's spans hold " +
                           std::to_string(row.total)};
    // The checksum over the bytes as they landed, before READY (R-ROW-6).
    uint32_t crc = 0;
    for (const auto &s : row.spans) crc = support::crc32c(crc, s.data, s.length);
    if (crc != recorded)
        return Outcome{KVBLOB_ROW_FAULT, static_cast<int32_t>(support::TrailerFault::bad_checksum),
                       support::to_string(support::TrailerFault::bad_checksum)};
    return Outcome{KVBLOB_ROW_READY, 0, {}};
}

RedisDriver::Outcome RedisDriver::verify_get(const support::Row &row, std::string_view stored) const
{
    const auto *value = reinterpret_cast<const uint8_t *>(stored.data());
    const uint64_t size = stored.size();
    uint64_t payload = 0;
    uint32_t recorded = 0;
    auto fault = support::check_trailer(value, size, row.key, payload, recorded);
    if (fault != support::TrailerFault::none)
        return {KVBLOB_ROW_FAULT, static_cast<int32_t>(fault), support::to_string(fault)};
    if (payload != row.total)  // R-ROW-5: refused before writing a byte
        return {KVBLOB_ROW_FAULT, 100,
                "stored object is " + std::to_string(payload) + " bytes; the row's spans hold " +
                    std::to_string(row.total)};
    uint32_t crc = 0;
    for (const auto &s : row.spans) {
        crc = support::crc32c_copy(crc, s.data, value, s.length);
        value += s.length;
    }
    if (crc != recorded)  // R-ROW-6
        return {KVBLOB_ROW_FAULT, static_cast<int32_t>(support::TrailerFault::bad_checksum),
                support::to_string(support::TrailerFault::bad_checksum)};
    return {KVBLOB_ROW_READY, 0, {}};
}

// ---- scenario hooks -------------------------------------------------------------

ReplyPtr RedisDriver::command_for(const std::string &key, const std::vector<std::string> &argv, std::string &error)
{
    const Endpoint *owner = slots()->owner(hash_slot(key));
    if (!owner) return nullptr;
    ReplyPtr r = pool_.command(*owner, argv, error);
    if (r && r->type == REDIS_REPLY_ERROR && starts_with(*r, "MOVED ")) {
        refresh_slots();
        if ((owner = slots()->owner(hash_slot(key)))) r = pool_.command(*owner, argv, error);
    }
    return r;
}

kvblob_status RedisDriver::stage_full_pool()
{
    // maxmemory 1 byte under noeviction: every write is refused with OOM,
    // on every master, until release_staged restores the settings.
    std::lock_guard lock(hooks_mu_);
    for (const auto &node : slots()->masters()) {
        std::string error;
        auto max = pool_.command(node, {"CONFIG", "GET", "maxmemory"}, error);
        auto policy = pool_.command(node, {"CONFIG", "GET", "maxmemory-policy"}, error);
        if (!max || !policy || max->type != REDIS_REPLY_ARRAY || max->elements != 2 ||
            policy->type != REDIS_REPLY_ARRAY || policy->elements != 2)
            return KVBLOB_E_STORE;
        if (!saved_memory_policy_.count(node))
            saved_memory_policy_[node] = {max->element[1]->str, policy->element[1]->str};
        auto a = pool_.command(node, {"CONFIG", "SET", "maxmemory-policy", "noeviction"}, error);
        auto b = pool_.command(node, {"CONFIG", "SET", "maxmemory", "1"}, error);
        if (!a || !b || a->type == REDIS_REPLY_ERROR || b->type == REDIS_REPLY_ERROR) return KVBLOB_E_STORE;
    }
    return KVBLOB_OK;
}

kvblob_status RedisDriver::stage_failing_read(const std::string &key)
{
    // The key holds a hash for now: GET fails with the server's WRONGTYPE
    // error. The object that was there is kept (DUMP) and restored.
    const std::string k = redis_key(key);
    std::string error;
    auto dump = command_for(k, {"DUMP", k}, error);
    if (!dump || dump->type == REDIS_REPLY_ERROR) return KVBLOB_E_STORE;
    std::optional<std::string> saved;
    if (dump->type == REDIS_REPLY_STRING) saved = std::string(dump->str, dump->len);
    auto del = command_for(k, {"DEL", k}, error);
    auto hset = command_for(k, {"HSET", k, "kvblob-staged", "failing read"}, error);
    if (!del || !hset || hset->type == REDIS_REPLY_ERROR) return KVBLOB_E_STORE;
    std::lock_guard lock(hooks_mu_);
    blocked_keys_.emplace(k, std::move(saved));
    return KVBLOB_OK;
}

kvblob_status RedisDriver::stage_corrupt(const std::string &key)
{
    const std::string k = redis_key(key);
    std::string error;
    auto byte = command_for(k, {"GETRANGE", k, "0", "0"}, error);
    if (!byte || byte->type != REDIS_REPLY_STRING || byte->len != 1) return KVBLOB_E_INVALID;
    const std::string flipped(1, static_cast<char>(byte->str[0] ^ 0x5a));
    auto set = command_for(k, {"SETRANGE", k, "0", flipped}, error);
    return set && set->type == REDIS_REPLY_INTEGER ? KVBLOB_OK : KVBLOB_E_STORE;
}

kvblob_status RedisDriver::release_staged()
{
    const kvblob_status status = restore_server();
    release_held_gets();
    return status;
}

kvblob_status RedisDriver::restore_server()
{
    kvblob_status status = KVBLOB_OK;
    {
        std::lock_guard lock(hooks_mu_);
        for (const auto &[node, saved] : saved_memory_policy_) {
            std::string error;
            auto a = pool_.command(node, {"CONFIG", "SET", "maxmemory", saved.first}, error);
            auto b = pool_.command(node, {"CONFIG", "SET", "maxmemory-policy", saved.second}, error);
            if (!a || !b) status = KVBLOB_E_STORE;
        }
        saved_memory_policy_.clear();
        for (const auto &[k, saved] : blocked_keys_) {
            std::string error;
            command_for(k, {"DEL", k}, error);
            if (saved) command_for(k, {"RESTORE", k, "0", *saved}, error);
        }
        blocked_keys_.clear();
    }
    return status;
}

}  // namespace kvblob::redis
