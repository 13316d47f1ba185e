#include "posix_io.hpp"

#include <fcntl.h>

#include <climits>

namespace kvblob::file {

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
