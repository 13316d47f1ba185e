#include "reservation.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <fstream>
#include <sstream>

#include "posix_io.hpp"

namespace kvblob::file {

namespace {

using Clock = std::chrono::system_clock;

std::chrono::milliseconds age_of(const struct stat &st)
{
    const auto mtime = Clock::time_point(std::chrono::seconds(st.st_mtim.tv_sec) +
                                         std::chrono::nanoseconds(st.st_mtim.tv_nsec));
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - mtime);
}

// Breaks a stale reservation: renames it aside first, so that of two
// processes breaking it at once only one succeeds, then removes the
// temporary file it names and itself.
void break_stale(const ObjectPaths &paths)
{
    static std::atomic<uint64_t> sequence{0};
    const std::string aside = paths.reservation + ".stale." + std::to_string(::getpid()) + "." +
                              std::to_string(sequence.fetch_add(1));
    if (::rename(paths.reservation.c_str(), aside.c_str()) != 0) return;
    std::ifstream in(aside);
    std::string line;
    std::getline(in, line);
    const auto at = line.find(" temp=");
    if (at != std::string::npos) {
        const std::string temp = line.substr(at + 6);
        // Only a temporary file of this very key is ever removed.
        if (temp.rfind(paths.temp_prefix, 0) == 0) ::unlink(temp.c_str());
    }
    ::unlink(aside.c_str());
}

int create_exclusive(const std::string &root, const ObjectPaths &paths, const std::string &content)
{
    for (int attempt = 0; attempt < 2; ++attempt) {
        UniqueFd fd(::open(paths.reservation.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
        if (fd) {
            if (::write(fd.get(), content.data(), content.size()) != static_cast<ssize_t>(content.size())) {
                const int err = errno ? errno : EIO;
                ::unlink(paths.reservation.c_str());
                return err;
            }
            return 0;
        }
        if (errno != ENOENT) return errno;
        if (const int err = make_dirs(root, paths.dir)) return err;
    }
    return ENOENT;
}

}  // namespace

const std::string &writer_identity()
{
    static const std::string identity = [] {
        char host[256] = {};
        ::gethostname(host, sizeof host - 1);
        return std::string("host=") + host + " pid=" + std::to_string(::getpid());
    }();
    return identity;
}

bool reservation_active(const std::string &path, std::chrono::milliseconds expiry)
{
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && age_of(st) < expiry;
}

Reservation Reservation::claim(const std::string &root, const ObjectPaths &paths, const std::string &temp_path,
                               std::chrono::milliseconds expiry, Outcome &outcome, std::string &error)
{
    const auto now_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch()).count();
    const std::string content =
        writer_identity() + " time_ms=" + std::to_string(now_ms) + " temp=" + temp_path + "\n";
    for (int attempt = 0; attempt < 2; ++attempt) {
        const int err = create_exclusive(root, paths, content);
        if (err == 0) {
            outcome = Outcome::owned;
            return Reservation(paths.reservation);
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

bool Reservation::plant(const std::string &root, const ObjectPaths &paths, const std::string &who)
{
    return create_exclusive(root, paths, who + "\n") == 0;
}

Reservation::~Reservation()
{
    if (!path_.empty()) ::unlink(path_.c_str());
}

}  // namespace kvblob::file
