#include "file_driver.hpp"

#include <kvblob/support/access_bound.hpp>
#include <kvblob/support/crc32c.hpp>
#include <kvblob/support/device_copy.hpp>
#include <kvblob/support/span_copy.hpp>
#include <kvblob/support/limits.hpp>
#include <kvblob/support/options.hpp>
#include <kvblob/support/plugin_glue.hpp>
#include <kvblob/support/trailer.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>

#include "posix_io.hpp"
#include "reservation.hpp"

namespace kvblob::file {

using support::trailer_size;

extern const support::OptionTable file_options;  // plugin.cpp

namespace {

constexpr uint64_t direct_alignment = 4096;
// Rows under this size are read whole into the thread's staging buffer,
// with one byte to spare, so that the read's count is the object's size
// and no fstat is needed (about 210 ns a row here, 15% of a 4 KiB get);
// copying them on into the spans, fused with the checksum, costs less than
// that up to about 16 KiB.
constexpr uint64_t staged_get_max = 16384;

uint64_t round_up(uint64_t n, uint64_t to) { return (n + to - 1) / to * to; }

// The aligned staging buffer of direct I/O, one per worker thread.
class AlignedBuffer {
public:
    ~AlignedBuffer() { std::free(data_); }
    uint8_t *ensure(size_t n)
    {
        if (n > capacity_) {
            std::free(data_);
            data_ = nullptr;
            capacity_ = 0;
            void *p = nullptr;
            if (::posix_memalign(&p, direct_alignment, n) != 0) return nullptr;
            data_ = static_cast<uint8_t *>(p);
            capacity_ = n;
        }
        return data_;
    }

private:
    uint8_t *data_ = nullptr;
    size_t capacity_ = 0;
};
thread_local AlignedBuffer bounce;

IovecList iovecs_of(const support::Row &row, uint8_t *trailer)
{
    IovecList iov;
    for (const auto &s : row.spans) iov.push_back({s.data, s.length});
    iov.push_back({trailer, trailer_size});
    return iov;
}

// Reads up to n bytes from offset 0, stopping at the end of the file; the
// count read, or -errno.
int64_t read_until_end(int fd, uint8_t *buf, uint64_t n)
{
    uint64_t done = 0;
    while (done < n) {
        ssize_t got = ::pread(fd, buf + done, n - done, static_cast<off_t>(done));
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) return -errno;
        if (got == 0) break;
        done += static_cast<uint64_t>(got);
    }
    return static_cast<int64_t>(done);
}

// Device spans cannot be handed to pwritev/preadv: such rows go through the
// staging buffer, like direct I/O.
bool has_device_span(const support::Row &row)
{
    for (const auto &s : row.spans)
        if (s.device) return true;
    return false;
}

// Sums the objects already under root, for the quota.
uint64_t stored_bytes(const std::string &root)
{
    uint64_t total = 0;
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(root, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
        if (it->is_regular_file(ec) && it->path().extension() == object_suffix) total += it->file_size(ec);
    }
    return total;
}

// A row's step, with an exception turned into the row's FAULT.
template <class Step>
support::RowOutcome guarded(Step &&step)
{
    try {
        return step();
    } catch (const std::exception &e) {
        return {KVBLOB_ROW_FAULT, 0, std::string("driver error: ") + e.what()};
    }
}

std::string strip_trailing_slashes(std::string path)
{
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    return path;
}

support::RowOutcome trailer_fault_of(support::TrailerFault f, const ObjectPaths &p)
{
    return {KVBLOB_ROW_FAULT, static_cast<int32_t>(f), std::string(support::to_string(f)) + " (" + p.object + ")"};
}

// Copies a staged object's payload into row's spans, host or device, its
// checksum computed on the way into crc; the FAULT when device memory
// cannot be written.
std::optional<support::RowOutcome> copy_out(const support::Row &row, const uint8_t *src, uint32_t &crc)
{
    for (const auto &s : row.spans) {
        std::string device_error;
        if (!support::copy_to_span(crc, s, src, device_error))
            return support::RowOutcome{KVBLOB_ROW_FAULT, EIO, "writing the row's device memory: " + device_error};
        src += s.length;
    }
    return std::nullopt;
}

// A small row read through the staging buffer, with one byte to spare, so
// that the read's count is the object's size; nullopt where the object is
// not a whole one of the row's size (get's sized reading then says what it
// is, having written nothing of the row).
std::optional<support::RowOutcome> get_staged(int fd, const support::Row &row, const ObjectPaths &p)
{
    const uint64_t whole = row.total + trailer_size;
    uint8_t *buf = bounce.ensure(whole + 1);
    if (!buf) return std::nullopt;
    ssize_t got = -1;
    do got = ::pread(fd, buf, whole + 1, 0);
    while (got < 0 && errno == EINTR);
    // A regular file's read stops short only at its end: exactly whole
    // bytes is an object of the row's size. Anything else, a read error
    // included, is left to the sized reading, which has not written a byte
    // of the row (R-ROW-5).
    if (got != static_cast<ssize_t>(whole)) return std::nullopt;
    uint64_t payload = 0;
    uint32_t recorded = 0;
    if (support::check_trailer_bytes(buf + row.total, whole, row.key, payload, recorded, &p.digest) !=
            support::TrailerFault::none ||
        payload != row.total)
        return std::nullopt;
    uint32_t crc = 0;
    if (auto fault = copy_out(row, buf, crc)) return fault;
    // R-ROW-6: bytes that fail their checksum are never READY.
    if (crc != recorded) return trailer_fault_of(support::TrailerFault::bad_checksum, p);
    return support::RowOutcome{KVBLOB_ROW_READY, 0, {}};
}

}  // namespace

