#include "posix_io.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/vfs.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>

namespace kvblob::file {

bool close_may_report_on(long filesystem_type)
{
    switch (filesystem_type) {
    case EXT4_SUPER_MAGIC:  // also ext2 and ext3
    case XFS_SUPER_MAGIC:
    case TMPFS_MAGIC: return false;
    default: return true;
    }
}

bool close_may_report(const std::string &path)
{
    struct statfs fs {};
    return ::statfs(path.c_str(), &fs) != 0 || close_may_report_on(static_cast<long>(fs.f_type));
}

int link_open_file(int fd, const std::string &to, LinkBy by)
{
    if (by == LinkBy::descriptor) return ::linkat(fd, "", AT_FDCWD, to.c_str(), AT_EMPTY_PATH) == 0 ? 0 : errno;
    char self[64];
    std::snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
    return ::linkat(AT_FDCWD, self, AT_FDCWD, to.c_str(), AT_SYMLINK_FOLLOW) == 0 ? 0 : errno;
}

int link_open_file(int fd, const std::string &to)
{
    static std::atomic<bool> descriptor_refused{false};
    if (!descriptor_refused.load(std::memory_order_relaxed)) {
        const int err = link_open_file(fd, to, LinkBy::descriptor);
        // Refused (ENOENT without the capability; EPERM, EACCES, ENOSYS or
        // EINVAL from a kernel, filter or security module that does not take
        // it), or a failure /proc meets too (no name left, no space): /proc
        // tells which. Only a name already there is an answer by itself.
        if (err == 0 || err == EEXIST) return err;
        const int again = link_open_file(fd, to, LinkBy::proc_path);
        if (again == 0) descriptor_refused.store(true, std::memory_order_relaxed);
        return again;
    }
    return link_open_file(fd, to, LinkBy::proc_path);
}

namespace {

// Drops n bytes from the front of iov (after a partial transfer).
void advance(std::span<iovec> iov, size_t &first, size_t n)
{
    while (n > 0 && first < iov.size()) {
        if (n >= iov[first].iov_len) {
            n -= iov[first].iov_len;
            ++first;
        } else {
            iov[first].iov_base = static_cast<uint8_t *>(iov[first].iov_base) + n;
            iov[first].iov_len -= n;
            n = 0;
        }
    }
    while (first < iov.size() && iov[first].iov_len == 0) ++first;
}

template <class Call>
int transfer_all(std::span<iovec> iov, uint64_t offset, bool reading, Call call)
{
    size_t first = 0;
    advance(iov, first, 0);
    while (first < iov.size()) {
        const int count = static_cast<int>(std::min<size_t>(iov.size() - first, IOV_MAX));
        ssize_t n = call(iov.data() + first, count, static_cast<off_t>(offset));
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        if (n == 0) return reading ? -1 : EIO;
        offset += static_cast<uint64_t>(n);
        advance(iov, first, static_cast<size_t>(n));
    }
    return 0;
}

}  // namespace

int open_maybe_direct(const std::string &path, int flags, bool direct, mode_t mode)
{
    if (direct) {
        int fd = ::open(path.c_str(), flags | O_DIRECT | O_CLOEXEC, mode);
        if (fd >= 0 || errno != EINVAL) return fd;
    }
    return ::open(path.c_str(), flags | O_CLOEXEC, mode);
}

int pwritev_all(int fd, std::span<iovec> iov, uint64_t offset)
{
    return transfer_all(iov, offset, false,
                        [fd](const iovec *v, int n, off_t off) { return ::pwritev(fd, v, n, off); });
}

int preadv_all(int fd, std::span<iovec> iov, uint64_t offset)
{
    return transfer_all(iov, offset, true, [fd](const iovec *v, int n, off_t off) { return ::preadv(fd, v, n, off); });
}

}  // namespace kvblob::file
