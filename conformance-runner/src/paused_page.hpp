// A page of caller memory that stops the first thread that reads it until the
// check lets it go (userfaultfd), so a check can hold a driver's call at a
// known point inside it, say at row k of the batch it is admitting, and act
// while that call is provably still running: no race window, no sleep.
//
// Where the runner has no privilege for more, only reads from user mode are
// held (UFFD_USER_MODE_ONLY); a system call handed the page then fails with
// EFAULT instead of waiting.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace kvblob::conformance {

class PausedPage {
public:
    PausedPage();
    ~PausedPage();  // lets any held thread go (with zeros) before unmapping
    PausedPage(const PausedPage &) = delete;
    PausedPage &operator=(const PausedPage &) = delete;

    // False where this machine offers no userfaultfd; why() says what failed.
    bool ready() const { return fd_ >= 0; }
    const std::string &why() const { return why_; }
    // The page's first byte. Plain memory until arm().
    unsigned char *data() const { return page_; }
    static size_t size();
    // From here on the page holds no bytes, and the first thread that reads
    // it waits there until release(). Arm after handing the page to a driver
    // (registering it as a region), which may touch it then. False (and
    // why()) when the kernel refuses.
    bool arm();

    // Waits until a thread touches the page (and is now held there), up to
    // timeout: false when none did.
    bool wait_for_touch(std::chrono::milliseconds timeout) const;
    // Fills the page's start with bytes (the rest zero) and lets every held
    // thread go on. Once released, the page is plain memory.
    void release(const void *bytes, size_t n);

private:
    int fd_ = -1;
    unsigned char *page_ = nullptr;
    bool armed_ = false;
    bool released_ = false;
    std::string why_;
};

}  // namespace kvblob::conformance