std::unique_ptr<FileDriver> FileDriver::open(const kvblob_open_args_t &args, kvblob_caps_t &caps)
{
    support::ParsedOptions o(file_options, args);
    Settings s;
    s.root = strip_trailing_slashes(o.text("root"));
    if (s.root.empty())
        throw support::OptionError("option 'root' is required: the directory objects are stored under");
    struct stat st {};
    if (::stat(s.root.c_str(), &st) != 0)
        throw support::OptionError("option 'root': " + errno_text("stat", s.root, errno));
    if (!S_ISDIR(st.st_mode)) throw support::OptionError("option 'root': " + s.root + " is not a directory");
    if (::access(s.root.c_str(), W_OK | X_OK) != 0)
        throw support::OptionError("option 'root': " + errno_text("access", s.root, errno));
    // A put publishes its file by descriptor: through /proc where linkat
    // may not take the descriptor itself (link_open_file, posix_io.hpp).
    if (::access("/proc/self/fd", X_OK) != 0)
        throw support::OpenError(KVBLOB_E_UNSUPPORTED,
                                 "the file driver needs /proc/self/fd to publish objects: " +
                                     errno_text("access", "/proc/self/fd", errno));
    s.capacity = o.bytes("capacity");
    const std::string &sync = o.text("fsync");
    s.sync = sync == "full" ? Sync::full : sync == "data" ? Sync::data : Sync::none;
    s.direct = o.flag("direct");
    s.waiter_runs = o.flag("waiter_runs");
    const int64_t fanout = o.integer("fanout");
    if (fanout < 0 || fanout > 4) throw support::OptionError("option 'fanout' must be between 0 and 4");
    s.fanout = static_cast<unsigned>(fanout);
    s.reservation_expiry = std::chrono::milliseconds(support::positive(o, "reservation_expiry_ms"));
    s.close_reports = close_may_report(s.root);
    const unsigned workers = support::worker_count(o);
    caps.flags = KVBLOB_CAP_ABSENT_IS_MISS | KVBLOB_CAP_PROBE | KVBLOB_CAP_REMOVE;
    if (support::cuda_device_present()) caps.flags |= KVBLOB_CAP_DEVICE_MEMORY;  // staged, see has_device_span
    support::apply_limits(o, caps);
    // run() ends an operation's access before its results are final: R-ACC-2's bound is 0.
    support::declare_access_bound(args, caps, std::chrono::nanoseconds(0));
    return std::unique_ptr<FileDriver>(new FileDriver(caps, args.host, std::move(s), workers));
}

FileDriver::FileDriver(const kvblob_caps_t &caps, const kvblob_host_services_t *host, Settings settings,
                       unsigned workers)
    : QueuedDriver(caps, host), settings_(std::move(settings))
{
    if (settings_.capacity) used_ = stored_bytes(settings_.root);
    // The polls that wait for an operation may run its rows: through the
    // page cache that is bounded local work. Not with direct I/O or an
    // fsync, where a row waits for the disk (poll never blocks) and puts
    // are grouped for one journal commit (run_puts), nor with direct's
    // staging buffer, one per worker thread.
    start_workers("kvblob-file", workers, settings_.waiter_runs && !settings_.direct && settings_.sync == Sync::none);
}

