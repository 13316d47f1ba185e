// Thin RAII and loop-until-done wrappers over the POSIX calls the file
// driver makes. Every failure keeps its errno so the driver can tell a full
// filesystem (DECLINED) from any other failure (FAULT).
#pragma once

#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

namespace kvblob::file {

class UniqueFd {
public:
    UniqueFd() = default;
    explicit UniqueFd(int fd) : fd_(fd) {}
    ~UniqueFd() { reset(); }
    UniqueFd(UniqueFd &&o) noexcept : fd_(o.release()) {}
    UniqueFd &operator=(UniqueFd &&o) noexcept
    {
        if (this != &o) {
            reset();
            fd_ = o.release();
        }
        return *this;
    }
    int get() const { return fd_; }
    explicit operator bool() const { return fd_ >= 0; }
    int release()
    {
        int fd = fd_;
        fd_ = -1;
        return fd;
    }
    void reset()
    {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }

private:
    int fd_ = -1;
};

// "what path: strerror(errno)", the message of a FAULT row.
inline std::string errno_text(const char *what, const std::string &path, int err)
{
    return std::string(what) + " " + path + ": " + std::strerror(err);
}

// Whether err means the filesystem or the quota is full (R-ROW-2 DECLINED).
inline bool is_no_space(int err) { return err == ENOSPC || err == EDQUOT; }

// Whether close() may report, on the filesystem path lies on, an error the
// writes did not: NFS, SMB, FUSE and other shared filesystems write back at
// close and report there. The local ones named in posix_io.cpp (ext2-4,
// XFS, tmpfs) have no close-time step at all (no flush in their file
// operations): a close there releases the file and says nothing. Any other
// filesystem, or one statfs cannot name, is taken to report.
bool close_may_report(const std::string &path);
bool close_may_report_on(long filesystem_type);

// Gives the file open as fd the name to, never replacing a file there: 0
// or an errno (EEXIST: to exists; ENOENT: the file has no name left to
// link from, or the way was refused). By descriptor (linkat AT_EMPTY_PATH)
// where the kernel lets this process (before Linux 6.10 only with
// CAP_DAC_READ_SEARCH), else through /proc/self/fd/N, which needs neither
// but walks /proc: 1.5-2 us more a link on the machine of
// docs/notes/2026-12-04-performance-experiments.md's "File driver" figures. The first way is tried until
// it is seen refused where the second is not; any failure of it but EEXIST
// is tried again the second way.
enum class LinkBy { descriptor, proc_path };
int link_open_file(int fd, const std::string &to, LinkBy by);
int link_open_file(int fd, const std::string &to);

// Opens path (O_CLOEXEC added), with O_DIRECT when direct and the
// filesystem allows it (tmpfs, for one, refuses it with EINVAL), buffered
// otherwise; a descriptor or -1 with errno set.
int open_maybe_direct(const std::string &path, int flags, bool direct, mode_t mode = 0);

// Writes every byte of iov at offset; 0 or an errno. iov is used up (its
// entries advance past what was written).
int pwritev_all(int fd, std::span<iovec> iov, uint64_t offset);
// Reads exactly the bytes of iov from offset; 0, an errno, or -1 when the
// file ended first. iov is used up.
int preadv_all(int fd, std::span<iovec> iov, uint64_t offset);

// Some iovecs, held inline up to a row of seven spans and its trailer (a
// row's read or write allocates nothing), in a vector beyond.
class IovecList {
public:
    void push_back(const iovec &v)
    {
        if (size_ < inline_capacity) {
            inline_[size_++] = v;
            return;
        }
        if (more_.empty()) more_.assign(inline_, inline_ + size_);
        more_.push_back(v);
        ++size_;
    }
    std::span<iovec> span() { return size_ <= inline_capacity ? std::span(inline_, size_) : std::span(more_); }

private:
    static constexpr size_t inline_capacity = 8;
    iovec inline_[inline_capacity];
    std::vector<iovec> more_;
    size_t size_ = 0;
};

}  // namespace kvblob::file
