#include "paused_page.hpp"

#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace kvblob::conformance {

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

size_t PausedPage::size() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

PausedPage::PausedPage()
{
    auto fail = [&](const char *what) {
        why_ = std::string(what) + ": " + std::strerror(errno);
        if (fd_ >= 0) close(fd_);
        fd_ = -1;
    };
    // Every fault where the kernel allows it (root, or vm.unprivileged_userfaultfd=1), so a
    // driver that hands the page to a system call (pwrite) is held too; else user-mode faults
    // only, which need no privilege.
    fd_ = static_cast<int>(syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK));
    if (fd_ < 0) fd_ = static_cast<int>(syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY));
    if (fd_ < 0) {
        fail("userfaultfd");
        return;
    }
    uffdio_api api{};
    api.api = UFFD_API;
    if (ioctl(fd_, UFFDIO_API, &api) != 0) {
        fail("UFFDIO_API");
        return;
    }
    void *p = mmap(nullptr, size(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        fail("mmap");
        return;
    }
    page_ = static_cast<unsigned char *>(p);
}

bool PausedPage::arm()
{
    if (fd_ < 0 || armed_) return armed_;
    // Drops whatever the page held, so the next read is a missing-page fault.
    if (madvise(page_, size(), MADV_DONTNEED) != 0) {
        why_ = std::string("madvise: ") + std::strerror(errno);
        return false;
    }
    uffdio_register reg{};
    reg.range.start = reinterpret_cast<uintptr_t>(page_);
    reg.range.len = size();
    reg.mode = UFFDIO_REGISTER_MODE_MISSING;
    if (ioctl(fd_, UFFDIO_REGISTER, &reg) != 0) {
        why_ = std::string("UFFDIO_REGISTER: ") + std::strerror(errno);
        return false;
    }
    armed_ = true;
    return true;
}

PausedPage::~PausedPage()
{
    if (armed_ && !released_) release(nullptr, 0);
    if (page_) munmap(page_, size());
    if (fd_ >= 0) close(fd_);
}

bool PausedPage::wait_for_touch(std::chrono::milliseconds timeout) const
{
    if (!armed_) return false;
    const auto end = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
        pollfd pfd{fd_, POLLIN, 0};
        const int n = poll(&pfd, 1, static_cast<int>(std::max<int64_t>(0, left.count())));
        if (n > 0) {
            uffd_msg msg{};
            if (read(fd_, &msg, sizeof msg) == sizeof msg && msg.event == UFFD_EVENT_PAGEFAULT) return true;
        } else if (n == 0 || (n < 0 && errno != EINTR)) {
            return false;
        }
    }
}

void PausedPage::release(const void *bytes, size_t n)
{
    if (!armed_ || released_) return;
    std::vector<unsigned char> content(size(), 0);
    if (bytes) std::memcpy(content.data(), bytes, std::min(n, size()));
    uffdio_copy copy{};
    copy.dst = reinterpret_cast<uintptr_t>(page_);
    copy.src = reinterpret_cast<uintptr_t>(content.data());
    copy.len = size();
    // Fills the page and wakes every thread held on it.
    ioctl(fd_, UFFDIO_COPY, &copy);
    released_ = true;
}

}  // namespace kvblob::conformance