FileDriver::~FileDriver()
{
    stop();
    // Leaves no staged reservation or blocked object behind for the next
    // driver on this root. No operation is in flight here (R-CLS-1).
    release_staged();
}

// ---- execution ------------------------------------------------------------

void FileDriver::run(Op &op)
{
    if (op.kind == OpKind::put) {
        run_puts(op);
        return;
    }
    for (size_t i = 0; i < op.rows.size(); ++i) run_row(op, i);
    end_access(op);
    finish(op);  // the last touch: op may be released from here on
}

// One row alone: a put is written, flushed and published by itself, which
// is what a group does where sync is none (the only setting whose rows are
// shared: no fsync to gather into one journal commit).
void FileDriver::run_row(Op &op, size_t i)
{
    if (!begin_row(op, i)) return;  // cancelled before it started
    const Row &row = op.rows[i];
    Outcome out = guarded([&]() -> Outcome {
        switch (op.kind) {
        case OpKind::put: return put(row);
        case OpKind::get: return get(row);
        case OpKind::probe: return probe(row);
        case OpKind::remove: return remove(row);
        }
        return {KVBLOB_ROW_FAULT, 0, "driver error: unknown operation"};
    });
    set_row(op, i, out.result, out.code, std::move(out.message));
}

FileDriver::Outcome FileDriver::put(const Row &row)
{
    std::optional<StagedPut> staged;
    Outcome out = stage_put(row, staged);
    if (!staged) return out;
    if (const int err = make_durable(*staged)) return not_durable(*staged, err);
    return publish_put(*staged);
}

FileDriver::Outcome FileDriver::absent(const ObjectPaths &p) const
{
    if (reservation_active(p.reservation(), settings_.reservation_expiry))
        return {KVBLOB_ROW_NOT_READY, 0, "another writer holds this key (" + p.reservation() + ")"};
    return {KVBLOB_ROW_MISS, 0, {}};
}

// Puts go in groups of up to put_group rows: every row's object is
// written, then all of them are made durable, then published, then each
// directory they were published in is made durable once. A journaling
// filesystem (ext4, XFS) commits what a group wrote in one journal commit,
// where one put at a time cost two commits a row. Each object is durable
// before its name is published, and its name before it is READY.
void FileDriver::run_puts(Op &op)
{
    constexpr size_t put_group = 64;
    for (size_t first = 0; first < op.rows.size(); first += put_group) {
        const size_t n = std::min(put_group, op.rows.size() - first);
        std::vector<bool> started(n, false);
        std::vector<Outcome> out(n, Outcome{KVBLOB_ROW_FAULT, 0, {}});
        std::vector<std::optional<StagedPut>> staged(n);
        for (size_t k = 0; k < n; ++k) {
            if (!begin_row(op, first + k)) continue;  // cancelled before it started
            started[k] = true;
            out[k] = guarded([&] { return stage_put(op.rows[first + k], staged[k]); });
        }
        for (size_t k = 0; k < n; ++k) {
            if (!staged[k]) continue;
            if (const int err = make_durable(*staged[k])) {
                out[k] = not_durable(*staged[k], err);
                staged[k].reset();
            }
        }
        std::set<std::string> published_in;
        for (size_t k = 0; k < n; ++k) {
            if (!staged[k]) continue;
            out[k] = guarded([&] { return publish_put(*staged[k]); });
            if (out[k].result == KVBLOB_ROW_READY) published_in.insert(staged[k]->paths.dir());
            staged[k].reset();
        }
        if (settings_.sync == Sync::full) {
            for (const auto &dir : published_in) {
                UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
                // Published but maybe not durable: the objects are complete,
                // so their rows are READY; the failure goes to the log.
                if (!fd || ::fsync(fd.get()) != 0) log(KVBLOB_LOG_WARN, errno_text("fsync", dir, errno));
            }
        }
        for (size_t k = 0; k < n; ++k)
            if (started[k]) set_row(op, first + k, out[k].result, out[k].code, std::move(out[k].message));
    }
    end_access(op);
    finish(op);  // the last touch: op may be released from here on
}

