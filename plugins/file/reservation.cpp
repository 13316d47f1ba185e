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

// Breaks a stale claim: renames it aside first, so that of two processes
// breaking it at once only one succeeds, then removes it.
void break_stale(const ObjectPaths &paths)
{
    static std::atomic<uint64_t> sequence{0};
    const std::string aside = paths.reservation + ".stale." + std::to_string(::getpid()) + "." +
                              std::to_string(sequence.fetch_add(1));
    if (::rename(paths.reservation.c_str(), aside.c_str()) == 0) ::unlink(aside.c_str());
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
UniqueFd create_exclusive(const std::string &root, const ObjectPaths &paths, bool direct, int &err)
{
    for (int attempt = 0; attempt < 2; ++attempt) {
        UniqueFd fd(open_maybe_direct(paths.reservation, O_WRONLY | O_CREAT | O_EXCL, direct, 0644));
        if (fd) {
            const auto &who = writer_identity();
            ::fsetxattr(fd.get(), "user.kvblob.writer", who.data(), who.size(), 0);  // best effort
            err = 0;
            return fd;
        }
        err = errno;
        if (err != ENOENT) return {};
        if ((err = make_dirs(root, paths.dir)) != 0) return {};
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
    for (int attempt = 0; attempt < 2; ++attempt) {
        int err = 0;
        UniqueFd fd = create_exclusive(root, paths, direct, err);
        if (fd) {
            outcome = Outcome::owned;
            return Reservation(paths.reservation, std::move(fd));
        }
        if (err == EEXIST) {
            struct stat st {};
            if (::stat(paths.reservation.c_str(), &st) != 0 || age_of(st) >= expiry) {
                break_stale(paths);
                continue;
            }
            outcome = Outcome::held_by_other;
            return {};
        }
        outcome = is_no_space(err) ? Outcome::no_space : Outcome::failed;
        error = errno_text("reserve", paths.reservation, err);
        return {};
    }
    outcome = Outcome::held_by_other;
    return {};
}

bool Reservation::plant(const std::string &root, const ObjectPaths &paths)
{
    int err = 0;
    return static_cast<bool>(create_exclusive(root, paths, false, err));
}

int Reservation::close()
{
    return ::close(fd_.release()) == 0 ? 0 : errno;
}

Reservation::~Reservation()
{
    fd_.reset();
    if (!path_.empty()) ::unlink(path_.c_str());
}

}  // namespace kvblob::file
