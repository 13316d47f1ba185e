#include "reservation.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

namespace kvblob::file {

namespace {

using Clock = std::chrono::system_clock;

std::chrono::milliseconds age_of(const struct stat &st)
{
    const auto mtime = Clock::time_point(std::chrono::seconds(st.st_mtim.tv_sec) +
                                         std::chrono::nanoseconds(st.st_mtim.tv_nsec));
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - mtime);
}

FileId id_of(const struct stat &st) { return {st.st_dev, st.st_ino}; }

// A claim its writer gave up without publishing carries this mtime, the
// epoch: stale for every expiry, and recognisable by a breaker that put the
// file back after its writer could not find it (remove_if_same).
bool abandoned(const struct stat &st) { return st.st_mtim.tv_sec == 0 && st.st_mtim.tv_nsec == 0; }

// Removes the file at path only if it is the file id: renamed aside to a
// name no one else uses first, so the look and the removal concern one
// file whatever lands at path meanwhile. A different file found aside (a
// claim made after id was judged) is put back with link(), which never
// replaces; should a still newer claim hold the name by then, the displaced
// one is removed after all, and its writer, finding its file without a
// name, publishes nothing. The caller holds id's file open, so its inode is
// not reused.
//
// While a claim stands aside its writer cannot find it by name: a writer
// that publishes or gives up in that moment leaves the name to whoever put
// the file back. So after putting it back, a file that was published
// meanwhile (a second name) or abandoned (its mark) is removed here.
bool remove_if_same(const std::string &path, FileId id)
{
    static std::atomic<uint64_t> sequence{0};
    const std::string aside = path + ".stale." + std::to_string(::getpid()) + "." +
                              std::to_string(sequence.fetch_add(1));
    struct stat st {};
    // Most often another file stands there by now (a breaker before us
    // made a new claim): left alone. The rename below settles the rest.
    if (::lstat(path.c_str(), &st) != 0 || !(id_of(st) == id)) return false;
    if (::rename(path.c_str(), aside.c_str()) != 0) return false;  // gone already
    // Held open from here, so what is looked at after the put-back is the
    // same file, and its inode is not reused meanwhile.
    UniqueFd found(::open(aside.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    const bool looked = found ? ::fstat(found.get(), &st) == 0 : ::lstat(aside.c_str(), &st) == 0;
    const bool same = looked && id_of(st) == id;
    // Put back unless its writer published it meanwhile (a second link):
    // that claim's name would outlive its writer.
    const bool put_back = looked && !same && st.st_nlink == 1 && ::link(aside.c_str(), path.c_str()) == 0;
    ::unlink(aside.c_str());
    if (put_back && found && ::fstat(found.get(), &st) == 0 && (st.st_nlink > 1 || abandoned(st)))
        remove_if_same(path, id_of(st));
    return same;
}

const std::string &writer_identity()
{
    static const std::string identity = [] {
        char host[256] = {};
        ::gethostname(host, sizeof host - 1);
        return std::string("host=") + host + " pid=" + std::to_string(::getpid());
    }();
    return identity;
}

// Creates the claim file (and the fan-out directories it needs).
UniqueFd create_exclusive(const std::string &root, const ObjectPaths &paths, const std::string &name, bool direct,
                          int &err)
{
    for (int attempt = 0; attempt < 2; ++attempt) {
        UniqueFd fd(open_maybe_direct(name, O_WRONLY | O_CREAT | O_EXCL, direct, 0644));
        if (fd) {
            const auto &who = writer_identity();
            ::fsetxattr(fd.get(), "user.kvblob.writer", who.data(), who.size(), 0);  // best effort
            err = 0;
            return fd;
        }
        err = errno;
        if (err != ENOENT) return {};
        if ((err = make_dirs(root, paths.dir())) != 0) return {};
    }
    err = ENOENT;
    return {};
}

}  // namespace

bool reservation_active(const std::string &path, std::chrono::milliseconds expiry)
{
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && age_of(st) < expiry;
}

Reservation Reservation::claim(const std::string &root, const ObjectPaths &paths, bool direct,
                               std::chrono::milliseconds expiry, Outcome &outcome, std::string &error)
{
    const std::string name = paths.reservation();
    // A claim that goes between our look and our creation is looked at
    // again; three tries, then the key counts as held.
    for (int attempt = 0; attempt < 3; ++attempt) {
        int err = 0;
        UniqueFd fd = create_exclusive(root, paths, name, direct, err);
        if (fd) {
            outcome = Outcome::owned;
            return Reservation(name, std::move(fd));
        }
        if (err != EEXIST) {
            outcome = is_no_space(err) ? Outcome::no_space : Outcome::failed;
            error = errno_text("reserve", name, err);
            return {};
        }
        // Judge the claim there by what the open file says, and break that
        // file only: held open, its identity stays its own.
        struct stat st {};
        UniqueFd held(::open(name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
        if (!held && errno == ENOENT) continue;  // released meanwhile
        if (!held || ::fstat(held.get(), &st) != 0) {
            outcome = Outcome::failed;
            error = errno_text("look at the claim", name, errno);
            return {};
        }
        if (age_of(st) < expiry) {
            outcome = Outcome::held_by_other;
            return {};
        }
        remove_if_same(name, id_of(st));
    }
    outcome = Outcome::held_by_other;
    return {};
}

bool Reservation::plant(const std::string &root, const ObjectPaths &paths)
{
    int err = 0;
    return static_cast<bool>(create_exclusive(root, paths, paths.reservation(), false, err));
}

int Reservation::flush()
{
    const int copy = ::dup(fd_.get());
    if (copy < 0) return errno;
    return ::close(copy) == 0 ? 0 : errno;
}

Reservation::Publish Reservation::publish(const std::string &object, uint64_t bytes, int &err)
{
    struct stat st {};
    if (::fstat(fd_.get(), &st) != 0) {
        err = errno;
        return Publish::failed;
    }
    if (static_cast<uint64_t>(st.st_size) != bytes) return Publish::not_whole;
    // Still ours? Our file without a name, or another file under the
    // claim's name, means the claim was broken as stale: another writer's
    // turn. No file there may be a breaker's look at it (remove_if_same):
    // our whole file is still fine to publish.
    struct stat now {};
    if (st.st_nlink == 0 || (::lstat(path_.c_str(), &now) == 0 && !(id_of(now) == id_of(st)))) return Publish::lost;
    // The file behind our descriptor, not whatever the claim's name holds
    // by now. A file whose last name was removed cannot be linked (ENOENT):
    // the claim was broken after the look above.
    err = link_open_file(fd_.get(), object);
    if (err == 0) {
        // The claim's name goes, on the look above: it named our file then.
        // Should a breaker have removed it since and another writer claimed
        // the key, that claim goes instead, and its writer finds its file
        // without a name (NOT_READY) or the object (READY): no harm, and no
        // second look on every put (a look would narrow that moment, not
        // close it).
        ::unlink(path_.c_str());
        path_.clear();
        return Publish::published;
    }
    if (err == EEXIST) return Publish::exists;
    if (err == ENOENT) return Publish::lost;
    return Publish::failed;
}

Reservation::~Reservation()
{
    // Our claim only, not published, while the file is still open (its
    // inode not reused). A file fstat cannot look at (never seen) is not
    // told apart from another writer's: its claim is left to expire.
    struct stat st {};
    if (!path_.empty() && ::fstat(fd_.get(), &st) == 0 && st.st_nlink > 0) {
        // Still named (else a breaker removed it, and the name may be
        // another writer's claim now). Marked first: should the claim stand
        // aside in a breaker's hands now, that breaker finds the mark once
        // it puts it back.
        const timespec epoch[2] = {{0, 0}, {0, 0}};
        ::futimens(fd_.get(), epoch);
        remove_if_same(path_, id_of(st));
    }
    fd_.reset();
}

}  // namespace kvblob::file