FileDriver::Outcome FileDriver::stage_put(const support::Row &row, std::optional<StagedPut> &staged)
{
    if (pool_full()) return {KVBLOB_ROW_DECLINED, 0, "the pool is full (staged)"};
    const ObjectPaths p = paths(row.key);
    struct stat st {};
    if (::stat(p.object.c_str(), &st) == 0) return {KVBLOB_ROW_READY, 0, "already stored; left as it was"};

    // The quota: bytes are counted before writing and given back unless an
    // object of this driver's own is published.
    const uint64_t bytes = row.total + trailer_size;
    QuotaHold quota;
    if (settings_.capacity) {
        if (used_.fetch_add(bytes) + bytes > settings_.capacity) {
            used_.fetch_sub(bytes);
            return {KVBLOB_ROW_DECLINED, 0,
                    "the quota of " + std::to_string(settings_.capacity) + " bytes under " + settings_.root +
                        " would be exceeded"};
        }
        quota = QuotaHold(used_, bytes);
    }

    Reservation::Outcome claimed;
    std::string error;
    Reservation reservation = Reservation::claim(settings_.root, p, settings_.direct,
                                                 settings_.reservation_expiry, claimed, error);
    switch (claimed) {
    case Reservation::Outcome::owned: break;
    case Reservation::Outcome::held_by_other:
        return {KVBLOB_ROW_NOT_READY, 0, "another writer holds this key (" + p.reservation() + ")"};
    case Reservation::Outcome::no_space: return {KVBLOB_ROW_DECLINED, ENOSPC, error};
    case Reservation::Outcome::failed: return {KVBLOB_ROW_FAULT, 0, error};
    }
    // Another writer that published between the first look and the claim
    // is found by the link, which refuses to replace (publish_put): no
    // second look on every put.

    if (const int err = write_object(row, p.digest, reservation))
        return {is_no_space(err) ? KVBLOB_ROW_DECLINED : KVBLOB_ROW_FAULT, err,
                errno_text("write", reservation.path(), err)};
    staged.emplace(StagedPut{p, std::move(reservation), bytes, std::move(quota)});
    return {KVBLOB_ROW_PENDING, 0, {}};
}

int FileDriver::make_durable(StagedPut &put)
{
    const int fd = put.reservation.fd();
    if (settings_.sync == Sync::data && ::fdatasync(fd) != 0) return errno;
    if (settings_.sync == Sync::full && ::fsync(fd) != 0) return errno;
    return settings_.close_reports ? put.reservation.flush() : 0;
}

FileDriver::Outcome FileDriver::not_durable(const StagedPut &put, int err)
{
    return {is_no_space(err) ? KVBLOB_ROW_DECLINED : KVBLOB_ROW_FAULT, err,
            errno_text("fsync", put.reservation.path(), err)};
}

FileDriver::Outcome FileDriver::publish_put(StagedPut &put)
{
    const ObjectPaths &p = put.paths;
    Reservation &reservation = put.reservation;
    // Published by its descriptor, whole, and only while the claim is this
    // writer's (reservation.hpp); a link never replaces an object published
    // first (R-ROW-7). The claim's name goes with the Reservation.
    int err = 0;
    switch (reservation.publish(p.object, put.bytes, err)) {
    case Reservation::Publish::published: break;
    case Reservation::Publish::exists: return {KVBLOB_ROW_READY, 0, "already stored; left as it was"};
    case Reservation::Publish::lost:
        return {KVBLOB_ROW_NOT_READY, 0,
                "this writer's claim outlived reservation_expiry_ms and was broken by another writer; nothing "
                "published (" + p.reservation() + ")"};
    case Reservation::Publish::not_whole:
        return {KVBLOB_ROW_FAULT, EIO, "the written file does not hold the whole object; nothing published (" +
                                           reservation.path() + ")"};
    case Reservation::Publish::failed:
        return {is_no_space(err) ? KVBLOB_ROW_DECLINED : KVBLOB_ROW_FAULT, err, errno_text("link", p.object, err)};
    }
    put.quota.keep();  // published: the bytes stay counted
    return {KVBLOB_ROW_READY, 0, {}};
}

int FileDriver::write_object(const support::Row &row, const support::KeyDigest &digest, Reservation &reservation)
{
    const uint64_t bytes = row.total + trailer_size;
    const int fd = reservation.fd();
    int err = 0;
    if (settings_.direct || has_device_span(row)) {
        // O_DIRECT wants aligned memory and lengths, and device memory must
        // be staged: one fused copy and checksum pass into the staging
        // buffer, then an aligned write trimmed to the object's size.
        const uint64_t padded = round_up(bytes, direct_alignment);
        uint8_t *buf = bounce.ensure(padded);
        if (!buf) return ENOMEM;
        uint8_t *dst = buf;
        uint32_t crc = 0;
        for (const auto &s : row.spans) {
            std::string device_error;
            if (!support::copy_from_span(crc, dst, s, device_error)) {
                log(KVBLOB_LOG_ERROR, "reading a row's device memory: " + device_error);
                return EIO;
            }
            dst += s.length;
        }
        support::write_trailer(dst, support::trailer_v1, row.key, row.total, crc, &digest);
        std::memset(dst + trailer_size, 0, padded - bytes);
        iovec whole{buf, padded};
        err = pwritev_all(fd, {&whole, 1}, 0);
        if (!err && ::ftruncate(fd, static_cast<off_t>(bytes)) != 0) err = errno;
    } else {
        uint32_t crc = 0;
        for (const auto &s : row.spans) crc = support::crc32c(crc, s.data, s.length);
        uint8_t trailer[trailer_size];
        support::write_trailer(trailer, support::trailer_v1, row.key, row.total, crc, &digest);
        IovecList iov = iovecs_of(row, trailer);
        err = pwritev_all(fd, iov.span(), 0);
    }
    return err;
}

FileDriver::Outcome FileDriver::get(const support::Row &row)
{
    const ObjectPaths p = paths(row.key);
    UniqueFd fd(open_maybe_direct(p.object, O_RDONLY, settings_.direct));
    if (!fd) {
        if (errno == ENOENT) return absent(p);
        return {KVBLOB_ROW_FAULT, errno, errno_text("open", p.object, errno)};
    }
    if (!settings_.direct && row.total < staged_get_max) {
        if (auto out = get_staged(fd.get(), row, p)) return *out;
        // Another size, or not whole: the sized reading below says which.
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return {KVBLOB_ROW_FAULT, errno, errno_text("stat", p.object, errno)};
    const uint64_t size = static_cast<uint64_t>(st.st_size);
    uint8_t trailer[trailer_size];
    uint64_t payload = 0;
    uint32_t recorded = 0;

    if (size != row.total + trailer_size) {
        // R-ROW-5: refused before writing a byte; the trailer says whether
        // the object is whole and merely of another size.
        if (size < trailer_size) return trailer_fault_of(support::TrailerFault::too_short, p);
        iovec at_end{trailer, trailer_size};
        if (const int err = preadv_all(fd.get(), {&at_end, 1}, size - trailer_size))
            return {KVBLOB_ROW_FAULT, err, errno_text("read", p.object, err > 0 ? err : EIO)};
        auto f = support::check_trailer_bytes(trailer, size, row.key, payload, recorded, &p.digest);
        if (f != support::TrailerFault::none) return trailer_fault_of(f, p);
        return {KVBLOB_ROW_FAULT, 100,
                "stored object is " + std::to_string(payload) + " bytes; the row's spans hold " +
                    std::to_string(row.total)};
    }

    uint32_t crc = 0;
    if (settings_.direct || has_device_span(row)) {
        const uint64_t padded = round_up(size, direct_alignment);
        uint8_t *buf = bounce.ensure(padded);
        if (!buf) return {KVBLOB_ROW_FAULT, ENOMEM, "no memory for the direct I/O staging buffer"};
        const int64_t got = read_until_end(fd.get(), buf, padded);
        if (got < 0) return {KVBLOB_ROW_FAULT, static_cast<int32_t>(-got), errno_text("read", p.object, -got)};
        if (static_cast<uint64_t>(got) != size) return {KVBLOB_ROW_FAULT, EIO, "short read of " + p.object};
        auto f = support::check_trailer_bytes(buf + row.total, size, row.key, payload, recorded, &p.digest);
        if (f != support::TrailerFault::none) return trailer_fault_of(f, p);
        if (auto fault = copy_out(row, buf, crc)) return *fault;
    } else {
        // Straight into the caller's spans, the trailer beside them.
        IovecList iov = iovecs_of(row, trailer);
        if (const int err = preadv_all(fd.get(), iov.span(), 0)) {
            if (err < 0) return {KVBLOB_ROW_FAULT, EIO, "the object ended early: " + p.object};
            return {KVBLOB_ROW_FAULT, err, errno_text("read", p.object, err)};
        }
        auto f = support::check_trailer_bytes(trailer, size, row.key, payload, recorded, &p.digest);
        if (f != support::TrailerFault::none) return trailer_fault_of(f, p);
        for (const auto &s : row.spans) crc = support::crc32c(crc, s.data, s.length);
    }
    // R-ROW-6: bytes that fail their checksum are never READY.
    if (crc != recorded) return trailer_fault_of(support::TrailerFault::bad_checksum, p);
    return {KVBLOB_ROW_READY, 0, {}};
}

FileDriver::Outcome FileDriver::probe(const support::Row &row)
{
    const ObjectPaths p = paths(row.key);
    struct stat st {};
    if (::stat(p.object.c_str(), &st) == 0) {
        if (S_ISREG(st.st_mode)) return {KVBLOB_ROW_READY, 0, {}};
        return {KVBLOB_ROW_FAULT, 0, p.object + " is not a regular file"};
    }
    if (errno == ENOENT) return absent(p);
    return {KVBLOB_ROW_FAULT, errno, errno_text("stat", p.object, errno)};
}

FileDriver::Outcome FileDriver::remove(const support::Row &row)
{
    const ObjectPaths p = paths(row.key);
    // The size is looked up only when a quota counts it.
    struct stat st {};
    const bool seen = settings_.capacity && ::stat(p.object.c_str(), &st) == 0;
    if (::unlink(p.object.c_str()) == 0) {
        if (seen) {
            // Never below zero: another process may have counted it.
            uint64_t used = used_.load();
            const uint64_t n = static_cast<uint64_t>(st.st_size);
            while (!used_.compare_exchange_weak(used, used > n ? used - n : 0)) {}
        }
        return {KVBLOB_ROW_READY, 0, {}};
    }
    if (errno == ENOENT) return absent(p);
    return {KVBLOB_ROW_FAULT, errno, errno_text("unlink", p.object, errno)};
}

// ---- scenario hooks -------------------------------------------------------------

kvblob_status FileDriver::stage_foreign_writer(const std::string &key)
{
    const ObjectPaths p = paths(key);
    if (!Reservation::plant(settings_.root, p))
        return KVBLOB_E_INVALID;
    std::lock_guard lock(hooks_mu_);
    planted_reservations_.push_back(p.reservation());
    return KVBLOB_OK;
}

kvblob_status FileDriver::stage_failing_read(const std::string &key)
{
    // A directory where the object was: open succeeds and every read fails
    // with EISDIR, a real error from the filesystem.
    const ObjectPaths p = paths(key);
    if (make_dirs(settings_.root, p.dir()) != 0) return KVBLOB_E_INVALID;
    const std::string aside = p.object + ".aside";
    if (::rename(p.object.c_str(), aside.c_str()) != 0 && errno != ENOENT) return KVBLOB_E_INVALID;
    if (::mkdir(p.object.c_str(), 0755) != 0) return KVBLOB_E_INVALID;
    std::lock_guard lock(hooks_mu_);
    blocked_objects_.push_back(p.object);
    return KVBLOB_OK;
}

kvblob_status FileDriver::stage_corrupt(const std::string &key)
{
    const ObjectPaths p = paths(key);
    UniqueFd fd(::open(p.object.c_str(), O_RDWR | O_CLOEXEC));
    uint8_t byte = 0;
    if (!fd || ::pread(fd.get(), &byte, 1, 0) != 1) return KVBLOB_E_INVALID;
    byte ^= 0x5a;
    return ::pwrite(fd.get(), &byte, 1, 0) == 1 ? KVBLOB_OK : KVBLOB_E_INTERNAL;
}

kvblob_status FileDriver::release_staged()
{
    std::vector<std::string> planted, blocked;
    {
        std::lock_guard lock(hooks_mu_);
        planted.swap(planted_reservations_);
        blocked.swap(blocked_objects_);
    }
    release_full_pool();
    for (const auto &path : planted) ::unlink(path.c_str());
    for (const auto &object : blocked) {
        ::rmdir(object.c_str());
        ::rename((object + ".aside").c_str(), object.c_str());
    }
    release_held_gets();
    return KVBLOB_OK;
}

}  // namespace kvblob::file
